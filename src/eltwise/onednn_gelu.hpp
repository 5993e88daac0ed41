// GELU on the CPU through oneDNN's eltwise primitive (the oneDNN LibTorch 1.13
// links; built under the same condition as matmul/onednn_matmul.hpp). LibTorch
// 1.13's GELU kernels run AVX2 code and, on bfloat16, convert every element
// through float: on the bench's Xeon (AVX-512, AMX) oneDNN's JIT kernels are
// 4-5x faster on GPT-2's [8, 128, 1024] activations, forward and backward, and
// GELU was 20% of an fp32 training step and 30% of a bf16 one
// (docs/benchmarks.md, "LM").
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

namespace accel::detail::onednn {

// Whether gelu() takes x: oneDNN is built in, approximate is "none" or "tanh",
// and x is a float32 or bfloat16 CPU tensor with elements.
bool gelu_supported(const at::Tensor& x, const std::string& approximate);

// gelu(x) with approximate "none" (erf) or "tanh", as aten::gelu. A new
// contiguous tensor of x's shape and dtype. Declines (nullopt, nothing
// computed) unless gelu_supported(x, approximate) and this CPU has oneDNN
// kernels for the dtype; the caller then computes with ATen.
std::optional<at::Tensor> gelu(const at::Tensor& x, const std::string& approximate);

// The gradient of gelu at x for the incoming gradient `grad` (same shape and
// dtype as x), as aten::gelu_backward; declines as gelu does.
std::optional<at::Tensor> gelu_backward(const at::Tensor& grad, const at::Tensor& x, const std::string& approximate);

}  // namespace accel::detail::onednn
