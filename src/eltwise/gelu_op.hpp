// GELU a TorchScript graph can call in place of ATen's, registered with
// LibTorch's dispatcher as libaccel::gelu(Tensor self, str approximate="none")
// (script_rewrites.cpp swaps it in when a model is loaded). On float32 and
// bfloat16 CPU tensors the forward and backward run through
// onednn::gelu/gelu_backward; anything else (GPU tensors, other dtypes, a build
// without oneDNN) is exactly aten::gelu with ATen's autograd. A backward recorded
// for a second derivative (create_graph) computes with aten::gelu_backward,
// which is differentiable again.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace accel::detail {

at::Tensor accel_gelu(const at::Tensor& x, const std::string& approximate);

}  // namespace accel::detail
