#include "model/spec/graph.hpp"

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <algorithm>
#include <map>
#include <set>

#include "accel/error.hpp"
#include "accel/loss.hpp"
#include "core/json.hpp"
#include "model/layer_args.hpp"
#include "model/spec/chain.hpp"

namespace accel::detail {

namespace {

using Node = GraphModuleImpl::Node;
using Kind = GraphModuleImpl::Kind;

std::string in_quotes(const std::string& name) { return "\"" + name + "\""; }

void require_name(const nlohmann::json& value, const std::string& where, const char* what) {
  require_arg(value.is_string(), where + ": " + what + " must be a string, got " + describe_json(value));
  const auto& name = value.get_ref<const std::string&>();
  // Node names become submodule names, and "." separates those in parameter names.
  require_arg(!name.empty() && name.find('.') == std::string::npos,
              where + ": " + what + " must be non-empty and contain no \".\", got " + in_quotes(name));
}

std::string shape_of(const at::Tensor& t) { return c10::str(t.sizes()); }

// The ids an Embedding reads must be integers inside its table: out of range,
// LibTorch throws on the CPU and asserts on a GPU, killing the process.
void check_ids(const Node& node, const at::Tensor& ids) {
  const auto* embedding = dynamic_cast<const torch::nn::EmbeddingImpl*>(node.module.ptr().get());
  if (embedding == nullptr) return;
  const std::string& input = node.inputs.front();
  require_arg(
      at::isIntegralType(ids.scalar_type(), false),
      node.where + ": input " + in_quotes(input) + " must hold integer ids, got " + c10::toString(ids.scalar_type()));
  if (ids.numel() == 0) return;
  const int64_t rows = embedding->options.num_embeddings();
  const int64_t low = ids.min().item<int64_t>(), high = ids.max().item<int64_t>();
  require_arg(low >= 0 && high < rows, node.where + ": input " + in_quotes(input) + " must hold ids in [0, " +
                                           std::to_string(rows) + "), got " + std::to_string(low < 0 ? low : high));
}

at::Tensor causal_lm_loss(const Node& node, const at::Tensor& logits, const at::Tensor& labels) {
  return accel::causal_lm_loss(logits, labels, LossOptions{node.ignore_index, node.label_smoothing}, node.where);
}

// causal_lm_loss over logits split by vocabulary: the same shift, ignored
// labels and mean over the counted tokens, the cross-entropy computed across
// the ranks' columns (parallel/tensor_parallel.hpp).
at::Tensor vocab_parallel_causal_lm_loss(const Node& node, const at::Tensor& logits, const at::Tensor& labels,
                                         const GraphModuleImpl::NodeSplit& split) {
  require(node.label_smoothing == 0.0, ErrorCode::Unsupported,
          node.where + ": label_smoothing with logits split by vocabulary (tensor parallelism) is not built yet");
  require_arg(logits.dim() >= 2 && at::isFloatingType(logits.scalar_type()),
              node.where + ": the logits must be floating point [N, L, V] or [L, V], got " + shape_of(logits));
  require_arg(at::isIntegralType(labels.scalar_type(), false),
              node.where + ": the labels must hold integer token ids, got " + c10::toString(labels.scalar_type()));
  require_arg(labels.sizes() == logits.sizes().slice(0, logits.dim() - 1),
              node.where + ": the labels must have shape " + c10::str(logits.sizes().slice(0, logits.dim() - 1)) +
                  ", got " + shape_of(labels));
  const int64_t width = logits.size(-1), length = logits.size(-2);
  at::Tensor shifted_logits = logits.narrow(-2, 0, length - 1).reshape({-1, width}).to(at::kFloat);
  at::Tensor shifted_labels = labels.narrow(-1, 1, length - 1).reshape({-1}).to(at::kLong);
  const at::Tensor counted = shifted_labels != node.ignore_index;
  if (shifted_labels.numel() > 0) {
    const at::Tensor outside = counted & ((shifted_labels < 0) | (shifted_labels >= split.vocabulary));
    require_arg(!outside.any().item<bool>(), node.where + ": the labels must be in [0, " +
                                                 std::to_string(split.vocabulary) + ") or ignore_index " +
                                                 std::to_string(node.ignore_index));
  }
  at::Tensor losses =
      vocab_parallel_cross_entropy(shifted_logits, shifted_labels, split.start, node.ignore_index, *split.slot.group);
  // cross_entropy's mean: over the counted tokens (none counted: NaN, as PyTorch's).
  return losses.sum() / counted.sum().to(losses.scalar_type());
}

// Whether a layer can run on a block of the sequence (context parallelism):
// it works on each token alone, or it is one of the layers that context
// parallelism makes read the whole sequence (self-attention, positions).
bool runs_on_blocks(const torch::nn::Module& module) {
  if (dynamic_cast<const ChainImpl*>(&module) != nullptr) {
    const auto children = module.children();
    return std::all_of(children.begin(), children.end(),
                       [](const std::shared_ptr<torch::nn::Module>& child) { return runs_on_blocks(*child); });
  }
  return dynamic_cast<const torch::nn::EmbeddingImpl*>(&module) ||
         dynamic_cast<const torch::nn::LinearImpl*>(&module) || is_tied_linear(module) ||
         dynamic_cast<const torch::nn::LayerNormImpl*>(&module) ||
         dynamic_cast<const torch::nn::DropoutImpl*>(&module) || dynamic_cast<const torch::nn::GELUImpl*>(&module) ||
         dynamic_cast<const torch::nn::ReLUImpl*>(&module) || dynamic_cast<const torch::nn::LeakyReLUImpl*>(&module) ||
         dynamic_cast<const torch::nn::SigmoidImpl*>(&module) || dynamic_cast<const torch::nn::TanhImpl*>(&module) ||
         dynamic_cast<const PositionalEmbeddingImpl*>(&module) ||
         dynamic_cast<const MultiheadAttentionImpl*>(&module) ||
         dynamic_cast<const TransformerEncoderLayerImpl*>(&module);
}

}  // namespace

bool is_graph_spec(const nlohmann::json& spec) { return spec.is_object() && spec.contains("nodes"); }

GraphModuleImpl::GraphModuleImpl(const nlohmann::json& spec) {
  for (const auto& item : spec.items()) {
    require_arg(item.key() == "inputs" || item.key() == "nodes" || item.key() == "outputs",
                "model graph: unknown key " + in_quotes(item.key()) +
                    " (a graph has \"inputs\", \"nodes\", \"outputs\" and optionally \"init\")");
  }
  for (const char* key : {"inputs", "nodes", "outputs"}) {
    auto it = spec.find(key);
    require_arg(it != spec.end() && it->is_array() && !it->empty(),
                std::string("model graph: \"") + key + "\" must be a non-empty list, got " +
                    (it == spec.end() ? std::string("nothing") : describe_json(*it)));
  }
  parse_inputs(spec["inputs"]);
  parse_nodes(spec["nodes"]);
  parse_outputs(spec["outputs"]);
  sort_nodes();
}

void GraphModuleImpl::parse_inputs(const nlohmann::json& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string where = "model graph: input " + std::to_string(i);
    Input input;
    if (inputs[i].is_object()) {
      for (const auto& item : inputs[i].items()) {
        require_arg(item.key() == "name" || item.key() == "optional",
                    where + ": unknown key " + in_quotes(item.key()) + " (an input has \"name\" and \"optional\")");
      }
      require_arg(inputs[i].contains("name"), where + ": missing \"name\"");
      require_name(inputs[i]["name"], where, "\"name\"");
      input.name = inputs[i]["name"].get<std::string>();
      if (inputs[i].contains("optional")) {
        const auto& optional = inputs[i]["optional"];
        require_arg(optional.is_boolean(),
                    where + ": \"optional\" must be true or false, got " + describe_json(optional));
        input.optional = optional.get<bool>();
      }
    } else {
      require_name(inputs[i], where, "an input");
      input.name = inputs[i].get<std::string>();
    }
    for (const auto& other : inputs_) {
      require_arg(other.name != input.name, where + ": the name " + in_quotes(input.name) + " is used twice");
    }
    inputs_.push_back(input);
  }
}

void GraphModuleImpl::parse_nodes(const nlohmann::json& nodes) {
  std::string previous = inputs_.front().name;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node node = parse_node(nodes[i], i, previous);
    // Registered in spec order, as a PyTorch __init__ assigns attributes, so
    // the state dict lists the nodes in the order the spec writes them.
    if (node.kind == Kind::Layer) register_module(node.name, node.module.ptr());
    previous = node.name;
    nodes_.push_back(std::move(node));
  }
}

Node GraphModuleImpl::parse_node(const nlohmann::json& spec, size_t index, const std::string& previous) {
  const std::string at = "model graph: node " + std::to_string(index);
  require_arg(spec.is_object(), at + ": must be an object with \"name\" and \"type\", got " + describe_json(spec));
  require_arg(spec.contains("name"), at + ": missing \"name\"");
  require_name(spec["name"], at, "\"name\"");
  Node node;
  node.name = spec["name"].get<std::string>();
  const std::string where = "node " + in_quotes(node.name);
  for (const auto& input : inputs_) {
    require_arg(input.name != node.name, where + ": the name is also a graph input's");
  }
  for (const auto& other : nodes_) require_arg(other.name != node.name, where + ": the name is used twice");
  require_arg(
      spec.contains("type") && spec["type"].is_string(),
      where + ": \"type\" must be a string, got " + (spec.contains("type") ? describe_json(spec["type"]) : "nothing"));
  const std::string type = spec["type"].get<std::string>();
  node.where = where + " (" + type + ")";
  node.type = type;

  auto input = spec.find("input");
  if (input == spec.end()) {
    node.inputs = {previous};  // like a chain: the node above, or the first graph input
  } else if (input->is_string()) {
    node.inputs = {input->get<std::string>()};
  } else {
    require_arg(input->is_array() && !input->empty(),
                node.where + ": \"input\" must be a name or a non-empty list of names, got " + describe_json(*input));
    for (const auto& name : *input) {
      require_arg(name.is_string(), node.where + ": \"input\" must list names, got " + describe_json(name));
      node.inputs.push_back(name.get<std::string>());
    }
  }

  nlohmann::json layer = spec;
  layer.erase("name");
  layer.erase("input");
  const size_t count = node.inputs.size();
  if (type == "Add" || type == "Concat" || type == "CausalLMLoss") {
    LayerArgs args(layer, node.where);
    if (type == "Add") node.kind = Kind::Add;
    if (type == "Concat") {
      node.kind = Kind::Concat;
      node.dim = args.int_or("dim", 0, kAnyInt);  // torch.cat's default
    }
    if (type == "CausalLMLoss") {
      node.kind = Kind::CausalLMLoss;
      node.ignore_index = args.int_or("ignore_index", -100, kAnyInt);
      node.label_smoothing = args.real_or("label_smoothing", 0.0, kProbability);
    }
    args.reject_unknown_keys();
    if (node.kind == Kind::CausalLMLoss) {
      require_arg(count == 2, node.where + ": \"input\" must name the logits and the labels, got " +
                                  std::to_string(count) + " name(s)");
    } else {
      require_arg(count >= 2,
                  node.where + ": \"input\" must list at least 2 names to merge, got " + std::to_string(count));
    }
    return node;
  }
  node.module = build_graph_layer(layer, where, *this);
  const size_t side = side_inputs_of(node.module);
  require_arg(count <= 1 + side, node.where + ": takes at most " + std::to_string(1 + side) + " input(s), got " +
                                     std::to_string(count) + " in \"input\"");
  return node;
}

void GraphModuleImpl::parse_outputs(const nlohmann::json& outputs) {
  for (const auto& output : outputs) {
    require_name(output, "model graph: \"outputs\"", "an output");
    const std::string name = output.get<std::string>();
    bool known = std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& n) { return n.name == name; });
    require_arg(known, "model graph: output " + in_quotes(name) + " names no node");
    require_arg(std::find(outputs_.begin(), outputs_.end(), name) == outputs_.end(),
                "model graph: output " + in_quotes(name) + " is listed twice");
    outputs_.push_back(name);
  }
}

// Dependency order (Kahn's algorithm, spec order among ready nodes); a node
// left over waits on a cycle, which is found by following its inputs.
void GraphModuleImpl::sort_nodes() {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].name] = i;
  std::set<std::string> known;
  for (const auto& input : inputs_) known.insert(input.name);
  for (const auto& node : nodes_) {
    for (const auto& name : node.inputs) {
      require_arg(known.count(name) || index.count(name),
                  node.where + ": input " + in_quotes(name) + " names no graph input and no node");
    }
  }
  std::vector<Node> sorted;
  std::vector<bool> done(nodes_.size(), false);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (done[i]) continue;
      bool ready = std::all_of(nodes_[i].inputs.begin(), nodes_[i].inputs.end(),
                               [&](const std::string& name) { return known.count(name) > 0; });
      if (!ready) continue;
      done[i] = progress = true;
      known.insert(nodes_[i].name);
      sorted.push_back(nodes_[i]);
    }
  }
  if (sorted.size() == nodes_.size()) {
    nodes_ = std::move(sorted);
    return;
  }
  size_t at = static_cast<size_t>(std::find(done.begin(), done.end(), false) - done.begin());
  std::vector<size_t> path;
  while (std::find(path.begin(), path.end(), at) == path.end()) {
    path.push_back(at);
    for (const auto& name : nodes_[at].inputs) {
      if (!known.count(name)) {
        at = index.at(name);
        break;
      }
    }
  }
  std::string cycle;
  for (auto it = std::find(path.begin(), path.end(), at); it != path.end(); ++it)
    cycle += in_quotes(nodes_[*it].name) + " -> ";
  fail(ErrorCode::InvalidArgument, "model graph: the nodes form a cycle: " + cycle + in_quotes(nodes_[at].name) +
                                       " (each takes the next one's output as input)");
}

at::Tensor GraphModuleImpl::run_node(const Node& node, const std::vector<at::Tensor>& args) const {
  switch (node.kind) {
    case Kind::Add: {
      at::Tensor sum = args[0];
      for (size_t i = 1; i < args.size(); ++i) sum = sum + args[i];
      return sum;
    }
    case Kind::Concat: return at::cat(args, node.dim);
    case Kind::CausalLMLoss: {
      auto split = node_splits_.find(node.name);
      if (split != node_splits_.end()) return vocab_parallel_causal_lm_loss(node, args[0], args[1], split->second);
      return causal_lm_loss(node, args[0], args[1]);
    }
    case Kind::Layer: break;
  }
  auto split = node_splits_.find(node.name);
  if (split != node_splits_.end()) {
    require_arg(args.size() == 1, node.where + ": a layer split for tensor parallelism takes one input");
    auto unit = node_units_.find(node.name);
    // By value: activation checkpointing calls the body again after run_node returned.
    const NodeSplit* how = &split->second;
    auto body = [this, &node, how](const at::Tensor& x) { return run_split_layer(node, *how, x); };
    return unit == node_units_.end() || !unit_runner_ ? body(args[0])
                                                      : unit_runner_(unit->second, args[0], with_this_cut(body));
  }
  check_ids(node, args[0]);
  auto module = node.module;  // AnyModule::forward is not const; the copy shares the module
  std::vector<at::Tensor> side(args.begin() + 1, args.end());
  auto unit = node_units_.find(node.name);
  if (unit == node_units_.end() || !unit_runner_) return call_layer(module, args[0], side);
  for (size_t i = 0; i < side.size(); ++i) {
    require(!side[i].defined() || !side[i].requires_grad(), ErrorCode::Unsupported,
            node.where + ": under FULL_SHARD a layer's gradient flows to its first input only, but input " +
                in_quotes(node.inputs[i + 1]) + " needs one too");
  }
  return unit_runner_(unit->second, args[0], with_this_cut([module, side](const at::Tensor& x) mutable {
                        return call_layer(module, x, side);
                      }));
}

GraphModuleImpl::Body GraphModuleImpl::with_this_cut(Body body) const {
  if (!context_slot_.active()) return body;
  // Activation checkpointing runs the body again in backward, after later
  // forwards may have cut other sequences: it runs under this forward's cut.
  return [body = std::move(body), cut = *cut_, current = cut_](const at::Tensor& x) {
    struct Restore {
      SequenceCut& target;
      SequenceCut saved;
      ~Restore() { target = saved; }
    } restore{*current, *current};
    *current = cut;
    return body(x);
  };
}

at::Tensor GraphModuleImpl::run_split_layer(const Node& node, const NodeSplit& split, const at::Tensor& input) const {
  ProcessGroup& group = *split.slot.group;
  if (split.style == NodeSplit::Style::VocabEmbedding) {
    const auto& embedding = dynamic_cast<const torch::nn::EmbeddingImpl&>(*node.module.ptr());
    require_arg(at::isIntegralType(input.scalar_type(), false),
                node.where + ": input " + in_quotes(node.inputs.front()) + " must hold integer ids, got " +
                    c10::toString(input.scalar_type()));
    if (input.numel() > 0) {
      const int64_t low = input.min().item<int64_t>(), high = input.max().item<int64_t>();
      require_arg(low >= 0 && high < split.vocabulary, node.where + ": input " + in_quotes(node.inputs.front()) +
                                                           " must hold ids in [0, " + std::to_string(split.vocabulary) +
                                                           "), got " + std::to_string(low < 0 ? low : high));
    }
    return vocab_parallel_embedding(input.to(at::kLong), embedding.weight, split.start, group);
  }
  if (split.style == NodeSplit::Style::SequenceNorm) {  // a block's tokens: the gradients summed over the group
    const auto& norm = dynamic_cast<const torch::nn::LayerNormImpl&>(*node.module.ptr());
    auto shared = [&group](const at::Tensor& p) { return p.defined() ? copy_to_tensor_parallel(p, group) : p; };
    return at::layer_norm(input, norm.options.normalized_shape(), shared(norm.weight), shared(norm.bias),
                          norm.options.eps());
  }
  // A Linear, or one whose weight is tied to another node's (already split with it).
  const torch::nn::Module& module = *node.module.ptr();
  const auto* linear = dynamic_cast<const torch::nn::LinearImpl*>(&module);
  const at::Tensor& weight = linear ? linear->weight : *tied_weight_of(module);
  at::Tensor bias = linear ? linear->bias : at::Tensor();
  if (!linear) {
    const auto own = module.named_parameters(/*recurse=*/false);
    if (const at::Tensor* tied_bias = own.find("bias")) bias = *tied_bias;
  }
  at::Tensor output = at::linear(copy_to_tensor_parallel(input, group), weight, bias);
  return split.style == NodeSplit::Style::ColumnsGathered ? gather_from_tensor_parallel(output, group) : output;
}

void GraphModuleImpl::set_context_parallel(const ContextParallelSlot& slot) {
  if (!slot.active()) {  // undone
    for (const Node& node : nodes_) {
      if (node.kind != Kind::Layer) continue;
      for (const auto& module : node.module.ptr()->modules(/*include_self=*/true)) {
        if (auto* positions = dynamic_cast<PositionalEmbeddingImpl*>(module.get()))
          positions->use_context_parallel(nullptr);
        if (auto* attention = dynamic_cast<MultiheadAttentionImpl*>(module.get()))
          attention->use_context_parallel({}, nullptr);
      }
    }
    context_nodes_.clear();
    context_slot_ = slot;
    return;
  }
  require(sequence_nodes_.empty(), ErrorCode::Unsupported,
          "cp_size " + std::to_string(slot.size) + ": context parallelism with the tp_plan's sequence_parallel (node " +
              in_quotes(*sequence_nodes_.begin()) +
              ") is not built; drop the sequence_parallel entries or use cp_size 1");
  // Checked on every node before any is changed.
  std::set<std::string> block_nodes;
  for (const Node& node : nodes_) {
    if (node.kind != Kind::Layer || !runs_on_blocks(*node.module.ptr())) continue;
    for (const auto& module : node.module.ptr()->modules(/*include_self=*/true)) {
      bool batch_first = true;
      if (auto* positions = dynamic_cast<PositionalEmbeddingImpl*>(module.get()))
        batch_first = positions->batch_first();
      if (auto* attention = dynamic_cast<MultiheadAttentionImpl*>(module.get())) batch_first = attention->batch_first();
      if (auto* layer = dynamic_cast<TransformerEncoderLayerImpl*>(module.get())) batch_first = layer->batch_first();
      require(batch_first, ErrorCode::Unsupported,
              node.where + ": context parallelism (cp_size " + std::to_string(slot.size) +
                  ") cuts the sequence of batch-first [N, L, E] activations; set \"batch_first\": true");
    }
    block_nodes.insert(node.name);
  }
  for (const Node& node : nodes_) {
    if (!block_nodes.count(node.name)) continue;
    for (const auto& module : node.module.ptr()->modules(/*include_self=*/true)) {
      if (auto* positions = dynamic_cast<PositionalEmbeddingImpl*>(module.get()))
        positions->use_context_parallel(cut_.get());
      if (auto* attention = dynamic_cast<MultiheadAttentionImpl*>(module.get()))
        attention->use_context_parallel(slot, cut_.get());
    }
  }
  context_nodes_ = std::move(block_nodes);
  context_slot_ = slot;
}

bool GraphModuleImpl::to_context_layout(const Node& node, std::vector<at::Tensor>& args,
                                        const std::set<std::string>& blocks) const {
  bool any_block = false;
  for (size_t i = 0; i < args.size(); ++i) any_block = any_block || (args[i].defined() && blocks.count(node.inputs[i]));
  const bool block_out = context_nodes_.count(node.name) == 1 || (node.kind == Kind::Add && any_block);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined()) continue;
    const bool is_block = blocks.count(node.inputs[i]) == 1;
    const bool wants_block = block_out && (i == 0 || node.kind == Kind::Add);  // side inputs (masks) stay whole
    if (is_block && !wants_block) {
      args[i] = gather_context_blocks(args[i], *cut_, context_slot_);
    } else if (!is_block && wants_block) {
      const bool ids = !at::isFloatingType(args[i].scalar_type());
      require_arg(args[i].dim() >= (ids ? 2 : 3),
                  node.where + ": context parallelism cuts input " + in_quotes(node.inputs[i]) +
                      " along the sequence, so it must be " + (ids ? "ids [N, L]" : "[N, L, E]") + ", got " +
                      shape_of(args[i]));
      if (!cut_->set()) *cut_ = cut_sequence(args[i].size(1), context_slot_);
      require_arg(args[i].size(1) == cut_->length, node.where + ": input " + in_quotes(node.inputs[i]) + " " +
                                                       shape_of(args[i]) + " has " + std::to_string(args[i].size(1)) +
                                                       " positions, but this forward's sequence has " +
                                                       std::to_string(cut_->length));
      args[i] = context_block(args[i], *cut_);
    }
  }
  return block_out;
}

at::Tensor GraphModuleImpl::context_causal_lm_loss(const Node& node, const at::Tensor& logits,
                                                   const at::Tensor& labels_in) const {
  const SequenceCut& cut = *cut_;
  require_arg(at::isFloatingType(logits.scalar_type()) && logits.dim() == 3,
              node.where + ": the logits must be floating point [N, L, V], got " + shape_of(logits));
  require_arg(at::isIntegralType(labels_in.scalar_type(), false),
              node.where + ": the labels must hold integer token ids, got " + c10::toString(labels_in.scalar_type()));
  require_arg(labels_in.dim() == 2 && labels_in.size(0) == logits.size(0) && labels_in.size(1) == cut.length,
              node.where + ": the labels must have shape [" + std::to_string(logits.size(0)) + ", " +
                  std::to_string(cut.length) + "], got " + shape_of(labels_in));
  auto split = node_splits_.find(node.name);
  const bool by_vocabulary = split != node_splits_.end();
  require(!by_vocabulary || node.label_smoothing == 0.0, ErrorCode::Unsupported,
          node.where + ": label_smoothing with logits split by vocabulary (tensor parallelism) is not built yet");
  const int64_t vocabulary = by_vocabulary ? split->second.vocabulary : logits.size(-1);
  // Position t predicts label t + 1, across the blocks' edges: the labels are
  // shifted whole, then cut; the last position and the padding predict nothing.
  const at::Tensor labels = labels_in.to(at::kLong);
  const at::Tensor shifted = at::cat(
      {labels.narrow(1, 1, cut.length - 1), at::full({labels.size(0), 1}, node.ignore_index, labels.options())}, 1);
  const at::Tensor targets = context_block(shifted, cut, static_cast<double>(node.ignore_index)).reshape({-1});
  const at::Tensor counted = targets != node.ignore_index;
  if (targets.numel() > 0) {
    const at::Tensor outside = counted & ((targets < 0) | (targets >= vocabulary));
    require_arg(!outside.any().item<bool>(), node.where + ": the labels must be in [0, " + std::to_string(vocabulary) +
                                                 ") or ignore_index " + std::to_string(node.ignore_index));
  }
  const at::Tensor rows = logits.reshape({-1, logits.size(-1)});
  const at::Tensor losses =
      by_vocabulary
          ? vocab_parallel_cross_entropy(rows.to(at::kFloat), targets, split->second.start, node.ignore_index,
                                         *split->second.slot.group)
          : at::cross_entropy_loss(rows, targets, {}, at::Reduction::None, node.ignore_index, node.label_smoothing);
  // cross_entropy's mean over the whole sequence's counted tokens (none: NaN, as PyTorch's).
  return context_parallel_mean(losses.sum(), counted.sum(), context_slot_);
}

GraphModuleImpl::NamedTensors GraphModuleImpl::forward_named(const NamedTensors& given) {
  std::map<std::string, at::Tensor> values;
  std::string expected;
  for (const auto& input : inputs_) {
    expected += (expected.empty() ? "" : ", ") + input.name + (input.optional ? " (optional)" : "");
  }
  for (const auto& entry : given) {
    const std::string& name = entry.first;  // a structured binding cannot be captured before C++20
    bool known = std::any_of(inputs_.begin(), inputs_.end(), [&](const Input& i) { return i.name == name; });
    require_arg(known, "forward: unknown input " + in_quotes(name) + "; this model takes " + expected);
    values[name] = entry.second;
  }
  for (const auto& input : inputs_) {
    require_arg(input.optional || values.count(input.name),
                "forward: missing input " + in_quotes(input.name) + "; this model takes " + expected);
  }
  std::set<std::string> blocks;  // values held as sequence blocks (set_sequence_parallel, set_context_parallel)
  *cut_ = SequenceCut{};         // the first cut of this forward sets it
  for (const auto& node : nodes_) {
    std::vector<at::Tensor> args;
    for (const auto& name : node.inputs) args.push_back(values[name]);
    // An absent optional input leaves out what depends on it: the layer's
    // input, a merge's operand, the loss's labels. Absent masks just mask nothing.
    bool all_needed = node.kind == Kind::Layer
                          ? args[0].defined()
                          : std::all_of(args.begin(), args.end(), [](const at::Tensor& t) { return t.defined(); });
    if (!all_needed) continue;
    if (!node_devices_.empty()) move_to_node_device(node, args);
    // Releases what the hook brought in even when the layer throws.
    struct Leave {
      const NodeHook& hook;
      const Node& node;
      ~Leave() {
        if (hook && node.kind == Kind::Layer) hook(node.name, false);
      }
    };
    try {
      Leave leave{node_hook_, node};  // first, so a half-done bring-in is released too
      if (node_hook_ && node.kind == Kind::Layer) node_hook_(node.name, true);
      if (context_slot_.active() && node.kind == Kind::CausalLMLoss && blocks.count(node.inputs[0])) {
        const at::Tensor& labels = args[1];
        values[node.name] = context_causal_lm_loss(
            node, args[0], blocks.count(node.inputs[1]) ? gather_context_blocks(labels, *cut_, context_slot_) : labels);
        continue;
      }
      const bool block = (sequence_slot_.active() && to_sequence_layout(node, args, blocks)) ||
                         (context_slot_.active() && to_context_layout(node, args, blocks));
      values[node.name] = run_node(node, args);
      if (block) blocks.insert(node.name);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string message = e.what();
      std::string shapes;
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].defined()) shapes += (shapes.empty() ? "" : ", ") + node.inputs[i] + " " + shape_of(args[i]);
      }
      fail(ErrorCode::InvalidArgument,
           node.where + " failed for inputs " + shapes + ": " + message.substr(0, message.find('\n')));
    }
  }
  NamedTensors outputs;
  for (const auto& name : outputs_) {
    if (!values[name].defined()) continue;
    if (!blocks.count(name)) {
      outputs.emplace_back(name, values[name]);
    } else if (context_slot_.active()) {
      outputs.emplace_back(name, gather_context_blocks(values[name], *cut_, context_slot_));
    } else {
      outputs.emplace_back(name, gather_from_sequence_parallel(values[name], *sequence_slot_.group));
    }
  }
  if (!node_devices_.empty() && !given.empty()) {
    for (auto& output : outputs) output.second = output.second.to(given.front().second.device());
  }
  return outputs;
}

bool GraphModuleImpl::to_sequence_layout(const Node& node, std::vector<at::Tensor>& args,
                                         const std::set<std::string>& blocks) const {
  bool all_blocks = true;
  for (size_t i = 0; i < args.size(); ++i)
    all_blocks = all_blocks && (!args[i].defined() || blocks.count(node.inputs[i]));
  const bool takes_block = sequence_nodes_.count(node.name) == 1;
  const bool block_out = takes_block || (node.kind == Kind::Add && all_blocks);
  ProcessGroup& group = *sequence_slot_.group;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined()) continue;
    const bool is_block = blocks.count(node.inputs[i]) == 1;
    const bool wants_block = block_out && (i == 0 || node.kind == Kind::Add);  // side inputs (masks) stay whole
    if (is_block && !wants_block) {
      args[i] = gather_from_sequence_parallel(args[i], group);
    } else if (!is_block && wants_block) {
      const int64_t size = sequence_slot_.size;
      require_arg(args[i].dim() == 3 && args[i].size(1) % size == 0,
                  node.where + ": sequence_parallel cuts input " + in_quotes(node.inputs[i]) + " into tp_size " +
                      std::to_string(size) +
                      " blocks along the sequence, so it must be [N, L, E] with L a multiple of " +
                      std::to_string(size) + ", got " + shape_of(args[i]));
      args[i] = scatter_to_sequence_parallel(args[i], group);
    }
  }
  return block_out;
}

void GraphModuleImpl::move_to_node_device(const Node& node, std::vector<at::Tensor>& args) const {
  auto found = node_devices_.find(node.name);
  auto first = std::find_if(args.begin(), args.end(), [](const at::Tensor& t) { return t.defined(); });
  if (found == node_devices_.end() && first == args.end()) return;
  const c10::Device device = found != node_devices_.end() ? found->second : first->device();
  for (auto& arg : args) {
    if (arg.defined() && arg.device() != device) arg = arg.to(device);
  }
}

bool GraphModuleImpl::takes_one_tensor() const {
  return std::count_if(inputs_.begin(), inputs_.end(), [](const Input& i) { return !i.optional; }) == 1;
}

at::Tensor GraphModuleImpl::forward(const at::Tensor& input) {
  require_arg(takes_one_tensor(), "forward: this model takes named inputs; call forward with named tensors");
  auto required = std::find_if(inputs_.begin(), inputs_.end(), [](const Input& i) { return !i.optional; });
  NamedTensors outputs = forward_named({{required->name, input}});
  require_arg(!outputs.empty(), "forward: the model produced no output from input " + in_quotes(required->name));
  return outputs.front().second;
}

}  // namespace accel::detail
