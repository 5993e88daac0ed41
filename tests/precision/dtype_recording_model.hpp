// A Linear model whose forward records the dtype it computed in: the
// mixed-precision tests check what autocast ran the layer in.
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include "accel/model.hpp"

namespace accel_test {

// `inside` must outlive the model; each forward overwrites it.
inline accel::Model dtype_recording_model(torch::nn::Linear linear, at::ScalarType& inside) {
  return accel::Model::from_module(linear.ptr(), [layer = linear.ptr(), &inside](const at::Tensor& x) {
    at::Tensor y = layer->forward(x);
    inside = y.scalar_type();
    return y;
  });
}

}  // namespace accel_test
