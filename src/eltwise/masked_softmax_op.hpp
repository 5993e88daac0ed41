// The attention softmax as transformers' eager attention traces it, as one
// operator each for the two forms, registered with LibTorch's dispatcher:
//   libaccel::masked_softmax(Tensor scores, Tensor divisor, Tensor causal,
//                            Tensor mask_value, Tensor? additive) -> Tensor
//   = softmax(where(causal, (scores / divisor).to(float32), mask_value)
//             + additive, dim=-1)                                    (GPT-2)
//   libaccel::scaled_softmax(Tensor scores, Tensor scale, Tensor additive) -> Tensor
//   = softmax(scores * scale + additive, dim=-1, dtype=float32)       (Llama,
//     Mistral, Qwen2, Gemma)
// (script_rewrites.cpp swaps them in for those chains when a model is loaded).
// ATen runs a chain as five to seven kernels each way, each writing a tensor of
// the scores' size; these run two passes each way
// (eltwise/masked_softmax_kernel.hpp) on float32 or bfloat16 CPU scores of four
// dimensions, a one-element floating divisor or scale, a bool causal mask, a
// float32 one-element mask value and float32 additive mask, the masks
// broadcasting to the scores with their last dimension whole. Anything else
// (GPU tensors, other dtypes or layouts, masks or scales that require grad)
// runs the chain itself with ATen's autograd. The result differs from the
// chain's by float rounding (another exp and summation order, a few float32
// ulps of each probability); the logits before the exp are the chain's bit for
// bit. A backward recorded for a second derivative computes with ATen's ops,
// which are differentiable again.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

namespace accel::detail {

at::Tensor accel_masked_softmax(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                                const at::Tensor& mask_value, const c10::optional<at::Tensor>& additive);

at::Tensor accel_scaled_softmax(const at::Tensor& scores, const at::Tensor& scale, const at::Tensor& additive);

// The chains the operators stand for, op by op in ATen (the references, and
// what runs when the kernel does not take the tensors).
at::Tensor masked_softmax_chain(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                                const at::Tensor& mask_value, const c10::optional<at::Tensor>& additive);

at::Tensor scaled_softmax_chain(const at::Tensor& scores, const at::Tensor& scale, const at::Tensor& additive);

}  // namespace accel::detail
