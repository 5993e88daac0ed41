#include "model/tensor_parallel_split.hpp"

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "accel/error.hpp"
#include "model/spec/chain.hpp"
#include "model/spec/graph.hpp"

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
  if (dynamic_cast<const torch::nn::LinearImpl*>(module) || tied_weight_of(*module)) return "Linear";
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
  // SequenceLayer: a TransformerEncoderLayer whose norm1 and norm2 are
  // sequence_parallel; SequenceNorm: a LayerNorm graph node that is.
  enum class Kind { Attention, FeedForward, Node, SequenceLayer, SequenceNorm };
  std::string name;  // the module's dotted name (FeedForward, SequenceLayer: the transformer layer's)
  torch::nn::Module* module;
  Kind kind;
  GraphModuleImpl::NodeSplit::Style node_style = GraphModuleImpl::NodeSplit::Style::Columns;  // Kind::Node
};

// A Linear node's weight: its own, or the parameter a tied Linear shares
// ("weight": "wte.weight"; then not one of its own parameters); null for
// other modules.
const at::Tensor* linear_weight(torch::nn::Module* module) {
  if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(module)) return &linear->weight;
  return tied_weight_of(*module);
}

// A layer node of a graph spec (a direct child of the graph named in it).
const GraphModuleImpl::Node* graph_node(const GraphModuleImpl* graph, const std::string& name) {
  if (graph == nullptr || name.find('.') != std::string::npos) return nullptr;
  for (const auto& node : graph->nodes()) {
    if (node.name == name && node.kind == GraphModuleImpl::Kind::Layer) return &node;
  }
  return nullptr;
}

// An Embedding node "rowwise" (split by vocabulary) or a Linear node
// "colwise" / "colwise_rep" (split by output columns), checked.
Split plan_node_split(const std::string& name, torch::nn::Module* module, TpStyle style, int64_t size) {
  using Style = GraphModuleImpl::NodeSplit::Style;
  if (auto* embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(module)) {
    require_arg(style == TpStyle::Rowwise,
                "tp_plan: " + named(name, style) + ": an Embedding node is split by vocabulary rows with \"rowwise\"");
    const int64_t rows = embedding->weight.size(0);
    require_arg(rows % size == 0, "tp_plan: " + named(name, style) + ": tp_size " + std::to_string(size) +
                                      " does not divide its num_embeddings " + std::to_string(rows));
    return {name, module, Split::Kind::Node, Style::VocabEmbedding};
  }
  if (const at::Tensor* weight = linear_weight(module)) {
    require_arg(style == TpStyle::Colwise || style == TpStyle::ColwiseRep,
                "tp_plan: " + named(name, style) +
                    ": a Linear node is split by output columns with \"colwise\" (its output left split, for a "
                    "CausalLMLoss node) or \"colwise_rep\" (gathered whole)");
    const int64_t columns = weight->size(0);
    require_arg(columns % size == 0, "tp_plan: " + named(name, style) + ": tp_size " + std::to_string(size) +
                                         " does not divide its out_features " + std::to_string(columns));
    return {name, module, Split::Kind::Node, style == TpStyle::Colwise ? Style::Columns : Style::ColumnsGathered};
  }
  fail(ErrorCode::Unsupported, "tp_plan: " + named(name, style) + " is a " + kind_of(module) +
                                   " node; libaccel splits Embedding nodes (rowwise) and Linear nodes (colwise, "
                                   "colwise_rep) of a graph so far");
}

// A "sequence_parallel" entry, checked: a transformer layer's norm1 or norm2
// (the pair makes the layer sequence parallel: one split, on norm1's entry),
// or a LayerNorm node of the graph.
std::optional<Split> plan_sequence_split(const Tree& tree, const GraphModuleImpl* graph,
                                         const std::map<std::string, TpStyle>& styles, const std::string& name,
                                         torch::nn::Module* module) {
  const TpStyle style = TpStyle::SequenceParallel;
  const std::string leaf = last_of(name), parent = parent_of(name);
  torch::nn::Module* up = tree.find(parent);
  require_arg(dynamic_cast<torch::nn::LayerNormImpl*>(module) != nullptr,
              "tp_plan: " + named(name, style) + " is a " + kind_of(module) +
                  "; sequence_parallel applies to LayerNorm modules: a transformer layer's norm1 and norm2, or a "
                  "LayerNorm node of the graph");
  if (graph_node(graph, name)) return Split{name, module, Split::Kind::SequenceNorm};
  require(dynamic_cast<TransformerDecoderLayerImpl*>(up) == nullptr, ErrorCode::Unsupported,
          "tp_plan: " + named(name, style) +
              ": sequence parallelism of a TransformerDecoderLayer (its cross-attention's memory) is not built; "
              "TransformerEncoderLayer's norm1 and norm2 are");
  auto* layer = dynamic_cast<TransformerEncoderLayerImpl*>(up);
  require_arg(layer != nullptr && (leaf == "norm1" || leaf == "norm2"),
              "tp_plan: " + named(name, style) +
                  ": sequence_parallel applies to a TransformerEncoderLayer's norm1 and norm2, or a LayerNorm node "
                  "of the graph");
  const std::string because = named(name, style);
  expect_style(styles, join(parent, leaf == "norm1" ? "norm2" : "norm1"), style, because);
  // The layer's products split, so that its blocks are gathered into them and reduce-scattered out.
  expect_style(styles, join(parent, "self_attn"), TpStyle::Colwise, because);
  expect_style(styles, join(parent, "linear1"), TpStyle::Colwise, because);
  require_arg(
      graph_node(graph, parent) != nullptr,
      "tp_plan: " + because + ": the layer \"" + parent +
          "\" must be a node of a graph spec, which cuts its input into sequence blocks and gathers its output");
  require_arg(layer->batch_first(), "tp_plan: " + because + ": the layer \"" + parent +
                                        "\" needs batch_first: true (the sequence blocks are dim 1 of [N, L, E])");
  if (leaf != "norm1") return std::nullopt;
  return Split{parent, up, Split::Kind::SequenceLayer};
}

std::vector<Split> plan_splits(const Tree& tree, const GraphModuleImpl* graph,
                               const std::map<std::string, TpStyle>& styles, int64_t size) {
  std::vector<Split> splits;
  for (const auto& [name, style] : styles) {
    torch::nn::Module* module = tree.find(name);
    const std::string leaf = last_of(name), parent = parent_of(name);
    torch::nn::Module* up = tree.find(parent);
    if (style == TpStyle::SequenceParallel) {
      if (auto split = plan_sequence_split(tree, graph, styles, name, module)) splits.push_back(*split);
      continue;
    }
    if (graph_node(graph, name) && (dynamic_cast<torch::nn::EmbeddingImpl*>(module) || linear_weight(module))) {
      splits.push_back(plan_node_split(name, module, style, size));
      continue;
    }
    if (auto* attention = dynamic_cast<MultiheadAttentionImpl*>(module)) {
      require_arg(style == TpStyle::Colwise,
                  "tp_plan: " + named(name, style) +
                      ": an attention is split by heads with \"colwise\" (and \"rowwise\" on "
                      "its out_proj)");
      expect_style(styles, join(name, "out_proj"), TpStyle::Rowwise, named(name, style));
      require_arg(attention->num_heads() % size == 0, "tp_plan: " + named(name, style) + ": tp_size " +
                                                          std::to_string(size) + " does not divide its num_heads " +
                                                          std::to_string(attention->num_heads()));
      splits.push_back({name, module, Split::Kind::Attention});
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
      splits.push_back({parent, up, Split::Kind::FeedForward});
      continue;
    }
    fail(ErrorCode::Unsupported,
         "tp_plan: " + named(name, style) + " is a " + kind_of(module) +
             "; libaccel splits attention (by heads) and the feed-forward block of TransformerEncoderLayer and "
             "TransformerDecoderLayer, and Embedding and Linear graph nodes, so far; leave the entry out (the module "
             "stays whole on every rank)");
  }
  return splits;
}

// A split node's weight (an Embedding's, a Linear's own or tied one).
const at::Tensor* node_weight(torch::nn::Module* module) {
  if (auto* embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(module)) return &embedding->weight;
  return linear_weight(module);
}

// The graph's node splits, with the checks that need the whole graph: a
// weight tied between modules split in each of them (by the same rows), and
// a "colwise" node's output, split by columns, read only as the logits of
// CausalLMLoss nodes (which then compute the vocabulary-parallel loss) and
// not returned by the graph.
std::map<std::string, GraphModuleImpl::NodeSplit> plan_graph_splits(const Tree& tree, const GraphModuleImpl* graph,
                                                                    const std::vector<Split>& splits,
                                                                    const TensorParallelSlot& slot) {
  using NodeSplit = GraphModuleImpl::NodeSplit;
  std::map<std::string, NodeSplit> out;
  std::map<const void*, std::string> split_weights;  // a split node's weight -> the node
  for (const Split& split : splits) {
    if (split.kind == Split::Kind::SequenceNorm) out[split.name] = NodeSplit{NodeSplit::Style::SequenceNorm, slot};
    if (split.kind != Split::Kind::Node) continue;
    const at::Tensor& weight = *node_weight(split.module);
    const int64_t rows = weight.size(0), local = rows / slot.size;
    out[split.name] = NodeSplit{split.node_style, slot, slot.rank * local, rows};
    split_weights.emplace(weight.unsafeGetTensorImpl(), split.name);
  }
  for (const auto& [module_name, module] : tree.modules) {
    std::vector<std::pair<std::string, at::Tensor>> holds;
    for (const auto& parameter : module->named_parameters(/*recurse=*/false))
      holds.emplace_back(parameter.key(), parameter.value());
    if (const at::Tensor* tied = tied_weight_of(*module)) holds.emplace_back("weight", *tied);
    for (const auto& [key, tensor] : holds) {
      auto tied = split_weights.find(tensor.unsafeGetTensorImpl());
      if (tied == split_weights.end()) continue;
      require_arg(out.count(module_name) == 1 && key == "weight",
                  "tp_plan: \"" + join(module_name, key) + "\" is tied to \"" + tied->second +
                      ".weight\", which the plan splits by rows; split \"" + module_name +
                      "\" the same way (rowwise for an Embedding, colwise or colwise_rep for a Linear)");
    }
  }
  std::map<std::string, NodeSplit> losses;
  for (const auto& [name, split] : out) {
    if (split.style != NodeSplit::Style::Columns) continue;
    const auto& outputs = graph->output_names();
    require_arg(std::find(outputs.begin(), outputs.end(), name) == outputs.end(),
                "tp_plan: \"" + name +
                    "\" (colwise) leaves its output split by columns, but the graph returns it; "
                    "use colwise_rep to return it whole");
    for (const auto& node : graph->nodes()) {
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (node.inputs[i] != name) continue;
        require_arg(node.kind == GraphModuleImpl::Kind::CausalLMLoss && i == 0,
                    "tp_plan: \"" + name +
                        "\" (colwise) leaves its output split by columns, which only a "
                        "CausalLMLoss node reads (as its logits), but \"" +
                        node.name + "\" reads it; use colwise_rep to gather it whole");
        losses[node.name] = NodeSplit{NodeSplit::Style::VocabLoss, slot, split.start, split.vocabulary};
      }
    }
  }
  out.insert(losses.begin(), losses.end());
  return out;
}

// Keeps this rank's rows of a split node's weight (and a Linear's bias);
// `kept`: tensors already cut (a weight tied to another split node's).
ParameterSplits split_node(const Split& split, const TensorParallelSlot& slot, std::set<const void*>& kept) {
  ParameterSplits out;
  auto cut = [&](at::Tensor tensor) {
    if (!kept.insert(tensor.unsafeGetTensorImpl()).second) return;
    torch::NoGradGuard no_grad;
    tensor.set_data(shard_of(tensor.detach(), {0, 1}, slot.size, slot.rank));
  };
  // A tied Linear's weight is another node's parameter (listed under that name).
  if (const at::Tensor* tied = tied_weight_of(*split.module)) cut(*tied);
  for (const auto& parameter : split.module->named_parameters(/*recurse=*/false)) {
    if (parameter.key() != "weight" && parameter.key() != "bias") continue;
    cut(parameter.value());
    out.emplace_back(parameter.key(), TensorSplit{0, 1});
  }
  return out;
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
  auto* graph = dynamic_cast<GraphModuleImpl*>(&root);
  const std::vector<Split> splits = plan_splits(tree, graph, resolve(tree, used), slot.size);
  const std::map<std::string, GraphModuleImpl::NodeSplit> node_splits = plan_graph_splits(tree, graph, splits, slot);
  ParameterSplits made;
  std::set<const void*> kept;
  std::set<std::string> sequence_nodes;
  for (const Split& split : splits) {
    if (split.kind == Split::Kind::SequenceNorm || split.kind == Split::Kind::SequenceLayer) {
      sequence_nodes.insert(split.name);  // made once every split of the layer is (below)
      continue;
    }
    if (split.kind == Split::Kind::Node) {
      for (const auto& [name, how] : split_node(split, slot, kept)) made.emplace_back(join(split.name, name), how);
      continue;
    }
    ParameterSplits local;
    if (split.kind == Split::Kind::Attention) {
      local = dynamic_cast<MultiheadAttentionImpl&>(*split.module).split_heads(slot);
    } else if (auto* encoder = dynamic_cast<TransformerEncoderLayerImpl*>(split.module)) {
      local = encoder->split_feed_forward(slot);
    } else {
      local = dynamic_cast<TransformerDecoderLayerImpl&>(*split.module).split_feed_forward(slot);
    }
    for (auto& [name, how] : local) made.emplace_back(join(split.name, name), how);
  }
  for (const Split& split : splits) {
    if (split.kind == Split::Kind::SequenceLayer)
      dynamic_cast<TransformerEncoderLayerImpl&>(*split.module).use_sequence_parallel();
  }
  if (graph) graph->set_node_splits(node_splits);
  if (graph && !sequence_nodes.empty()) graph->set_sequence_parallel(sequence_nodes, slot);
  return made;
}

}  // namespace accel::detail
