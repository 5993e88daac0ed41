// User-facing collectives built on ProcessGroup: shapes are exchanged first, so
// unequal dim-0 sizes work and mismatched shapes fail on every rank alike
// instead of deadlocking.
#pragma once

#include <ATen/core/Tensor.h>

#include "accel/accelerator.hpp"
#include "state/accelerator_state.hpp"

namespace accel::detail {

// Concatenation along dim 0 in rank order; a 0-dim tensor counts as [1].
at::Tensor gather_tensor(AcceleratorState& state, const at::Tensor& tensor);
// Element-wise sum or mean over ranks; shapes and dtypes must match.
at::Tensor reduce_tensor(AcceleratorState& state, const at::Tensor& tensor, ReduceOp op);
// from's tensor on every process; shapes and dtypes must match.
at::Tensor broadcast_tensor(AcceleratorState& state, const at::Tensor& tensor, int from);
// Copies process 0's parameters and buffers into every replica.
void broadcast_from_main(AcceleratorState& state, const std::vector<at::Tensor>& tensors, const std::string& what);
// The same from process `root`.
void broadcast_in_place(AcceleratorState& state, const std::vector<at::Tensor>& tensors, int root,
                        const std::string& what);
// The main process's batch (nullopt: none) on every process, on the host; the
// others pass nullopt. Shapes and dtypes travel first, so nothing is assumed.
std::optional<std::vector<at::Tensor>> broadcast_batch(AcceleratorState& state,
                                                       std::optional<std::vector<at::Tensor>> batch);

}  // namespace accel::detail
