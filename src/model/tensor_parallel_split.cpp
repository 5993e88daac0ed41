#include "model/tensor_parallel_split.hpp"

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

std::string parent_of(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(0, dot);
}

std::string last_of(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

bool is_transformer_layer(const torch::nn::Module* module) {
  return dynamic_cast<const TransformerEncoderLayerImpl*>(module) != nullptr ||
         dynamic_cast<const TransformerDecoderLayerImpl*>(module) != nullptr;
}

// What the module is, for errors.
std::string kind_of(const torch::nn::Module* module) {
  if (dynamic_cast<const MultiheadAttentionImpl*>(module)) return "MultiheadAttention";
  if (dynamic_cast<const TransformerEncoderLayerImpl*>(module)) return "TransformerEncoderLayer";
  if (dynamic_cast<const TransformerDecoderLayerImpl*>(module)) return "TransformerDecoderLayer";
  if (dynamic_cast<const torch::nn::LinearImpl*>(module)) return "Linear";
  // LibTorch's "torch::nn::LayerNormImpl" as the spec names it: "LayerNorm".
  std::string name = module->name();
  if (name.rfind("torch::nn::", 0) == 0) name = name.substr(11);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

struct Tree {
  std::map<std::string, std::shared_ptr<torch::nn::Module>> modules;  // by dotted name ("" is the root)
  explicit Tree(torch::nn::Module& root) {
    for (const auto& item : root.named_modules()) modules.emplace(item.key(), item.value());
  }
  torch::nn::Module* find(const std::string& name) const {
    auto it = modules.find(name);
    return it == modules.end() ? nullptr : it->second.get();
  }
  // The modules a plan can name, for the error of an entry that matches none.
  std::string splittable() const {
    std::string names;
    int shown = 0;
    for (const auto& [name, module] : modules) {
      const bool attention = dynamic_cast<MultiheadAttentionImpl*>(module.get()) != nullptr;
      const bool feed_forward =
          (last_of(name) == "linear1" || last_of(name) == "linear2") && is_transformer_layer(find(parent_of(name)));
      if (!attention && !feed_forward) continue;
      if (shown++ < 6) names += (names.empty() ? "" : ", ") + name;
    }
    if (shown > 6) names += ", ... (" + std::to_string(shown) + " in all)";
    return names.empty() ? "none: the model has no attention or transformer layer" : names;
  }
};

std::map<std::string, TpStyle> resolve(const Tree& tree, const TpPlan& plan) {
  std::map<std::string, TpStyle> styles;
  std::map<std::string, std::string> entry_of;
  for (const TpPlanEntry& entry : plan) {
    bool matched = false;
    for (const auto& [name, module] : tree.modules) {
      if (name.empty() || !tp_pattern_matches(entry.pattern, name)) continue;
      matched = true;
      auto [it, inserted] = styles.emplace(name, entry.style);
      require_arg(inserted || it->second == entry.style,
                  "tp_plan: module \"" + name + "\" is matched by \"" + entry_of[name] + "\" (" +
                      to_string(it->second) + ") and by \"" + entry.pattern + "\" (" + to_string(entry.style) + ")");
      entry_of.emplace(name, entry.pattern);
    }
    require_arg(matched, "tp_plan entry \"" + entry.pattern +
                             "\" matches no module of the model (modules it can split: " + tree.splittable() + ")");
  }
  return styles;
}

std::string named(const std::string& name, TpStyle style) { return "\"" + name + "\" (" + to_string(style) + ")"; }

void expect_style(const std::map<std::string, TpStyle>& styles, const std::string& partner, TpStyle wanted,
                  const std::string& because) {
  auto it = styles.find(partner);
  require_arg(it != styles.end() && it->second == wanted,
              "tp_plan: " + because + " needs \"" + partner + "\" to be " + to_string(wanted) + ", got " +
                  (it == styles.end() ? std::string("no entry") : std::string(to_string(it->second))));
}

// One split to make, checked before any is made.
struct Split {
  std::string name;  // the module's dotted name
  torch::nn::Module* module;
  bool attention;  // else the feed-forward block of a transformer layer (module is the layer)
};

std::vector<Split> plan_splits(const Tree& tree, const std::map<std::string, TpStyle>& styles, int64_t size) {
  std::vector<Split> splits;
  for (const auto& [name, style] : styles) {
    torch::nn::Module* module = tree.find(name);
    const std::string leaf = last_of(name), parent = parent_of(name);
    torch::nn::Module* up = tree.find(parent);
    require(style != TpStyle::SequenceParallel, ErrorCode::Unsupported,
            "tp_plan: " + named(name, style) + ": sequence parallelism is not built yet; leave the entry out");
    if (auto* attention = dynamic_cast<MultiheadAttentionImpl*>(module)) {
      require_arg(style == TpStyle::Colwise,
                  "tp_plan: " + named(name, style) +
                      ": an attention is split by heads with \"colwise\" (and \"rowwise\" on "
                      "its out_proj)");
      expect_style(styles, join(name, "out_proj"), TpStyle::Rowwise, named(name, style));
      require_arg(attention->num_heads() % size == 0, "tp_plan: " + named(name, style) + ": tp_size " +
                                                          std::to_string(size) + " does not divide its num_heads " +
                                                          std::to_string(attention->num_heads()));
      splits.push_back({name, module, true});
      continue;
    }
    if (leaf == "out_proj" && dynamic_cast<MultiheadAttentionImpl*>(up)) {
      require_arg(
          style == TpStyle::Rowwise,
          "tp_plan: " + named(name, style) + ": an attention's out_proj is \"rowwise\" (its attention \"colwise\")");
      expect_style(styles, parent, TpStyle::Colwise, named(name, style));
      continue;
    }
    if ((leaf == "linear1" || leaf == "linear2") && is_transformer_layer(up)) {
      const bool first = leaf == "linear1";
      const TpStyle wanted = first ? TpStyle::Colwise : TpStyle::Rowwise;
      require_arg(style == wanted, "tp_plan: " + named(name, style) + ": a transformer layer's " + leaf + " is \"" +
                                       to_string(wanted) + "\" (linear1 colwise, linear2 rowwise)");
      expect_style(styles, join(parent, first ? "linear2" : "linear1"), first ? TpStyle::Rowwise : TpStyle::Colwise,
                   named(name, style));
      if (!first) continue;
      const int64_t width = dynamic_cast<torch::nn::LinearImpl&>(*module).weight.size(0);
      require_arg(width % size == 0, "tp_plan: " + named(name, style) + ": tp_size " + std::to_string(size) +
                                         " does not divide dim_feedforward " + std::to_string(width));
      splits.push_back({parent, up, false});
      continue;
    }
    fail(ErrorCode::Unsupported,
         "tp_plan: " + named(name, style) + " is a " + kind_of(module) +
             "; libaccel splits attention (by heads) and the feed-forward block of TransformerEncoderLayer and "
             "TransformerDecoderLayer so far; leave the entry out (the module stays whole on every rank)");
  }
  return splits;
}

}  // namespace

TpPlan builtin_tp_plan(torch::nn::Module& root) {
  TpPlan plan;
  for (const auto& item : root.named_modules()) {
    const std::string& name = item.key();
    if (!is_transformer_layer(item.value().get())) continue;
    const bool decoder = dynamic_cast<TransformerDecoderLayerImpl*>(item.value().get()) != nullptr;
    for (const char* attention : {"self_attn", "multihead_attn"}) {
      if (std::string(attention) == "multihead_attn" && !decoder) continue;
      plan.push_back({join(name, attention), TpStyle::Colwise});
      plan.push_back({join(join(name, attention), "out_proj"), TpStyle::Rowwise});
    }
    plan.push_back({join(name, "linear1"), TpStyle::Colwise});
    plan.push_back({join(name, "linear2"), TpStyle::Rowwise});
  }
  return plan;
}

ParameterSplits split_for_tensor_parallel(torch::nn::Module& root, const std::optional<TpPlan>& plan,
                                          const TensorParallelSlot& slot) {
  const Tree tree(root);
  const TpPlan used = plan ? *plan : builtin_tp_plan(root);
  require(!used.empty(), ErrorCode::Unsupported,
          "tp_size " + std::to_string(slot.size) +
              ": the model has nothing libaccel can split (no TransformerEncoderLayer or TransformerDecoderLayer, "
              "and no tp_plan in its spec); TorchScript models and other layers are not split yet");
  // Dropout would draw its masks on each rank of a group apart, and the
  // ranks' copies of the residual stream would drift: refused until the
  // ranks share a generator for it.
  for (const auto& [name, module] : tree.modules) {
    const auto* dropout = dynamic_cast<const torch::nn::DropoutImpl*>(module.get());
    const auto* attention = dynamic_cast<const MultiheadAttentionImpl*>(module.get());
    const double p = dropout ? dropout->options.p() : attention ? attention->dropout() : 0.0;
    require(p == 0.0, ErrorCode::Unsupported,
            "tp_size " + std::to_string(slot.size) + ": \"" + name + "\" has dropout " + std::to_string(p) +
                ", which tensor parallelism does not run yet (each rank would draw its own masks); set it to 0");
  }
  const std::vector<Split> splits = plan_splits(tree, resolve(tree, used), slot.size);
  ParameterSplits made;
  for (const Split& split : splits) {
    ParameterSplits local;
    if (split.attention) {
      local = dynamic_cast<MultiheadAttentionImpl&>(*split.module).split_heads(slot);
    } else if (auto* encoder = dynamic_cast<TransformerEncoderLayerImpl*>(split.module)) {
      local = encoder->split_feed_forward(slot);
    } else {
      local = dynamic_cast<TransformerDecoderLayerImpl&>(*split.module).split_feed_forward(slot);
    }
    for (auto& [name, how] : local) made.emplace_back(join(split.name, name), how);
  }
  return made;
}

}  // namespace accel::detail
