// User-facing collectives built on ProcessGroup. gather exchanges shapes first,
// so unequal dim-0 sizes work; reduce and broadcast exchange them only in debug
// mode (ACCELERATE_DEBUG_MODE), as Accelerate does, where a mismatch then fails
// on every rank alike instead of being left to the backend.
#pragma once

#include <ATen/core/Tensor.h>

#include "accel/options.hpp"
#include "state/runtime_context.hpp"

namespace accel::detail {

// Lists: one result per input, in order; every process passes as many tensors.
// Concatenation along dim 0 in rank order; a 0-dim tensor counts as [1]. The
// dim-0 sizes travel first (one collective for the whole list), so they may
// differ; the other dims and dtypes are checked on every rank alike.
// `over`: a group other than the world (gather_for_metrics: the data-parallel
// ranks under tensor parallelism).
std::vector<at::Tensor> gather_tensors(RuntimeContext& state, const std::vector<at::Tensor>& tensors,
                                       ProcessGroup* over = nullptr);
// scale * element-wise sum over ranks, divided by the world size for Mean; one
// allreduce per dtype. Shapes are checked (an extra collective) in debug mode only.
std::vector<at::Tensor> reduce_tensors(RuntimeContext& state, const std::vector<at::Tensor>& tensors, ReduceOp op,
                                       double scale);
// from's tensors on every process; shapes are checked in debug mode only.
std::vector<at::Tensor> broadcast_tensors(RuntimeContext& state, const std::vector<at::Tensor>& tensors, int from);
// Copies process 0's parameters and buffers into every replica.
void broadcast_from_main(RuntimeContext& state, const std::vector<at::Tensor>& tensors, const std::string& what);
// The same from process `root`.
void broadcast_in_place(RuntimeContext& state, const std::vector<at::Tensor>& tensors, int root,
                        const std::string& what);
// The main process's batch (nullopt: none) on every process, on the host; the
// others pass nullopt. Shapes and dtypes travel first, so nothing is assumed.
std::optional<std::vector<at::Tensor>> broadcast_batch(RuntimeContext& state,
                                                       std::optional<std::vector<at::Tensor>> batch);

}  // namespace accel::detail
