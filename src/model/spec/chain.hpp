// Layers that only a graph spec has: nested chains ("Sequential", and
// "Residual", which adds its input to the chain's output) and a Linear whose
// weight is tied to another node's parameter.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "model/spec/attention.hpp"

namespace accel::detail {

// nn.Sequential's submodules "0", "1", ... (or the names the layers give, as
// with an OrderedDict). Side inputs (masks, memory) go to each layer that takes
// them, the first max_side_inputs() of them.
class ChainImpl : public torch::nn::Module, public SideInputs {
 public:
  explicit ChainImpl(bool residual) : residual_(residual) {}
  void append(const std::string& name, torch::nn::AnyModule layer);
  at::Tensor forward(const at::Tensor& input) { return forward_with(input, {}); }
  at::Tensor forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) override;
  size_t max_side_inputs() const override { return max_side_; }

 private:
  bool residual_;
  size_t max_side_ = 0;
  std::vector<torch::nn::AnyModule> layers_;
};
TORCH_MODULE(Chain);

// Runs one layer with side inputs when it takes them.
at::Tensor call_layer(torch::nn::AnyModule& layer, const at::Tensor& input, const std::vector<at::Tensor>& side);
// How many side inputs a layer reads (0 for the plain table layers).
size_t side_inputs_of(const torch::nn::AnyModule& layer);

// Builds a layer object of a graph: "Sequential" / "Residual" with "layers",
// a Linear with "weight": "<node>.<parameter>" (tied to a parameter that
// `root` already has), or any type of the table. Throws InvalidArgument naming
// `where` and the argument.
torch::nn::AnyModule build_graph_layer(const nlohmann::json& layer, const std::string& where,
                                       const torch::nn::Module& root);
// True for a Linear built with a tied "weight" (its only own parameter is the bias).
bool is_tied_linear(const torch::nn::Module& module);
// The parameter a tied Linear's weight is (the same tensor); null for any other module.
const at::Tensor* tied_weight_of(const torch::nn::Module& module);

}  // namespace accel::detail
