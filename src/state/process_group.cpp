#include "state/process_group.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "accel/error.hpp"
#include "accel/logging.hpp"
#include "state/launcher_report.hpp"
#include "state/local_address.hpp"

namespace accel::detail {

namespace {

bool looks_like_timeout(const std::string& message) {
  std::string lower(message);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos;
}

// c10::Error::what() carries a C++ backtrace; the first line is the message.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// c10d 1.13's client stops trying to reach the store once less than its
// one-second retry delay is left: at a timeout of 1 s it gave up at once, at
// T s after T - 1. The attempt is repeated with what is left until the
// deadline, so that a rank waits its whole timeout for rank 0's store.
c10d_adapter::StorePtr join_store(const LaunchEnvironment& env, std::chrono::milliseconds timeout,
                                  std::chrono::steady_clock::time_point deadline) {
  using std::chrono::milliseconds;
  for (;;) {
    try {
      return c10d_adapter::make_tcp_store(env.master_addr, env.master_port, env.rank == 0, timeout);
    } catch (const std::exception& e) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (env.rank == 0 || !looks_like_timeout(first_line(e.what())) || left <= left.zero()) throw;
      // A pause between attempts: each failed one logs a line (c10d's).
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, milliseconds(250)));
      timeout = std::max(std::chrono::ceil<milliseconds>(deadline - std::chrono::steady_clock::now()), milliseconds(1));
    }
  }
}

std::string stall_key(int rank) { return "accel/stall/" + std::to_string(rank); }
std::string arrival_key(int rank) { return "accel/arrived/" + std::to_string(rank); }

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  out << "]";
  return out.str();
}

}  // namespace

ProcessGroup::ProcessGroup(const LaunchEnvironment& env, const c10::Device& device, std::chrono::milliseconds timeout)
    : rank_(env.rank), world_size_(env.world_size), master_addr_(env.master_addr), timeout_(timeout), device_(device) {
  // One deadline for joining the store and waiting for the others: the
  // rendezvous fails within `timeout` (plus a poll interval), not after two.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string where = "rendezvous at " + env.master_addr + ":" + std::to_string(env.master_port) +
                            " failed for rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) +
                            " (timeout " + std::to_string(timeout.count()) + " ms)";
  if (const char* direct = std::getenv("ACCEL_GLOO_DIRECT"); direct != nullptr && *direct != '\0') {
    const std::string value = direct;
    require_arg(value == "0" || value == "1", "ACCEL_GLOO_DIRECT: expected 0 or 1, got '" + value + "'");
    direct_on_ = value == "1";
  }
  if (const char* ring = std::getenv("ACCEL_GLOO_RING"); ring != nullptr && *ring != '\0') {
    const std::string value = ring;
    require_arg(value == "0" || value == "1", "ACCEL_GLOO_RING: expected 0 or 1, got '" + value + "'");
    ring_collectives_ = value == "1";
  }
  LauncherReport report;
  if (rank_ == 0) warn_if_store_is_exposed(env);
  const char* phase = "joining the store";
  try {
    store_ = join_store(env, timeout, deadline);
    phase = "waiting for the other ranks";
    std::vector<int> missing = await_ranks(deadline);
    if (!missing.empty()) {
      fail(ErrorCode::Timeout, where + ": ranks that did not arrive: " + rank_list(missing));
    }
    phase = device.is_cuda() ? "creating the NCCL process group" : "creating the Gloo process group";
    backend_ = device.is_cuda() ? c10d_adapter::make_nccl(store_, rank_, world_size_, timeout)
                                : c10d_adapter::make_gloo(store_, rank_, world_size_, env.master_addr, timeout);
    phase = "connecting Gloo's synchronous pairs";
    connect_direct();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string cause = first_line(e.what());
    bool timed_out = looks_like_timeout(cause);
    // A rank that cannot reach the store in time is missing rank 0, which hosts it.
    std::string missing = store_ == nullptr && rank_ != 0
                              ? "; ranks that did not arrive: [0] (it hosts the store: is it running, and does " +
                                    env.master_addr + ":" + std::to_string(env.master_port) + " reach it?)"
                              : "; not every process joined in time";
    fail(timed_out ? ErrorCode::Timeout : ErrorCode::Distributed,
         where + " while " + phase + ": " + cause + (timed_out ? missing : ""));
  }
  report.done();
}

ProcessGroup::ProcessGroup(const ProcessGroup& parent, const std::string& name, const std::vector<int>& ranks)
    : rank_(-1),
      world_size_(static_cast<int>(ranks.size())),
      master_addr_(parent.master_addr_),
      timeout_(parent.timeout_),
      device_(parent.device_),
      ring_collectives_(parent.ring_collectives_),
      direct_on_(parent.direct_on_) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == parent.rank_) rank_ = static_cast<int>(i);
  }
  const std::string where = "creating process group \"" + name + "\" of ranks " + rank_list(ranks) +
                            " failed for rank " + std::to_string(parent.rank_) + " (timeout " +
                            std::to_string(timeout_.count()) + " ms)";
  require(rank_ >= 0 && std::is_sorted(ranks.begin(), ranks.end()), ErrorCode::Internal,
          where + ": this rank is not a member, or the ranks are not ascending");
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  try {
    store_ = c10d_adapter::make_prefix_store(name, parent.store_);
    std::vector<int> missing = await_ranks(deadline);
    for (int& r : missing) r = ranks[static_cast<size_t>(r)];
    if (!missing.empty()) fail(ErrorCode::Timeout, where + ": ranks that did not arrive: " + rank_list(missing));
    backend_ = device_.is_cuda() ? c10d_adapter::make_nccl(store_, rank_, world_size_, timeout_)
                                 : c10d_adapter::make_gloo(store_, rank_, world_size_, master_addr_, timeout_);
    connect_direct();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string cause = first_line(e.what());
    fail(looks_like_timeout(cause) ? ErrorCode::Timeout : ErrorCode::Distributed, where + ": " + cause);
  }
}

// Every rank posts its arrival, then polls for the others' until the deadline.
// Polling with check() rather than store wait(): a wait that times out leaves
// its answer pending on the connection (c10d 1.13), and check() tells which
// keys are missing. Returns the ranks that did not arrive in time.
std::vector<int> ProcessGroup::await_ranks(std::chrono::steady_clock::time_point deadline) {
  const std::string mine = arrival_key(rank_);
  store_->set(mine, std::vector<uint8_t>{1});
  std::vector<std::string> keys;
  for (int r = 0; r < world_size_; ++r) keys.push_back(arrival_key(r));
  for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
    if (store_->check(keys)) return {};
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) break;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(pause, left));
  }
  std::vector<int> missing;  // empty when the last one arrived just now
  for (int r = 0; r < world_size_; ++r) {
    if (!store_->check({keys[r]})) missing.push_back(r);
  }
  return missing;
}

namespace {

// Whether this user was already told this since the machine booted: the warning
// is about the machine, not the run, and repeated on every run it is only noise.
// The mark lives in $XDG_RUNTIME_DIR (else /tmp), named by uid and boot id.
bool told_since_boot() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!std::getline(boot, boot_id) || boot_id.empty()) return false;
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string mark = std::string(runtime != nullptr && *runtime != '\0' ? runtime : "/tmp") +
                           "/accel-exposed-store-" + std::to_string(::getuid()) + "-" + boot_id;
  // O_EXCL: exactly one run creates it, and that one warns.
  const int fd = ::open(mark.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno == EEXIST;
  ::close(fd);
  return false;
}

}  // namespace

// LibTorch 1.13's store listens on every interface whatever MASTER_ADDR says: a
// loopback MASTER_ADDR suggests the user believes the job is private. Said when
// other hosts could reach it (an interface other than loopback is up), once per
// boot.
void ProcessGroup::warn_if_store_is_exposed(const LaunchEnvironment& env) {
  if (c10d_adapter::kStoreListensOnMasterAddrOnly || !c10d_adapter::is_loopback(env.master_addr)) return;
  if (!has_non_loopback_address() || told_since_boot()) return;
  std::string message = "MASTER_ADDR is " + env.master_addr + ", but the rendezvous store (rank 0, port " +
                        std::to_string(env.master_port) + ") listens on every network interface: LibTorch " +
                        std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                        " cannot bind it to one address, and "
                        "the store has no authentication. Other hosts that can reach port " +
                        std::to_string(env.master_port) +
                        " can reach it; block the port or use a trusted network (said once per boot)";
  try {
    Logger("accel").warning(message);
  } catch (const Error&) {  // a malformed ACCELERATE_LOG_LEVEL is reported where logging is asked for
    Logger("accel", LogLevel::Warning).warning(message);
  }
}

void ProcessGroup::connect_direct() {
  if (device_.is_cuda() || world_size_ != 2 || !direct_on_ || !GlooDirect::available()) return;
  direct_ = std::make_unique<GlooDirect>(c10d_adapter::make_prefix_store("accel/gloo_direct", store_), rank_,
                                         world_size_, master_addr_, timeout_);
}

bool ProcessGroup::direct_takes(const at::Tensor& tensor) const { return gloo_direct() && direct_->handles(tensor); }

template <class Run>
uint64_t ProcessGroup::run_direct(const std::string& op, Run&& run) {
  const uint64_t sequence = issue_sequence();
  try {
    run();
  } catch (const Error&) {  // a broken precondition, not a failed collective
    throw;
  } catch (const std::exception& e) {
    fail_collective(op, sequence, first_line(e.what()));
  }
  return sequence;
}

template <class Launch>
ProcessGroup::Pending ProcessGroup::issue(const std::string& op, Launch&& launch) {
  uint64_t sequence = issue_sequence();
  try {
    Pending pending;
    pending.work = launch();
    pending.op = op;
    pending.sequence = sequence;
    return pending;
  } catch (const std::exception& e) {
    fail_collective(op, sequence, first_line(e.what()));
  }
}

ProcessGroup::Pending ProcessGroup::allreduce_async(std::vector<at::Tensor>& tensors, const std::string& op) {
  if (tensors.size() == 1 && direct_takes(tensors[0])) {
    Pending done;
    done.op = op;
    done.sequence = run_direct(op, [&] { direct_->send_and_add(tensors[0], tensors[0]); });
    return done;
  }
  return issue(op, [&] { return backend_->allreduce(tensors); });
}

void ProcessGroup::wait(Pending& pending) {
  try {
    if (pending.work) pending.work->wait(timeout_);
    if (pending.receive) pending.receive->wait(timeout_);
  } catch (const std::exception& e) {
    fail_collective(pending.op, pending.sequence, first_line(e.what()));
  }
  pending.work.reset();
  pending.receive.reset();
  pending.received.reset();
}

void ProcessGroup::allreduce(at::Tensor& tensor, const std::string& op) {
  std::vector<at::Tensor> tensors{tensor};
  Pending pending = allreduce_async(tensors, op);
  wait(pending);
}

void ProcessGroup::broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& op) {
  ::c10d::BroadcastOptions options;
  options.rootRank = root;
  Pending pending = issue(op, [&] { return backend_->broadcast(tensors, options); });
  wait(pending);
}

std::vector<at::Tensor> ProcessGroup::allgather(const at::Tensor& input, const std::string& op) {
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < world_size_; ++r) outputs[0].push_back(at::empty_like(input));
  std::vector<at::Tensor> inputs{input.contiguous()};
  Pending pending = issue(op, [&] { return backend_->allgather(outputs, inputs); });
  wait(pending);
  return outputs[0];
}

void ProcessGroup::ring_step(const at::Tensor& send, at::Tensor& receive, const std::string& op) {
  const uint64_t sequence = issue_sequence();
  // Every rank runs the same steps in the same order: the sequence number is
  // a tag the sender and the receiver agree on.
  const int tag = static_cast<int>(sequence % (1u << 30));
  const int next = (rank_ + 1) % world_size_, previous = (rank_ + world_size_ - 1) % world_size_;
  try {
    std::vector<at::Tensor> outgoing{send}, incoming{receive};
    c10d_adapter::WorkPtr sent = backend_->send(outgoing, next, tag);
    c10d_adapter::WorkPtr received = backend_->recv(incoming, previous, tag);
    sent->wait(timeout_);
    received->wait(timeout_);
  } catch (const std::exception& e) {
    fail_collective(op, sequence, first_line(e.what()));
  }
}

at::Tensor ProcessGroup::reduce_scatter(at::Tensor& input, const std::string& op) {
  require(input.is_contiguous() && input.numel() % world_size_ == 0, ErrorCode::Internal,
          op + ": reduce_scatter needs a contiguous input of world_size * n elements, got " +
              std::to_string(input.numel()));
  const int64_t n = input.numel() / world_size_;
  if (native_tensor_collectives()) {
    at::Tensor mine = at::empty({n}, input.options());
    Pending pending = issue(op, [&] { return c10d_adapter::reduce_scatter_tensor(*backend_, mine, input); });
    wait(pending);
    return mine;
  }
  if (ring_collectives()) {
    // Two ranks swap the halves the other owns and each adds what arrives to
    // its own: a + b == b + a, the bits Gloo's allreduce gives replicated
    // training. (With 3 or more, any order of our own made AdamW's parameters
    // drift from replicated training's by 1e-4 in 100 steps: the rounding of
    // a three-way sum depends on its order, so those keep Gloo's reduce.)
    const int peer = 1 - rank_;
    at::Tensor mine = input.narrow(0, rank_ * n, n);
    if (direct_takes(mine)) {
      run_direct(op, [&] { direct_->send_and_add(input.narrow(0, peer * n, n), mine); });
      return mine;
    }
    at::Tensor incoming = at::empty({n}, input.options());
    ring_step(input.narrow(0, peer * n, n), incoming, op);
    return mine.add_(incoming);
  }
  std::vector<std::vector<at::Tensor>> chunks(world_size_);
  std::vector<Pending> pending;
  for (int r = 0; r < world_size_; ++r) {
    chunks[r].push_back(input.narrow(0, r * n, n));
    ::c10d::ReduceOptions options;
    options.rootRank = r;
    pending.push_back(issue(op + " (reduce to rank " + std::to_string(r) + ")",
                            [&] { return backend_->reduce(chunks[r], options); }));
  }
  for (auto& p : pending) wait(p);
  return chunks[rank_][0];
}

void ProcessGroup::all_gather_into(at::Tensor& output, const at::Tensor& chunk, const std::string& op) {
  Pending pending = all_gather_into_async(output, chunk, op);
  wait(pending);
}

ProcessGroup::Pending ProcessGroup::all_gather_into_async(at::Tensor& output, const at::Tensor& chunk,
                                                          const std::string& op) {
  require(output.is_contiguous() && output.numel() == chunk.numel() * world_size_, ErrorCode::Internal,
          op + ": all_gather_into needs an output of world_size * " + std::to_string(chunk.numel()) +
              " elements, got " + std::to_string(output.numel()));
  const int64_t n = chunk.numel();
  if (native_tensor_collectives()) {
    at::Tensor flat_chunk = chunk.reshape({n});
    if (flat_chunk.data_ptr() == output.narrow(0, rank_ * n, n).data_ptr()) flat_chunk = flat_chunk.clone();
    Pending pending = issue(op, [&] { return c10d_adapter::all_gather_into_tensor(*backend_, output, flat_chunk); });
    pending.received = flat_chunk;  // read by the collective until it completes
    return pending;
  }
  if (ring_collectives() && world_size_ > 1) {
    // Two ranks: send this rank's slot while the peer's fills.
    at::Tensor mine = output.narrow(0, rank_ * n, n), theirs = output.narrow(0, (1 - rank_) * n, n);
    if (mine.data_ptr() != chunk.data_ptr()) mine.copy_(chunk.reshape({n}));
    if (direct_takes(mine)) {  // done now: nothing is left in flight for wait()
      Pending done;
      done.op = op;
      done.sequence = run_direct(op, [&] { direct_->swap(mine, theirs); });
      return done;
    }
    const uint64_t sequence = issue_sequence();
    const int tag = static_cast<int>(sequence % (1u << 30));  // every rank issues the same steps in order
    Pending pending;
    pending.op = op;
    pending.sequence = sequence;
    try {
      std::vector<at::Tensor> outgoing{mine}, incoming{theirs};
      pending.work = backend_->send(outgoing, 1 - rank_, tag);
      pending.receive = backend_->recv(incoming, 1 - rank_, tag);
    } catch (const std::exception& e) {
      fail_collective(op, sequence, first_line(e.what()));
    }
    return pending;
  }
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < world_size_; ++r) outputs[0].push_back(output.narrow(0, r * n, n));
  std::vector<at::Tensor> inputs{chunk.contiguous()};
  Pending pending = issue(op, [&] { return backend_->allgather(outputs, inputs); });
  pending.received = inputs[0];
  return pending;
}

void ProcessGroup::barrier(const std::string& op) {
  // Gloo's barrier is an allreduce of a single element: doing it ourselves keeps
  // one timeout path and works the same on NCCL.
  at::Tensor token = at::zeros({1}, at::TensorOptions().device(device_));
  allreduce(token, op);
}

void ProcessGroup::fail_collective(const std::string& op, uint64_t sequence, const std::string& cause) {
  std::ostringstream message;
  message << "collective " << op << " #" << sequence << " failed on rank " << rank_ << " (timeout " << timeout_.count()
          << " ms): " << cause << "; " << describe_peers(op, sequence);
  fail(looks_like_timeout(cause) ? ErrorCode::Timeout : ErrorCode::Distributed, message.str());
}

// Every rank whose collective fails posts where it is stuck; after a short grace
// period the ranks that posted nothing are the ones that never arrived.
std::string ProcessGroup::describe_peers(const std::string& op, uint64_t sequence) {
  std::string here = op + " #" + std::to_string(sequence);
  try {
    store_->setTimeout(std::chrono::milliseconds(2000));
    store_->set(stall_key(rank_), std::vector<uint8_t>(here.begin(), here.end()));
    auto grace = std::min<std::chrono::milliseconds>(timeout_, std::chrono::milliseconds(3000));
    auto deadline = std::chrono::steady_clock::now() + grace;
    std::vector<int> silent;
    do {
      silent.clear();
      for (int r = 0; r < world_size_; ++r) {
        if (r != rank_ && !store_->check({stall_key(r)})) silent.push_back(r);
      }
      if (silent.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < deadline);

    std::ostringstream out;
    if (!silent.empty()) {
      out << "ranks that did not arrive: " << rank_list(silent);
    } else {
      out << "every rank reported a failure";
    }
    for (int r = 0; r < world_size_; ++r) {
      if (r == rank_ || std::find(silent.begin(), silent.end(), r) != silent.end()) continue;
      std::vector<uint8_t> value = store_->get(stall_key(r));
      std::string where(value.begin(), value.end());
      if (where != here) out << "; rank " << r << " is in " << where;
    }
    return out.str();
  } catch (const std::exception& e) {
    return "the other ranks' state is unknown (rendezvous store unreachable: " + first_line(e.what()) + ")";
  }
}

}  // namespace accel::detail
