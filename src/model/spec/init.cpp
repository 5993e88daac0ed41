#include "model/spec/init.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include <cmath>
#include <string>
#include <unordered_set>

#include "accel/error.hpp"
#include "model/spec/attention.hpp"
#include "model/spec/chain.hpp"

namespace accel::detail {

namespace {

std::string shown(const nlohmann::json& value) { return value.dump().substr(0, 80); }

}  // namespace

std::optional<InitSpec> take_init_spec(nlohmann::json& spec) {
  if (!spec.is_object()) return std::nullopt;
  auto it = spec.find("init");
  if (it == spec.end()) return std::nullopt;
  require_arg(it->is_object(),
              "model spec: \"init\" must be an object {\"std\": 0.02, \"seed\": 0}, got " + shown(*it));
  InitSpec init;
  for (const auto& item : it->items()) {
    const auto& value = item.value();
    if (item.key() == "std") {
      require_arg(value.is_number() && std::isfinite(value.get<double>()) && value.get<double>() > 0,
                  "model spec: \"init\" \"std\" must be a positive finite number, got " + shown(value));
      init.std = value.get<double>();
    } else if (item.key() == "seed") {
      require_arg(value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0),
                  "model spec: \"init\" \"seed\" must be a non-negative integer, got " + shown(value));
      init.seed = value.get<uint64_t>();
    } else {
      fail(ErrorCode::InvalidArgument,
           "model spec: \"init\" has an unknown key \"" + item.key() + "\" (it takes \"std\" and \"seed\")");
    }
  }
  spec.erase(it);
  return init;
}

void apply_init(torch::nn::Module& root, const InitSpec& init) {
  at::Generator generator = at::detail::createCPUGenerator(init.seed);
  c10::NoGradGuard no_grad;
  // A tied weight is reached from two modules; draw it once, so the result does
  // not depend on which of them comes first.
  std::unordered_set<const void*> done;
  auto set = [&](at::Tensor& tensor, bool is_weight) {
    if (!tensor.defined() || !done.insert(tensor.unsafeGetTensorImpl()).second) return;
    if (is_weight) {
      tensor.normal_(0.0, init.std, generator);
    } else {
      tensor.zero_();
    }
  };
  for (const auto& module : root.modules(/*include_self=*/true)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {
      set(linear->weight, true);
      set(linear->bias, false);
    } else if (auto* embedding = module->as<torch::nn::Embedding>()) {
      set(embedding->weight, true);
      const auto& padding = embedding->options.padding_idx();
      if (padding) embedding->weight[*padding].zero_();
    } else if (auto* positions = module->as<PositionalEmbedding>()) {
      set(positions->weight, true);
    } else if (auto* attention = module->as<MultiheadAttention>()) {
      set(attention->in_proj_weight, true);
      set(attention->in_proj_bias, false);
    } else if (is_tied_linear(*module)) {
      // Its weight belongs to the node it is tied to; only the bias is its own.
      for (auto& parameter : module->named_parameters(/*recurse=*/false)) set(parameter.value(), false);
    }
  }
}

}  // namespace accel::detail
