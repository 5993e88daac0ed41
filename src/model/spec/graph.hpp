// A JSON model spec that is a small graph rather than a chain:
//   {"inputs": ["input_ids", {"name": "labels", "optional": true}],
//    "nodes": [{"name": "wte", "type": "Embedding", "input": "input_ids", ...}, ...],
//    "outputs": ["logits", "loss"]}
// Nodes are submodules named as in the spec, so parameters are "wte.weight",
// "h.0.self_attn.in_proj_weight"; nodes run in dependency order. The full
// schema is documented at accel_model_from_json (include/accel/accel.h).
#pragma once

#include <functional>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>

#include <memory>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "parallel/context_parallel.hpp"
#include "parallel/tensor_parallel.hpp"

namespace accel::detail {

// True for a JSON object with "nodes" (the graph form); arrays and
// {"layers": [...]} are chains (build_sequential).
bool is_graph_spec(const nlohmann::json& spec);

class GraphModuleImpl : public torch::nn::Module {
 public:
  using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

  struct Input {
    std::string name;
    bool optional = false;
  };
  enum class Kind { Layer, Add, Concat, CausalLMLoss };
  struct Node {
    std::string name;
    std::string where;  // node "name" (Type), for errors
    std::string type;   // the spec's "type" (FULL_SHARD's wrap classes match it)
    Kind kind = Kind::Layer;
    torch::nn::AnyModule module;  // Kind::Layer only
    std::vector<std::string> inputs;
    int64_t dim = 0;              // Concat
    int64_t ignore_index = -100;  // CausalLMLoss
    double label_smoothing = 0.0;
  };

  // Throws InvalidArgument naming the node and the value for every bad spec.
  explicit GraphModuleImpl(const nlohmann::json& spec);

  // Inputs by name; optional ones may be left out, and outputs that depend on
  // an absent input are left out of the result (no "loss" without "labels").
  // Throws InvalidArgument naming an unknown or missing input, or the node whose
  // layer refused its input (wrong shape, dtype, ids out of range, too long).
  NamedTensors forward_named(const NamedTensors& inputs);
  // Only for a graph with one required input: the first output.
  bool takes_one_tensor() const;
  at::Tensor forward(const at::Tensor& input);

  // Called with (node name, true) just before a layer node runs and (node
  // name, false) right after, also when it throws: big-model dispatch brings a
  // layer's offloaded weights in and releases them (src/big_model/dispatch.cpp).
  using NodeHook = std::function<void(const std::string& node, bool entering)>;
  void set_node_hook(NodeHook hook) { node_hook_ = std::move(hook); }

  // Accelerate's AlignDevicesHook for a model spread over devices: a node
  // named here gets its inputs moved to that device before it runs; any other
  // node (merges, parameter-free layers) gets them on its first input's device;
  // and the outputs come back on the device of the first input given to
  // forward. Empty (the default): nothing moves.
  using NodeDevices = std::map<std::string, c10::Device>;
  void set_node_devices(NodeDevices devices) { node_devices_ = std::move(devices); }

  // FULL_SHARD: each layer node named in `node_units` runs as
  // runner(unit, first input, body), body running the layer on that input
  // (the side inputs, which must not need gradients, captured), so that the
  // runner can gather the unit's parameters around it (FullShard::run_unit).
  using Body = std::function<at::Tensor(const at::Tensor&)>;
  using UnitRunner = std::function<at::Tensor(size_t unit, const at::Tensor& input, const Body& body)>;
  void set_unit_runner(std::map<std::string, size_t> node_units, UnitRunner runner) {
    node_units_ = std::move(node_units);
    unit_runner_ = std::move(runner);
  }
  // In dependency order.
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::string>& output_names() const { return outputs_; }

  // Tensor parallelism of graph nodes (model/tensor_parallel_split.cpp): an
  // Embedding node split by vocabulary rows (its ids looked up where they
  // lie, the lookups summed), a Linear node by output columns (gathered whole
  // again, or left split for the CausalLMLoss node reading it, which then
  // computes a vocabulary-parallel cross-entropy and never gathers them).
  struct NodeSplit {
    // SequenceNorm: a LayerNorm node under sequence parallelism (below), its
    // parameters' gradients summed over the group.
    enum class Style { VocabEmbedding, Columns, ColumnsGathered, VocabLoss, SequenceNorm };
    Style style = Style::Columns;
    TensorParallelSlot slot;
    int64_t start = 0;       // this rank's first row (embedding) or column (linear, loss)
    int64_t vocabulary = 0;  // the whole vocabulary: the ids and labels are checked against it
  };
  void set_node_splits(std::map<std::string, NodeSplit> splits) { node_splits_ = std::move(splits); }

  // Sequence parallelism (parallel/tensor_parallel.hpp): the nodes named here
  // (sequence-parallel transformer layers and LayerNorm nodes) take their
  // first input, and give their output, as this rank's block of the sequence
  // (dim 1 of [N, L, E]); an Add node whose inputs are all blocks gives a
  // block too. A whole value entering such a node is cut (InvalidArgument
  // naming the node when it is not [N, L, E] with L divisible by the group's
  // size); a block read by any other node, as a side input, or returned by the
  // graph is gathered whole.
  void set_sequence_parallel(std::set<std::string> nodes, TensorParallelSlot slot) {
    sequence_nodes_ = std::move(nodes);
    sequence_slot_ = slot;
  }

  // Context parallelism (parallel/context_parallel.hpp): each forward runs on
  // this rank's block of the sequence. An Embedding node cuts the ids it reads
  // (dim 1 of [N, L], padded to a multiple of the group's size; the first cut
  // fixes L for the forward); nodes whose layers work token by token
  // (Embedding, Linear, LayerNorm, Dropout, activations, PositionalEmbedding,
  // self-attention in MultiheadAttention and TransformerEncoderLayer, chains
  // of these) and Add nodes take and give blocks, a whole value entering them
  // being cut; a CausalLMLoss node reading block logits and whole labels
  // gives the whole sequence's mean; any other node, and the graph's outputs,
  // get blocks gathered whole. Side inputs (masks) stay whole. Unsupported,
  // naming the node, before anything changes: a layer that is not batch-first,
  // and sequence parallelism (tensor parallelism's) at the same time. An
  // inactive slot undoes it.
  void set_context_parallel(const ContextParallelSlot& slot);

 private:
  void parse_inputs(const nlohmann::json& inputs);
  void parse_nodes(const nlohmann::json& nodes);
  void parse_outputs(const nlohmann::json& outputs);
  Node parse_node(const nlohmann::json& node, size_t index, const std::string& previous);
  void sort_nodes();
  at::Tensor run_node(const Node& node, const std::vector<at::Tensor>& args) const;
  at::Tensor run_split_layer(const Node& node, const NodeSplit& split, const at::Tensor& input) const;
  void move_to_node_device(const Node& node, std::vector<at::Tensor>& args) const;
  // Cuts or gathers `args` for `node` (set_sequence_parallel); returns whether its output is a block.
  bool to_sequence_layout(const Node& node, std::vector<at::Tensor>& args, const std::set<std::string>& blocks) const;
  // The same for context parallelism (set_context_parallel).
  bool to_context_layout(const Node& node, std::vector<at::Tensor>& args, const std::set<std::string>& blocks) const;
  at::Tensor context_causal_lm_loss(const Node& node, const at::Tensor& logits, const at::Tensor& labels) const;
  // A unit's body that runs under this forward's cut of the sequence whenever it runs.
  Body with_this_cut(Body body) const;

  std::vector<Input> inputs_;
  std::vector<Node> nodes_;  // in dependency order after construction
  std::vector<std::string> outputs_;
  NodeHook node_hook_;
  NodeDevices node_devices_;
  std::map<std::string, size_t> node_units_;
  UnitRunner unit_runner_;
  std::map<std::string, NodeSplit> node_splits_;
  std::set<std::string> sequence_nodes_;
  TensorParallelSlot sequence_slot_;
  ContextParallelSlot context_slot_;
  std::set<std::string> context_nodes_;  // layer nodes that run on blocks
  // This forward's cut of the sequence, read by the attention and positional
  // layers (a stable address: they hold a pointer to it).
  std::shared_ptr<SequenceCut> cut_ = std::make_shared<SequenceCut>();
};
TORCH_MODULE(GraphModule);

}  // namespace accel::detail
