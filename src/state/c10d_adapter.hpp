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
#include <string>

namespace accel::detail::c10d_adapter {

#if TORCH_VERSION_MAJOR >= 2
using Backend = ::c10d::Backend;
#else
using Backend = ::c10d::ProcessGroup;
#endif
using BackendPtr = c10::intrusive_ptr<Backend>;
using WorkPtr = c10::intrusive_ptr<::c10d::Work>;
using StorePtr = c10::intrusive_ptr<::c10d::Store>;

// Rank 0 hosts the store; the others connect. Waits for all `world_size`
// participants up to `timeout`.
StorePtr make_tcp_store(const std::string& host, int port, bool is_server, int world_size,
                        std::chrono::milliseconds timeout);

// Gloo over the interface that reaches `master_addr` (GLOO_SOCKET_IFNAME wins).
BackendPtr make_gloo(const StorePtr& store, int rank, int world_size, const std::string& master_addr,
                     std::chrono::milliseconds timeout);

// NCCL when this LibTorch was built with it; throws Unsupported otherwise.
BackendPtr make_nccl(const StorePtr& store, int rank, int world_size, std::chrono::milliseconds timeout);
bool nccl_available();

}  // namespace accel::detail::c10d_adapter
