// The one place that knows how LibTorch's c10d API differs between versions.
//
// LibTorch 1.13 collectives live on c10d::ProcessGroup; 2.x moved them to
// c10d::Backend (ProcessGroupGloo/NCCL derive from it). Everything else in
// libaccel talks to `Backend` and the factory functions below.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace accel::detail::c10d_adapter {

#if TORCH_VERSION_MAJOR >= 2
using Backend = ::c10d::Backend;
#else
using Backend = ::c10d::ProcessGroup;
#endif
using BackendPtr = c10::intrusive_ptr<Backend>;
using WorkPtr = c10::intrusive_ptr<::c10d::Work>;
using StorePtr = c10::intrusive_ptr<::c10d::Store>;

// Whether TCPStoreOptions can take a listening socket we bound ourselves
// (masterListenFd, LibTorch 2.x). Detected rather than assumed from the version
// number, so a 2.x release without the field still builds (and listens everywhere).
template <class Options, class = void>
struct takes_listen_fd : std::false_type {};
template <class Options>
struct takes_listen_fd<Options, std::void_t<decltype(std::declval<Options&>().masterListenFd)>> : std::true_type {};

// True when rank 0's store listens on MASTER_ADDR's address only. LibTorch 1.13's
// TCPStore has no such option: it always listens on every interface, IPv4 and
// IPv6, so any host that can reach rank 0 can reach the (unauthenticated) store.
inline constexpr bool kStoreListensOnMasterAddrOnly = takes_listen_fd<::c10d::TCPStoreOptions>::value;

// Rank 0 hosts the store (on MASTER_ADDR's address where kStoreListensOnMasterAddrOnly);
// the others connect, retrying up to `timeout`. Returns once connected: it does
// not wait for the other ranks (ProcessGroup does, naming the missing ones).
StorePtr make_tcp_store(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout);

// Keys of `store` under "<prefix>/": a subgroup's own namespace on the one store.
StorePtr make_prefix_store(const std::string& prefix, const StorePtr& store);

// 127.0.0.0/8, ::1 or "localhost".
bool is_loopback(const std::string& addr);

// Where a Gloo device listens: the interface GLOO_SOCKET_IFNAME names, or else
// the local address that reaches `master_addr` (127.0.0.1 for a loopback one),
// or else, both empty, Gloo's default (the hostname's address).
struct GlooListenAddress {
  std::string interface;
  std::string hostname;
};
GlooListenAddress gloo_listen_address(const std::string& master_addr);

// Gloo over the interface that reaches `master_addr` (GLOO_SOCKET_IFNAME wins).
BackendPtr make_gloo(const StorePtr& store, int rank, int world_size, const std::string& master_addr,
                     std::chrono::milliseconds timeout);

// NCCL when this LibTorch was built with it; throws Unsupported otherwise.
BackendPtr make_nccl(const StorePtr& store, int rank, int world_size, std::chrono::milliseconds timeout);
bool nccl_available();

// The one-tensor collectives NCCL has natively (torch.distributed's
// reduce_scatter_tensor and all_gather_into_tensor; _reduce_scatter_base and
// _allgather_base in c10d). Gloo in LibTorch 1.13 does not implement them:
// ProcessGroup composes them there instead. reduce_scatter_tensor sums `input`
// (world_size * output.numel() elements) across ranks into this rank's chunk.
WorkPtr reduce_scatter_tensor(Backend& backend, at::Tensor& output, at::Tensor& input);
WorkPtr all_gather_into_tensor(Backend& backend, at::Tensor& output, at::Tensor& input);

// Returns the CUDA caching allocator's unused blocks to the driver (PyTorch's
// torch.cuda.empty_cache()); nothing in a build without CUDA.
void empty_cuda_cache();
// Bytes free on GPU `device` now (cudaMemGetInfo, PyTorch's
// torch.cuda.mem_get_info()[0]); 0 in a build without CUDA.
int64_t cuda_free_bytes(int device);

}  // namespace accel::detail::c10d_adapter
