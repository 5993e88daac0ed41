// Builds a torch::nn::Sequential from a JSON "sequential" spec, so programs in
// any language can describe a model without C++. See accel_model_from_json.
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <string>

namespace accel::detail {

// Throws accel::Error (InvalidArgument) naming the layer index, its type and
// the offending argument.
torch::nn::Sequential build_sequential(const std::string& json_text);

}  // namespace accel::detail
