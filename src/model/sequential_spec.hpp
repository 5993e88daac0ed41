// Builds a torch::nn::Sequential from a JSON "sequential" spec, so programs in
// any language can describe a model without C++. See accel_model_from_json.
//
// The spec is a JSON array of layers, or an object {"layers": [...]}. Each
// layer is an object such as
//   {"type": "Conv2d", "in_channels": 1, "out_channels": 32, "kernel_size": 3}
// whose keys are PyTorch's keyword names, with PyTorch's defaults when omitted;
// unknown keys are errors. Submodules are named "0", "1", ... exactly as in
// Python's nn.Sequential, so parameter names ("0.weight") match PyTorch's.
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <string>

namespace accel::detail {

// Throws accel::Error (InvalidArgument) naming the layer index, its type and
// the offending argument; no nlohmann or c10 exception escapes.
torch::nn::Sequential build_sequential(const std::string& json_text);

}  // namespace accel::detail
