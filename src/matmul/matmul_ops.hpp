// Matrix products a TorchScript graph can call in place of ATen's, registered
// with LibTorch's dispatcher as libaccel::addmm, libaccel::linear and
// libaccel::matmul (script_rewrites.cpp swaps them in when a model is loaded).
// When the operands fit onednn::matmul (float32 CPU tensors; under CPU
// autocast to bfloat16, float32 or bfloat16 ones, cast to bfloat16 as autocast
// casts them) the forward and the backward's two products run there;
// otherwise each is exactly the ATen op, with ATen's autograd and autocast
// (GPU tensors, other dtypes, float16 autocast, broadcasting, any shape the
// oneDNN path does not take). A backward recorded for a second derivative
// (create_graph) computes with ATen's ops instead.
#pragma once

#include <ATen/core/Tensor.h>

namespace accel::detail {

// aten::addmm(bias, mat1, mat2) with beta = alpha = 1: mat1 @ mat2 + bias
// (transformers' Conv1D).
at::Tensor accel_addmm(const at::Tensor& bias, const at::Tensor& mat1, const at::Tensor& mat2);
// aten::linear: input @ weight^T + bias (bias may be undefined).
at::Tensor accel_linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);
// aten::matmul.
at::Tensor accel_matmul(const at::Tensor& a, const at::Tensor& b);

}  // namespace accel::detail
