// GPT-2's attention softmax as one operator, registered with LibTorch's
// dispatcher as
//   libaccel::masked_softmax(Tensor scores, Tensor divisor, Tensor causal,
//                            Tensor mask_value, Tensor? additive) -> Tensor
// = softmax(where(causal, (scores / divisor).to(float32), mask_value)
//           + additive, dim=-1)
// (script_rewrites.cpp swaps it in for that chain when a model is loaded).
// ATen runs the chain as seven kernels each way, each writing a tensor of the
// scores' size; this runs two passes each way (eltwise/masked_softmax_kernel.hpp)
// on float32 or bfloat16 CPU scores of four dimensions, a bool causal mask and
// float32 one-element divisor and mask value, and an optional float32
// additive mask, the masks broadcasting to the scores with their last
// dimension whole. Anything else (GPU tensors, other dtypes or layouts, masks
// that require grad) runs the chain itself with ATen's autograd. The result
// differs from the chain's by float rounding (another exp and summation order,
// a few float32 ulps of each probability); the logits before the exp are the
// chain's bit for bit. A backward recorded for a second derivative computes
// with ATen's ops, which are differentiable again.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

namespace accel::detail {

at::Tensor accel_masked_softmax(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                                const at::Tensor& mask_value, const c10::optional<at::Tensor>& additive);

// The chain the operator stands for, op by op in ATen (the reference, and what
// runs when the kernel does not take the tensors).
at::Tensor masked_softmax_chain(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                                const at::Tensor& mask_value, const c10::optional<at::Tensor>& additive);

}  // namespace accel::detail
