// Parameters and buffers on the meta device: shapes and dtypes, no storage.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace accel::detail {

// Replaces the tensor's contents in place (same TensorImpl, so every handle a
// layer keeps — Linear::weight, a tied Linear's weight — sees the change) with
// `source`, which may live on another device. Autograd flags stay with target.
// at::Tensor::set_data refuses a change of device kind (CPU <-> meta), which
// is exactly what empty init and offload need.
void replace_tensor_contents(const at::Tensor& target, const at::Tensor& source);

// The tensor's contents replaced by an empty meta tensor of its shape (and
// `type`, when given): its storage is freed once nothing else holds it.
void to_meta(const at::Tensor& tensor, c10::optional<at::ScalarType> type = c10::nullopt);

// Every parameter and buffer of module and its descendants onto the meta
// device; their old storage is freed once nothing else holds it.
void move_to_meta(torch::nn::Module& module);

}  // namespace accel::detail
