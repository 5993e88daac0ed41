// Two-rank collectives on Gloo's transport, run on the calling thread: a
// second Gloo context between the two ranks, its connections switched to
// Gloo's synchronous mode, over which each rank sends its tensor in pieces
// and reads the peer's (then adds, for a sum).
//
// Why: c10d's ProcessGroupGloo hands each collective to a worker thread, and
// every message is read by Gloo's event-loop thread, which wakes the worker,
// which wakes the caller. With two processes on two cores each of those
// threads must be woken on a core the training thread just held. Measured
// (docs/benchmarks.md, "Where a synced step's time goes"): the `tiny` synced
// step took 2.31 ms with c10d's allreduce and 0.385 ms with this one; `mlp`
// (7.45 MB) 15.1 and 11.6 ms. The sum is a + b on one rank and b + a on the
// other: the same bits, and the bits c10d's two-rank ring gives.
//
// Only for two ranks: with three or more, sums must be ordered alike on every
// rank, which is what c10d's ring already does.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "state/c10d_adapter.hpp"

namespace accel::detail {

class GlooDirect {
 public:
  // Whether this build has it: the system's Gloo headers and library, and the
  // LibTorch beside them linking that same Gloo (a pip LibTorch bundles its own).
  static bool available();

  // Connects a second full mesh between the two ranks over `store` (its own
  // keys) and switches its pairs to synchronous mode. Collective: both ranks
  // call it. Throws std::exception (Gloo's) when the peer does not connect in
  // `timeout`. Only world_size 2.
  GlooDirect(const c10d_adapter::StorePtr& store, int rank, int world_size, const std::string& master_addr,
             std::chrono::milliseconds timeout);
  ~GlooDirect();
  GlooDirect(const GlooDirect&) = delete;
  GlooDirect& operator=(const GlooDirect&) = delete;

  // Whether send_and_add() and swap() take `tensor`: dense, contiguous, on
  // the CPU, of a dtype c10d's Gloo also sums (float, double, half, the
  // integers). Any size: only one piece at a time is buffered.
  bool handles(const at::Tensor& tensor) const;

  // Adds the peer's `outgoing` into `sum_into` (this rank's `outgoing` goes to
  // the peer's); returns when done. Both tensors pass handles() and have the
  // same size; they may be one tensor (allreduce) or two halves of one
  // (two-rank reduce-scatter). Both ranks call it for the same sizes in the
  // same order. Internal error when the tensors break these rules; throws
  // std::exception (Gloo's "Read timeout" after the timeout, "Connection
  // closed by peer" when it dies). The peer's pieces land one at a time in a
  // one-piece buffer kept for the next call.
  void send_and_add(const at::Tensor& outgoing, at::Tensor& sum_into);

  // Sends `outgoing` while the peer's lands in `incoming` (same size, both
  // passing handles()): a two-rank all-gather. Throws as send_and_add.
  void swap(const at::Tensor& outgoing, at::Tensor& incoming);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel::detail
