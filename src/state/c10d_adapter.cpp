#include "state/c10d_adapter.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#if defined(USE_C10D_NCCL)  // defined by a CUDA LibTorch's torch_cuda target
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#if defined(ACCEL_WITH_CUDA)  // src/CMakeLists.txt, for a CUDA LibTorch
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#include "accel/error.hpp"
#include "state/local_address.hpp"

namespace accel::detail::c10d_adapter {

namespace {

template <class Options, class = void>
struct has_use_libuv : std::false_type {};
template <class Options>
struct has_use_libuv<Options, std::void_t<decltype(std::declval<Options&>().useLibUV)>> : std::true_type {};

// A socket bound to `host`:`port` and listening, for the store to take over;
// -1 when no address of `host` can be bound on this machine (MASTER_ADDR behind
// NAT, say): the store then listens on every interface, as it always does on 1.13.
[[maybe_unused]] int listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int listening = -1;
  for (addrinfo* candidate = found; candidate != nullptr && listening < 0; candidate = candidate->ai_next) {
    int fd = ::socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC, candidate->ai_protocol);
    if (fd < 0) continue;
    int on = 1;  // as c10d does: a port left in TIME_WAIT by the last job stays usable
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, candidate->ai_addr, candidate->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      listening = fd;
    } else {
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  return listening;
}

// LibTorch 2.x: the store listens on the socket we bound to MASTER_ADDR.
template <class Options>
void listen_on_master_addr([[maybe_unused]] Options& options, [[maybe_unused]] const std::string& host,
                           [[maybe_unused]] int port) {
  if constexpr (takes_listen_fd<Options>::value) {
    int fd = listen_on(host, port);
    if (fd < 0) return;
    options.masterListenFd = fd;  // owned by the store from here on
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 8
    // The libuv server (the default from 2.4) ignored masterListenFd's socket
    // and never accepted on it before 2.8 (pytorch#150215).
    if constexpr (has_use_libuv<Options>::value) options.useLibUV = false;
#endif
  }
}

// Waits until something accepts TCP connections at host:port, trying every 50 ms
// until `timeout` has passed; false if nothing did. c10d's own client retries
// with a jittered backoff it sleeps out even past the deadline (2.15 slept
// 4.4 s after a 3 s attempt), so the client is only made once the store is
// there, and a rank joining a store that never comes gives up on time.
[[maybe_unused]] bool wait_for_listener(const std::string& host, int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  for (;;) {
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) == 0) {
      for (addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
        int fd = ::socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC, candidate->ai_protocol);
        if (fd < 0) continue;
        const bool connected = ::connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0;
        ::close(fd);
        if (connected) {
          ::freeaddrinfo(found);
          return true;
        }
      }
      ::freeaddrinfo(found);
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= left.zero()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(50)));
  }
}

}  // namespace

StorePtr make_tcp_store(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout) {
  if (!is_server && !wait_for_listener(host, port, timeout)) {
    throw std::runtime_error("The client socket has timed out after " + std::to_string(timeout.count()) +
                             "ms while trying to connect to (" + host + ", " + std::to_string(port) + ")");
  }
  ::c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = is_server;
  // ProcessGroup waits for the ranks itself. c10d's wait (1.13) gives up
  // silently once the timeout, counted in whole seconds, has passed, and Gloo's
  // rendezvous then waits a second timeout: about twice timeout_ms in all, with
  // no word on who is missing.
  options.waitWorkers = false;
  options.timeout = timeout;
  if (is_server) listen_on_master_addr(options, host, port);
  return c10::make_intrusive<::c10d::TCPStore>(host, options);
}

StorePtr make_prefix_store(const std::string& prefix, const StorePtr& store) {
  return c10::make_intrusive<::c10d::PrefixStore>(prefix, store);
}

bool is_loopback(const std::string& addr) { return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1"; }

GlooListenAddress gloo_listen_address(const std::string& master_addr) {
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface != nullptr && *iface != '\0') return {iface, ""};
  if (is_loopback(master_addr)) return {"", "127.0.0.1"};
  return {"", detail::local_address_towards(master_addr)};
}

BackendPtr make_gloo(const StorePtr& store, int rank, int world_size, const std::string& master_addr,
                     std::chrono::milliseconds timeout) {
  auto options = ::c10d::ProcessGroupGloo::Options::create(timeout);
  const GlooListenAddress address = gloo_listen_address(master_addr);
  if (!address.interface.empty()) {
    options->devices.push_back(::c10d::ProcessGroupGloo::createDeviceForInterface(address.interface));
  } else if (!address.hostname.empty()) {
    options->devices.push_back(::c10d::ProcessGroupGloo::createDeviceForHostname(address.hostname));
  } else {
    options->devices.push_back(::c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<::c10d::ProcessGroupGloo>(store, rank, world_size, options);
}

bool nccl_available() {
#if defined(USE_C10D_NCCL)
  return true;
#else
  return false;
#endif
}

BackendPtr make_nccl(const StorePtr& store, int rank, int world_size, std::chrono::milliseconds timeout) {
#if defined(USE_C10D_NCCL)
  auto options = ::c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<::c10d::ProcessGroupNCCL>(store, rank, world_size, options);
#else
  (void)store, (void)rank, (void)world_size, (void)timeout;
  fail(ErrorCode::Unsupported, "this libaccel was built without NCCL: multi-GPU training needs a CUDA LibTorch");
#endif
}

WorkPtr reduce_scatter_tensor(Backend& backend, at::Tensor& output, at::Tensor& input) {
  return backend._reduce_scatter_base(output, input, ::c10d::ReduceScatterOptions());
}

WorkPtr all_gather_into_tensor(Backend& backend, at::Tensor& output, at::Tensor& input) {
  return backend._allgather_base(output, input, ::c10d::AllgatherOptions());
}

void empty_cuda_cache() {
#if defined(ACCEL_WITH_CUDA)
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

int64_t cuda_free_bytes(int device) {
#if defined(ACCEL_WITH_CUDA)
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  size_t free = 0, total = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return static_cast<int64_t>(free);
#else
  (void)device;
  return 0;
#endif
}

}  // namespace accel::detail::c10d_adapter
