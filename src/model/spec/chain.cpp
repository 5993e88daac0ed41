#include "model/spec/chain.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "accel/error.hpp"
#include "core/json.hpp"
#include "model/layer_args.hpp"
#include "model/sequential_spec.hpp"

namespace accel::detail {

namespace {

using torch::nn::AnyModule;

// lm_head.weight = wte.weight in PyTorch: the tensor is the other node's
// parameter and is not registered here, so named_parameters() lists it once,
// under its first name, as PyTorch's does.
class TiedLinearImpl : public torch::nn::Module {
 public:
  TiedLinearImpl(at::Tensor tied_weight, bool bias, std::string where)
      : weight_(std::move(tied_weight)), where_(std::move(where)) {
    if (bias) {
      // nn.Linear's bias initialisation: U(-1/sqrt(in), 1/sqrt(in)).
      const double bound = 1.0 / std::sqrt(static_cast<double>(weight_.size(1)));
      bias_ = register_parameter("bias", at::empty({weight_.size(0)}).uniform_(-bound, bound));
    }
  }
  const at::Tensor& tied_weight() const { return weight_; }
  at::Tensor forward(const at::Tensor& input) {
    require_arg(input.dim() >= 1 && input.size(-1) == weight_.size(1),
                where_ + ": the input's last dim must be in_features " + std::to_string(weight_.size(1)) +
                    ", got shape " + c10::str(input.sizes()));
    return at::linear(input, weight_, bias_);
  }

 private:
  at::Tensor weight_;  // shares storage and identity with the tied parameter (Module::to keeps both)
  at::Tensor bias_;
  std::string where_;
};
TORCH_MODULE(TiedLinear);

AnyModule tied_linear(const nlohmann::json& layer, const std::string& where, const torch::nn::Module& root) {
  LayerArgs args(layer, where + " (Linear)");
  int64_t in_features = args.required_int("in_features", kPositiveInt);
  int64_t out_features = args.required_int("out_features", kPositiveInt);
  bool bias = args.bool_or("bias", true);
  const std::string& target = layer.at("weight").get_ref<const std::string&>();
  args.choice_or("weight", target, {target});  // marks the key as read
  args.reject_unknown_keys();
  const auto parameters = root.named_parameters(true);  // find() points into it: keep it alive
  const at::Tensor* tied = parameters.find(target);
  if (tied == nullptr) {
    args.fail_argument("weight", "ties to \"" + target + "\", which names no parameter of an earlier node");
  }
  if (tied->sizes() != at::IntArrayRef{out_features, in_features}) {
    args.fail_argument("weight", "ties to \"" + target + "\" of shape " + c10::str(tied->sizes()) +
                                     ", but the layer needs [out_features, in_features] = [" +
                                     std::to_string(out_features) + ", " + std::to_string(in_features) + "]");
  }
  return AnyModule(TiedLinear(*tied, bias, args.where()));
}

void require_submodule_name(const std::string& name, const std::string& where) {
  require_arg(!name.empty() && name.find('.') == std::string::npos,
              where + ": a name must be non-empty and contain no \".\", got \"" + name + "\"");
}

AnyModule chain(const nlohmann::json& spec, const std::string& where, const torch::nn::Module& root, bool residual) {
  const std::string type = residual ? "Residual" : "Sequential";
  for (const auto& item : spec.items()) {
    if (item.key() != "type" && item.key() != "layers") {
      fail(ErrorCode::InvalidArgument,
           where + " (" + type + "): unknown argument \"" + item.key() + "\" (a " + type + " has only \"layers\")");
    }
  }
  auto layers = spec.find("layers");
  if (layers == spec.end() || !layers->is_array() || layers->empty()) {
    fail(ErrorCode::InvalidArgument, where + " (" + type + "): \"layers\" must be a non-empty list of layers, got " +
                                         (layers == spec.end() ? std::string("nothing") : describe_json(*layers)));
  }
  Chain module(residual);
  std::vector<std::string> names;
  for (size_t i = 0; i < layers->size(); ++i) {
    const nlohmann::json& item = (*layers)[i];
    std::string name = std::to_string(i);
    nlohmann::json layer = item;
    if (item.is_object() && item.contains("name")) {
      const std::string at = where + " layer " + std::to_string(i);
      require_arg(item["name"].is_string(), at + ": \"name\" must be a string, got " + describe_json(item["name"]));
      name = item["name"].get<std::string>();
      require_submodule_name(name, at);
      require_arg(std::find(names.begin(), names.end(), name) == names.end(),
                  at + ": the name \"" + name + "\" is used twice in this " + type);
      layer.erase("name");
    }
    names.push_back(name);
    module->append(name, build_graph_layer(layer, where + " layer " + name, root));
  }
  return AnyModule(module);
}

}  // namespace

void ChainImpl::append(const std::string& name, AnyModule layer) {
  register_module(name, layer.ptr());
  max_side_ = std::max(max_side_, side_inputs_of(layer));
  layers_.push_back(std::move(layer));
}

at::Tensor ChainImpl::forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) {
  at::Tensor x = input;
  for (auto& layer : layers_) x = call_layer(layer, x, side);
  return residual_ ? input + x : x;
}

size_t side_inputs_of(const AnyModule& layer) {
  const auto* taker = dynamic_cast<const SideInputs*>(layer.ptr().get());
  return taker ? taker->max_side_inputs() : 0;
}

at::Tensor call_layer(AnyModule& layer, const at::Tensor& input, const std::vector<at::Tensor>& side) {
  auto* taker = dynamic_cast<SideInputs*>(layer.ptr().get());
  if (taker == nullptr || side.empty()) return layer.forward(input);
  const size_t n = std::min(side.size(), taker->max_side_inputs());
  return taker->forward_with(input, std::vector<at::Tensor>(side.begin(), side.begin() + static_cast<ptrdiff_t>(n)));
}

bool is_tied_linear(const torch::nn::Module& module) { return dynamic_cast<const TiedLinearImpl*>(&module) != nullptr; }

const at::Tensor* tied_weight_of(const torch::nn::Module& module) {
  const auto* tied = dynamic_cast<const TiedLinearImpl*>(&module);
  return tied ? &tied->tied_weight() : nullptr;
}

AnyModule build_graph_layer(const nlohmann::json& layer, const std::string& where, const torch::nn::Module& root) {
  auto type = layer.is_object() ? layer.find("type") : layer.end();
  if (layer.is_object() && type != layer.end() && type->is_string()) {
    const auto& name = type->get_ref<const std::string&>();
    if (name == "Sequential" || name == "Residual") return chain(layer, where, root, name == "Residual");
    auto weight = layer.find("weight");
    if (name == "Linear" && weight != layer.end() && weight->is_string()) return tied_linear(layer, where, root);
  }
  return build_layer(layer, where);
}

}  // namespace accel::detail
