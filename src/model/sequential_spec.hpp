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

#include <nlohmann/json.hpp>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>

#include <string>
#include <vector>

namespace accel::detail {

// Throws accel::Error (InvalidArgument) naming the layer index, its type and
// the offending argument; no nlohmann or c10 exception escapes.
torch::nn::Sequential build_sequential(const std::string& json_text);
torch::nn::Sequential build_sequential_from(const nlohmann::json& spec);
// Each layer's "type" of a spec build_sequential_from accepted, in order.
std::vector<std::string> sequential_layer_types(const nlohmann::json& spec);

// The spec text as JSON; InvalidArgument (with line and column) when it is not.
nlohmann::json parse_model_spec(const std::string& json_text);

// One layer object {"type": ..., args}; `where` starts its errors ("layer 3",
// "node \"h\" layer 0"). Every type of the table, including the sequence layers.
torch::nn::AnyModule build_layer(const nlohmann::json& layer, const std::string& where);

// While one is alive on this thread, build_layer moves each layer's parameters
// and buffers to the meta device as soon as it is built (Accelerate's
// init_empty_weights), so building a large spec holds at most one layer's
// weights in memory at a time. Nests; see accel::model_from_json_empty.
class EmptyInitScope {
 public:
  EmptyInitScope();
  ~EmptyInitScope();
  EmptyInitScope(const EmptyInitScope&) = delete;
  EmptyInitScope& operator=(const EmptyInitScope&) = delete;
  static bool active();
};

}  // namespace accel::detail
