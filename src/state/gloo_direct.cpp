#include "state/gloo_direct.hpp"

#include <ATen/ops/empty.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "accel/error.hpp"

#if defined(ACCEL_GLOO_DIRECT)
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace accel::detail {

#if defined(ACCEL_GLOO_DIRECT)

namespace {

// Each rank writes a piece to its peer and only then reads the peer's, so
// both writes must fit in the sockets' buffers without the peer reading: a
// quarter of the largest send buffer the kernel grants (net.core.wmem_max;
// Gloo asks for the message's size), at most 1 MiB, where the exchange of a
// 7.45 MB tensor was fastest (1 MiB: 2.8 ms; 128 KiB: 3.8 ms).
int64_t local_piece_limit() {
  int64_t wmem_max = 212992;  // the kernel's default
  std::ifstream("/proc/sys/net/core/wmem_max") >> wmem_max;
  return std::clamp<int64_t>(wmem_max / 4, 4096, int64_t{1} << 20) / 64 * 64;
}

// Gloo writes with writev(2): on a connection the peer closed (it died) that
// raises SIGPIPE, whose default action would end this process before Gloo's
// error (EPIPE) could be reported. The signal is blocked on this thread for the
// call, and one it raised is taken off the pending set before unblocking.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeBlocked() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{0, 0};
      sigtimedwait(&pipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_;
  sigset_t previous_;
  bool was_pending_ = false;
};

// Gloo's rendezvous over c10d's store (the job's TCPStore, under its own prefix).
class StoreForGloo : public ::gloo::rendezvous::Store {
 public:
  explicit StoreForGloo(c10d_adapter::StorePtr store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<uint8_t> value = store_->get(key);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  c10d_adapter::StorePtr store_;
};

}  // namespace

struct GlooDirect::Impl {
  std::shared_ptr<::gloo::transport::Device> device;
  std::shared_ptr<::gloo::rendezvous::Context> context;
  ::gloo::transport::Pair* pair = nullptr;
  int rank = 0;
  int slot_base = 0;  // rank r receives into the inbox on slot_base + r, in swap() on slot_base + 2 + r
  int64_t piece_bytes = 0;
  at::Tensor inbox;                                    // one piece of the peer's tensor, for send_and_add
  std::unique_ptr<::gloo::transport::Buffer> receive;  // over the inbox
};

bool GlooDirect::available() { return true; }

GlooDirect::GlooDirect(const c10d_adapter::StorePtr& store, int rank, int world_size, const std::string& master_addr,
                       std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  require(world_size == 2, ErrorCode::Internal, "GlooDirect is for two ranks");
  ::gloo::transport::tcp::attr attr;
  const c10d_adapter::GlooListenAddress address = c10d_adapter::gloo_listen_address(master_addr);
  attr.iface = address.interface;
  attr.hostname = address.hostname;
  if (attr.iface.empty() && attr.hostname.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    attr.hostname = host;
  }
  impl_->device = ::gloo::transport::tcp::CreateDevice(attr);
  impl_->rank = rank;
  impl_->context = std::make_shared<::gloo::rendezvous::Context>(rank, world_size);
  impl_->context->setTimeout(timeout);
  StoreForGloo gloo_store(store);
  impl_->context->connectFullMesh(gloo_store, impl_->device);
  const int peer = 1 - rank;
  impl_->pair = impl_->context->getPair(peer).get();
  // Blocking reads, not busy polling: spinning halved the steps/s of `tiny` on
  // a loaded machine (1250 -> 659 steps/s with a build running beside it).
  impl_->pair->setSync(true, /*busyPoll=*/false);
  impl_->slot_base = impl_->context->nextSlot(4);
  // Both ranks must cut tensors into the same pieces: the smaller limit wins.
  const std::string mine = std::to_string(local_piece_limit());
  store->set("piece_bytes/" + std::to_string(rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  const std::vector<uint8_t> theirs = store->get("piece_bytes/" + std::to_string(peer));
  impl_->piece_bytes = std::min(std::stoll(mine), std::stoll(std::string(theirs.begin(), theirs.end())));
  impl_->inbox = at::empty({impl_->piece_bytes}, at::TensorOptions().dtype(at::kByte));
  impl_->receive = impl_->pair->createRecvBuffer(impl_->slot_base + rank, impl_->inbox.data_ptr(),
                                                 static_cast<size_t>(impl_->piece_bytes));
}

GlooDirect::~GlooDirect() = default;

bool GlooDirect::handles(const at::Tensor& tensor) const {
  switch (tensor.scalar_type()) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kByte:
    case at::kChar:
    case at::kInt:
    case at::kLong: break;
    default:  // bfloat16 too: c10d's Gloo refuses it, and both paths must take the same tensors
      return false;
  }
  return tensor.device().is_cpu() && tensor.layout() == at::kStrided && tensor.is_contiguous();
}

namespace {

// Sends `outgoing` to the peer's slot `send_slot` in pieces while the peer's
// tensor of the same size arrives through `receive`; after each piece,
// arrived(element offset, element count) runs. Both ranks cut the same pieces.
template <class Arrived>
void exchange_pieces(const at::Tensor& outgoing, ::gloo::transport::Pair& pair, int send_slot,
                     ::gloo::transport::Buffer& receive, bool into_piece_zero, int64_t piece_bytes, Arrived&& arrived) {
  const int64_t bytes = static_cast<int64_t>(outgoing.nbytes());
  // The send buffer takes the peer's receive slot; destroying it unregisters
  // that slot here, where nothing is registered under it.
  auto send = pair.createSendBuffer(send_slot, outgoing.data_ptr(), static_cast<size_t>(bytes));
  const int64_t element = static_cast<int64_t>(outgoing.element_size());
  const int64_t piece = std::max<int64_t>(piece_bytes / element, 1) * element;
  for (int64_t offset = 0; offset < bytes; offset += piece) {
    const int64_t length = std::min(piece, bytes - offset);
    // Synchronous pairs read only inside waitRecv, so the peer's next piece
    // waits in the socket until this one has been used: one piece of inbox
    // is enough.
    send->send(static_cast<size_t>(offset), static_cast<size_t>(length),
               static_cast<size_t>(into_piece_zero ? 0 : offset));
    receive.waitRecv();
    send->waitSend();  // in synchronous mode the write is done; this only counts it
    arrived(offset / element, length / element);
  }
}

}  // namespace

void GlooDirect::send_and_add(const at::Tensor& outgoing, at::Tensor& sum_into) {
  Impl& d = *impl_;
  require(handles(outgoing) && handles(sum_into) && sum_into.numel() == outgoing.numel() &&
              sum_into.scalar_type() == outgoing.scalar_type(),
          ErrorCode::Internal, "GlooDirect::send_and_add needs two contiguous CPU tensors of one size and dtype");
  const int64_t bytes = static_cast<int64_t>(outgoing.nbytes());
  if (bytes == 0) return;
  SigpipeBlocked sigpipe_blocked;
  at::Tensor sum = sum_into.view({-1});
  at::Tensor incoming = d.inbox.view(outgoing.scalar_type());
  exchange_pieces(outgoing, *d.pair, d.slot_base + (1 - d.rank), *d.receive, /*into_piece_zero=*/true, d.piece_bytes,
                  [&](int64_t offset, int64_t count) {
                    // a + b on one rank, b + a on the other: the same bits.
                    sum.narrow(0, offset, count).add_(incoming.narrow(0, 0, count));
                  });
}

void GlooDirect::swap(const at::Tensor& outgoing, at::Tensor& incoming) {
  Impl& d = *impl_;
  // The peer writes outgoing's byte count into incoming's memory.
  require(handles(outgoing) && handles(incoming) && incoming.nbytes() == outgoing.nbytes(), ErrorCode::Internal,
          "GlooDirect::swap needs two contiguous CPU tensors of one byte size");
  const int64_t bytes = static_cast<int64_t>(outgoing.nbytes());
  if (bytes == 0) return;
  SigpipeBlocked sigpipe_blocked;
  auto receive = d.pair->createRecvBuffer(d.slot_base + 2 + d.rank, incoming.data_ptr(), static_cast<size_t>(bytes));
  exchange_pieces(outgoing, *d.pair, d.slot_base + 2 + (1 - d.rank), *receive, /*into_piece_zero=*/false, d.piece_bytes,
                  [](int64_t, int64_t) {});
}

#else  // built without the system's Gloo: c10d's collectives serve every call

struct GlooDirect::Impl {};

bool GlooDirect::available() { return false; }

GlooDirect::GlooDirect(const c10d_adapter::StorePtr&, int, int, const std::string&, std::chrono::milliseconds) {
  fail(ErrorCode::Internal, "this libaccel was built without the system's Gloo headers (GlooDirect::available())");
}

GlooDirect::~GlooDirect() = default;

bool GlooDirect::handles(const at::Tensor&) const { return false; }

// Unreachable: no GlooDirect can be constructed in this build.
void GlooDirect::send_and_add(const at::Tensor&, at::Tensor&) {
  fail(ErrorCode::Internal, "GlooDirect::send_and_add without the system's Gloo");
}

void GlooDirect::swap(const at::Tensor&, at::Tensor&) {
  fail(ErrorCode::Internal, "GlooDirect::swap without the system's Gloo");
}

#endif

}  // namespace accel::detail
