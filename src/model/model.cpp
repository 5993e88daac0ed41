#include "accel/model.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "accel/error.hpp"
#include "core/trace_span.hpp"
#include "model/model_impl.hpp"
#include "model/nn_module_of.hpp"
#include "model/sequential_spec.hpp"
#include "model/spec/chain.hpp"
#include "model/spec/graph.hpp"
#include "model/spec/init.hpp"
#include "model/tensor_parallel_split.hpp"
#include "precision/autocast.hpp"
#include "state/out_of_memory.hpp"
#include "sharding/strategy.hpp"
#include "state/runtime_context.hpp"
#include "state/collectives.hpp"

namespace accel {
namespace detail {

namespace {

// "prefix.name", or name for the root module (prefix "").
std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

class NnModel final : public ModelImpl {
 public:
  NnModel(std::shared_ptr<torch::nn::Module> module, Model::ForwardFn forward, Model::NamedForwardFn named_forward)
      : module_(std::move(module)), forward_(std::move(forward)), named_forward_(std::move(named_forward)) {}
  // A sequential spec's model: its forward is the chain of its layers, which
  // FULL_SHARD can run unit by unit.
  // types: each layer's "type" in the spec (FULL_SHARD's wrap classes match them).
  NnModel(torch::nn::Sequential chain, std::vector<std::string> types)
      : NnModel(
            chain.ptr(), [impl = chain.ptr()](const at::Tensor& x) { return impl->forward(x); }, nullptr) {
    layer_types_ = std::move(types);
    chain_ = chain.ptr();
  }
  // A graph spec's model: FULL_SHARD runs each layer node inside its unit.
  NnModel(std::shared_ptr<GraphModuleImpl> graph, Model::ForwardFn forward, Model::NamedForwardFn named_forward)
      : NnModel(std::shared_ptr<torch::nn::Module>(graph), std::move(forward), std::move(named_forward)) {
    graph_ = std::move(graph);
  }

  NamedTensors named_parameters() const override { return to_pairs(module_->named_parameters(true)); }
  NamedTensors named_buffers() const override { return to_pairs(module_->named_buffers(true)); }
  NamedTensors state_dict() const override {
    NamedTensors out;
    for (const auto& module : module_->named_modules()) {
      for (const auto& dict : {module.value()->named_parameters(false), module.value()->named_buffers(false)}) {
        for (const auto& item : dict) out.emplace_back(join(module.key(), item.key()), item.value());
      }
    }
    return out;
  }
  void set_training(bool training) override { module_->train(training); }
  bool training() const override { return module_->is_training(); }
  const std::shared_ptr<torch::nn::Module>& module() const { return module_; }

 protected:
  at::Tensor run(const at::Tensor& input) override {
    require_arg(static_cast<bool>(forward_), "forward: this model takes named inputs; call forward with named tensors");
    if (full_shard() && !segments_.empty()) return run_units(input);
    return forward_(input);
  }
  std::vector<UnitLayout> wrap_units(const WrapPolicy& policy) override;
  NamedTensors run_named(const NamedTensors& inputs) override {
    return named_forward_ ? named_forward_(inputs) : ModelImpl::run_named(inputs);
  }
  void move_to(const c10::Device& device) override { module_->to(device); }

 private:
  static NamedTensors to_pairs(const torch::OrderedDict<std::string, at::Tensor>& dict) {
    NamedTensors out;
    for (const auto& item : dict) out.emplace_back(item.key(), item.value());
    return out;
  }

  // Consecutive layers [begin, end) of the chain; unit -1 holds no parameters.
  struct Segment {
    size_t begin, end;
    int unit;
  };
  at::Tensor run_units(const at::Tensor& input);
  std::vector<UnitLayout> graph_units(const WrapPolicy& policy);

  std::shared_ptr<torch::nn::Module> module_;
  Model::ForwardFn forward_;
  Model::NamedForwardFn named_forward_;
  std::shared_ptr<torch::nn::SequentialImpl> chain_;  // set for a sequential spec
  std::vector<std::string> layer_types_;              // chain_'s layers' spec types
  std::vector<Segment> segments_;                     // FULL_SHARD's cut of chain_
  std::shared_ptr<GraphModuleImpl> graph_;            // set for a graph spec
  std::optional<TpPlan> tp_plan_;                     // the spec's "tp_plan"

 public:
  void set_tp_plan(std::optional<TpPlan> plan) { tp_plan_ = std::move(plan); }

 protected:
  ParameterSplits split_for_tensor_parallel(const TensorParallelSlot& slot) override {
    return detail::split_for_tensor_parallel(*module_, tp_plan_, slot);
  }
  void use_context_parallel(const ContextParallelSlot& slot, bool tensor_parallel) override {
    require(graph_ != nullptr, ErrorCode::Unsupported,
            "cp_size " + std::to_string(slot.size) +
                ": context parallelism cuts the sequence of JSON graph models (\"nodes\"); this model is a chain of "
                "layers");
    for (const TpPlanEntry& entry : tp_plan_ ? *tp_plan_ : TpPlan{}) {
      require(!tensor_parallel || entry.style != TpStyle::SequenceParallel, ErrorCode::Unsupported,
              "cp_size " + std::to_string(slot.size) + ": context parallelism with the tp_plan's sequence_parallel (" +
                  entry.pattern + ") is not built; drop the sequence_parallel entries or use cp_size 1");
    }
    graph_->set_context_parallel(slot);
  }
};

// transformer_auto_wrap_policy on a JSON spec: which layers (by "type", or by
// name: a graph node's, a chain layer's index) are units of their own. Every
// class must match a layer; else InvalidArgument naming it and the model's types.
class WrapClasses {
 public:
  explicit WrapClasses(const std::vector<std::string>& classes) : wanted_(classes.begin(), classes.end()) {}
  bool empty() const { return wanted_.empty(); }
  bool matches(const std::string& type, const std::string& name) {
    seen_types_.insert(type);
    const bool by_type = wanted_.count(type) > 0, by_name = wanted_.count(name) > 0;
    if (by_type) matched_.insert(type);
    if (by_name) matched_.insert(name);
    return by_type || by_name;
  }
  void check_all_matched() const {
    for (const std::string& name : wanted_) {
      if (matched_.count(name)) continue;
      std::string known;
      for (const auto& type : seen_types_) known += (known.empty() ? "" : ", ") + type;
      fail(ErrorCode::InvalidArgument, "fsdp_transformer_layer_cls_to_wrap: \"" + name +
                                           "\" matches no layer of the model (its layer types: " + known + ")");
    }
  }

 private:
  std::set<std::string> wanted_, matched_, seen_types_;
};

std::vector<UnitLayout> NnModel::wrap_units(const WrapPolicy& policy) {
  if (!graph_ && !chain_) return ModelImpl::wrap_units(policy);
  if (graph_) return graph_units(policy);
  // By size (min_num_params) or, with wrap classes, FSDP's
  // transformer_auto_wrap_policy: each matching layer is a unit, and the
  // layers with parameters between two of them another (FSDP keeps those in
  // its root unit, whole for the whole forward; the values are the same and
  // less is held at a time).
  WrapClasses classes(policy.classes);
  const int64_t min_num_params = policy.min_num_params;  // by size, when no classes are given
  std::vector<UnitLayout> units;
  std::vector<Segment> segments;
  int64_t held = 0;           // trainable parameters of the open unit
  bool open_matched = false;  // the open unit is a matching layer's
  for (size_t i = 0; i < chain_->size(); ++i) {
    std::vector<std::pair<std::string, at::Tensor>> params;
    int64_t count = 0;
    for (const auto& item : chain_->ptr(i)->named_parameters(true)) {
      if (!item.value().requires_grad()) continue;
      params.emplace_back(join(std::to_string(i), item.key()), item.value());
      count += item.value().numel();
    }
    const bool matched =
        !classes.empty() && i < layer_types_.size() && classes.matches(layer_types_[i], std::to_string(i));
    // A layer with parameters opens a unit unless the open one is still below
    // min_num_params (size_based_auto_wrap_policy) or, by class, unless both
    // it and the open one are not matching layers; layers without
    // parameters join the open segment.
    const bool open_new =
        count > 0 &&
        (units.empty() || (classes.empty() ? min_num_params == 0 || held >= min_num_params : matched || open_matched));
    if (open_new) {
      if (!segments.empty() && segments.back().unit < 0) {
        segments.back().unit = static_cast<int>(units.size());  // leading parameterless layers join it
      } else {
        segments.push_back({i, i, static_cast<int>(units.size())});
      }
      units.push_back({std::to_string(i), {}});
      held = 0;
      open_matched = matched;
    } else if (segments.empty()) {
      segments.push_back({i, i, -1});
    }
    segments.back().end = i + 1;
    if (count > 0) {
      UnitLayout& unit = units.back();
      for (auto& param : params) unit.parameters.push_back(std::move(param));
      unit.name = std::to_string(segments.back().begin) + (i > segments.back().begin ? "-" + std::to_string(i) : "");
      held += count;
    }
  }
  classes.check_all_matched();
  segments_ = std::move(segments);
  return units;
}

// The graph's layer nodes in dependency order, cut as the chain is: a node with
// trainable parameters opens a unit unless the open one is below
// min_num_params (kOneUnit: one unit for all), or, with wrap classes, unless
// neither it nor the open unit's nodes match. A tied Linear's node belongs to
// the unit of the node that owns its weight (its bias joins that unit), so the
// weight is gathered wherever it is used. A unit used by several nodes is
// gathered for each of them and gets each one's gradients in backward.
std::vector<UnitLayout> NnModel::graph_units(const WrapPolicy& policy) {
  WrapClasses classes(policy.classes);
  const int64_t min_num_params = policy.min_num_params;  // by size, when no classes are given
  std::vector<UnitLayout> units;
  std::map<std::string, size_t> node_units;
  std::map<const c10::TensorImpl*, size_t> owner;  // parameter -> its unit
  int64_t held = 0;
  bool open_matched = false;
  for (const GraphModuleImpl::Node& node : graph_->nodes()) {
    if (node.kind != GraphModuleImpl::Kind::Layer) continue;
    const std::shared_ptr<torch::nn::Module> module = node.module.ptr();
    const bool matched = !classes.empty() && classes.matches(node.type, node.name);
    std::optional<size_t> tied;
    for (const auto& m : module->modules(/*include_self=*/true)) {
      const at::Tensor* weight = tied_weight_of(*m);
      auto found = weight ? owner.find(weight->unsafeGetTensorImpl()) : owner.end();
      if (found == owner.end()) continue;
      require(!tied || *tied == found->second, ErrorCode::Unsupported,
              node.where + ": ties weights of two FULL_SHARD units; tie them to one node");
      tied = found->second;
    }
    std::vector<std::pair<std::string, at::Tensor>> params;
    int64_t count = 0;
    for (const auto& item : module->named_parameters(true)) {
      if (!item.value().requires_grad()) continue;
      params.emplace_back(join(node.name, item.key()), item.value());
      count += item.value().numel();
    }
    if (params.empty() && !tied) continue;
    size_t unit = 0;
    const bool open_new =
        units.empty() || (classes.empty() ? min_num_params == 0 || held >= min_num_params : matched || open_matched);
    if (tied) {
      unit = *tied;
    } else if (open_new) {
      unit = units.size();
      units.push_back({node.name, {}});
      held = 0;
      open_matched = matched;
    } else {
      unit = units.size() - 1;
      units.back().name += "+" + node.name;
    }
    for (auto& param : params) {
      owner[param.second.unsafeGetTensorImpl()] = unit;
      units[unit].parameters.push_back(std::move(param));
    }
    if (!tied) held += count;
    node_units[node.name] = unit;
  }
  classes.check_all_matched();
  graph_->set_unit_runner(std::move(node_units),
                          [this](size_t unit, const at::Tensor& x, const GraphModuleImpl::Body& body) {
                            return full_shard() ? full_shard()->run_unit(unit, x, body) : body(x);
                          });
  return units;
}

at::Tensor NnModel::run_units(const at::Tensor& input) {
  at::Tensor x = input;
  for (const Segment& segment : segments_) {
    FullShard::Body body = [this, segment](const at::Tensor& in) {
      at::Tensor out = in;
      for (auto it = chain_->begin() + segment.begin; it != chain_->begin() + segment.end; ++it) out = it->forward(out);
      return out;
    };
    x = segment.unit < 0 ? body(x) : full_shard()->run_unit(static_cast<size_t>(segment.unit), x, body);
  }
  return x;
}

}  // namespace

std::shared_ptr<torch::nn::Module> nn_module_of(const ModelImpl& model) {
  const auto* nn = dynamic_cast<const NnModel*>(&model);
  return nn ? nn->module() : nullptr;
}

ModelImpl::~ModelImpl() = default;

void ModelImpl::use_context_parallel(const ContextParallelSlot& slot, bool) {
  fail(ErrorCode::Unsupported, "cp_size " + std::to_string(slot.size) +
                                   ": context parallelism cuts the sequence of JSON graph models so far; a TorchScript "
                                   "or C++ module cannot be cut");
}

ParameterSplits ModelImpl::split_for_tensor_parallel(const TensorParallelSlot& slot) {
  fail(ErrorCode::Unsupported, "tp_size " + std::to_string(slot.size) +
                                   ": tensor parallelism splits JSON-spec models (their transformer layers) and "
                                   "transformers' GPT-2 TorchScript exports so far; a C++ module cannot be split");
}

std::vector<UnitLayout> ModelImpl::wrap_units(const WrapPolicy& policy) {
  require(policy.classes.empty(), ErrorCode::Unsupported,
          "prepare(model): fsdp_transformer_layer_cls_to_wrap (TRANSFORMER_BASED_WRAP) names TorchScript submodules "
          "or JSON layer types; "
          "a C++ module is wrapped whole");
  UnitLayout root{"(model)", {}, /*whole_model=*/true};
  for (auto& [name, p] : named_parameters()) {
    if (p.requires_grad()) root.parameters.emplace_back(name, p);
  }
  return {root};
}

// Under FULL_SHARD with a whole_model unit: run inside it (gathered for the
// forward, again for the backward).
at::Tensor ModelImpl::run_in_units(const at::Tensor& input) {
  if (full_shard_) full_shard_->set_keep_after_forward(training());
  if (!full_shard_ || !whole_model_unit_) return run(input);
  return full_shard_->run_unit(*whole_model_unit_, input, [this](const at::Tensor& x) { return run(x); });
}

NamedTensors ModelImpl::run_named_in_units(const NamedTensors& inputs) {
  if (full_shard_) full_shard_->set_keep_after_forward(training());
  if (!full_shard_ || !whole_model_unit_) return run_named(inputs);
  std::vector<at::Tensor> tensors;
  for (const auto& [name, tensor] : inputs) tensors.push_back(tensor);
  // The output names, from the unit's first run (a checkpointed rerun gives the same).
  auto names = std::make_shared<std::vector<std::string>>();
  FullShard::Bodies body = [this, inputs, names](const std::vector<at::Tensor>& x) {
    NamedTensors named = inputs;
    for (size_t i = 0; i < named.size(); ++i) named[i].second = x[i];
    NamedTensors out = run_named(named);
    names->clear();
    std::vector<at::Tensor> tensors;
    for (auto& [name, tensor] : out) {
      names->push_back(name);
      tensors.push_back(tensor);
    }
    return tensors;
  };
  std::vector<at::Tensor> out = full_shard_->run_unit(*whole_model_unit_, tensors, body);
  NamedTensors named;
  for (size_t i = 0; i < out.size(); ++i) named.emplace_back(names->at(i), out[i]);
  return named;
}

ModelImpl::Gathered::Gathered(const ModelImpl& model) : shard_(model.flat_shard().get()) {
  if (shard_) shard_->gather_all();
}

ModelImpl::Gathered::~Gathered() {
  if (shard_) shard_->release_all();
}

void ModelImpl::Gathered::scattered() {
  if (shard_) shard_->scatter_from_full();
}

void ModelImpl::before_forward() {
  const bool training_step = training() && at::GradMode::is_enabled();
  // DDP's broadcast_buffers: replicas start each training forward from process
  // 0's buffers (BatchNorm statistics), so they cannot drift apart. Not under
  // join_uneven_inputs: joined processes answer gradient allreduces only.
  if (training_step && state_ && state_->process_group && state_->broadcast_buffers && !state_->joining) {
    std::vector<at::Tensor> buffers;
    for (auto& [name, b] : named_buffers()) buffers.push_back(b);
    broadcast_from_main(*state_, buffers, "buffers");
  }
}

void ModelImpl::after_forward() {
  // Armed only once the forward succeeded: a failed forward leaves the next
  // backward as it was (no half-applied state).
  if (gradient_sync_ && training() && at::GradMode::is_enabled()) gradient_sync_->arm();
}

at::Tensor ModelImpl::to_output_precision(at::Tensor output) const {
  // Like Accelerate's convert_to_fp32: callers see float32 whatever ran inside.
  MixedPrecision precision = state_ ? state_->mixed_precision : MixedPrecision::No;
  if (precision != MixedPrecision::No && output.defined() && at::isFloatingType(output.scalar_type()) &&
      output.scalar_type() != at::kFloat && output.scalar_type() != at::kDouble) {
    output = output.to(at::kFloat);
  }
  return output;
}

at::Tensor ModelImpl::forward(const at::Tensor& input) {
  require_arg(input.defined(), "forward: the input tensor is undefined");
  require_arg(inputs_on_any_device_ || input.device() == device_,
              "forward: the input is on " + input.device().str() + " but the model is on " + device_.str() +
                  " (batches from a prepared dataloader are placed for you)");
  before_forward();
  MixedPrecision precision = state_ ? state_->mixed_precision : MixedPrecision::No;
  at::Tensor output;
  try {
    AutocastScope autocast(precision, device_, state_ == nullptr || state_->autocast_enabled,
                           state_ ? state_->autocast_cache_enabled : std::nullopt);
    output = run_in_units(input);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(is_out_of_memory(e) ? ErrorCode::Resource : ErrorCode::InvalidArgument,
         "forward failed for input of shape " + c10::str(input.sizes()) + ": " + message.substr(0, message.find('\n')));
  }
  after_forward();
  return to_output_precision(std::move(output));
}

NamedTensors ModelImpl::forward_named(const NamedTensors& inputs) {
  require_arg(!inputs.empty(), "forward: no inputs given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& [name, tensor] = inputs[i];
    require_arg(!name.empty(), "forward: input " + std::to_string(i) + " has an empty name");
    require_arg(tensor.defined(), "forward: input \"" + name + "\" is undefined");
    require_arg(inputs_on_any_device_ || tensor.device() == device_,
                "forward: input \"" + name + "\" is on " + tensor.device().str() + " but the model is on " +
                    device_.str() + " (batches from a prepared dataloader are placed for you)");
    for (size_t j = 0; j < i; ++j)
      require_arg(inputs[j].first != name, "forward: input \"" + name + "\" is given twice");
  }
  before_forward();
  MixedPrecision precision = state_ ? state_->mixed_precision : MixedPrecision::No;
  NamedTensors outputs;
  try {
    AutocastScope autocast(precision, device_, state_ == nullptr || state_->autocast_enabled,
                           state_ ? state_->autocast_cache_enabled : std::nullopt);
    outputs = run_named_in_units(inputs);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string shapes;
    for (const auto& [name, tensor] : inputs) {
      shapes += (shapes.empty() ? "" : ", ") + name + " " + c10::str(tensor.sizes()) + " " +
                c10::toString(tensor.scalar_type());
    }
    std::string message = e.what();
    fail(is_out_of_memory(e) ? ErrorCode::Resource : ErrorCode::InvalidArgument,
         "forward failed for inputs " + shapes + ": " + message.substr(0, message.find('\n')));
  }
  after_forward();
  for (auto& [name, tensor] : outputs) tensor = to_output_precision(std::move(tensor));
  return outputs;
}

NamedTensors ModelImpl::run_named(const NamedTensors& inputs) {
  require_arg(inputs.size() == 1, "forward: this model takes one input tensor, but " + std::to_string(inputs.size()) +
                                      " named inputs were given");
  return {{"output", run(inputs.front().second)}};
}

void ModelImpl::prepare(const std::shared_ptr<RuntimeContext>& state) {
  require(state_ == nullptr, ErrorCode::State, "prepare(model): this model is already prepared");
  move_to(state->device);
  device_ = state->device;
  std::vector<at::Tensor> params, everything;
  std::vector<std::string> names;
  for (auto& [name, p] : named_parameters()) {
    params.push_back(p);
    names.push_back(name);
    everything.push_back(p);
  }
  for (auto& [name, b] : named_buffers()) everything.push_back(b);
  broadcast_from_main(*state, everything, "parameters and buffers");
  // Tensor parallelism: each rank keeps its slices of the whole weights it
  // just received (the same parameters, smaller), before data parallelism
  // over the ranks that hold the same slices is set up on them.
  // Context parallelism: the model runs on this rank's block of the sequence.
  if (state->cp_group) {
    use_context_parallel({state->cp_group.get(), state->cp_group->world_size(), state->cp_group->rank()},
                         state->tp_group != nullptr);
  }
  if (state->tp_group) {
    const TensorParallelSlot slot{state->tp_group.get(), state->tp_group->world_size(), state->tp_group->rank()};
    try {
      tensor_parallel_ = TensorParallelModel{slot, split_for_tensor_parallel(slot)};
    } catch (...) {
      if (state->cp_group) use_context_parallel({}, false);  // nothing stays changed
      throw;
    }
    // Dropout in a split layer draws the whole layer's mask on every rank of the group.
    align_generators(*state->tp_group, state->device);
  }
  ProcessGroup* data_group = state->data_parallel_group();
  std::shared_ptr<FlatShard> shard;
  std::shared_ptr<FullShard> full;
  // A model with nothing to train (evaluation only) has nothing to shard.
  const bool trainable =
      std::any_of(params.begin(), params.end(), [](const at::Tensor& p) { return p.requires_grad(); });
  const ShardingStrategy strategy = state->sharding_strategy;
  // One process shards only to offload (a world of one: no process group).
  const bool sharded = state->shards_models() && trainable;
  if (sharded && shards_parameters(strategy)) {
    std::vector<UnitLayout> units = wrap_units(WrapPolicy{state->fsdp_min_num_params, state->fsdp_wrap_classes});
    // HYBRID_SHARD shards over the node's ranks (the whole group with one node).
    full = std::make_shared<FullShard>(units, state->shard_group ? state->shard_group.get() : data_group,
                                       state->cpu_offload);
    require(full->num_units() == units.size(), ErrorCode::Internal, "prepare(model): a wrap unit has no parameters");
    for (size_t u = 0; u < units.size(); ++u) {
      if (units[u].whole_model) whole_model_unit_ = u;
    }
    full->set_replicas(state->replica_group.get());
    full->set_activation_checkpointing(state->fsdp_activation_checkpointing);
    full->set_prefetch(state->fsdp_forward_prefetch, state->fsdp_backward_prefetch);
    shard = full;
  } else if (sharded) {
    shard = std::make_shared<FlatShard>(params, names, data_group, strategy, state->cpu_offload);
  }
  // ZeRO-2 reduce-scatters after backward instead of allreducing during it,
  // FULL_SHARD during it, unit by unit.
  if (data_group && state->data_parallel_size() > 1 && strategy != ShardingStrategy::ShardGradOp &&
      !shards_parameters(strategy)) {
    GradientSyncOptions sync;
    sync.bucket_cap_bytes = static_cast<int64_t>(state->bucket_cap_mb * 1024 * 1024);
    sync.first_bucket_cap_bytes =
        std::min(sync.bucket_cap_bytes, static_cast<int64_t>(state->first_bucket_cap_mb * 1024 * 1024));
    sync.gradient_as_bucket_view = state->gradient_as_bucket_view;
    sync.find_unused_parameters = state->find_unused_parameters;
    sync.comm_hook = state->comm_hook;
    if (shard) sync.gradient_home = [&shard](const at::Tensor& p) { return shard->gradient_home(p); };
    gradient_sync_ = std::make_unique<GradientSync>(params, names, *data_group, sync);
  }
  flat_shard_ = std::move(shard);
  full_shard_ = std::move(full);
  state_ = state;
}

}  // namespace detail

Model Model::from_torchscript(const std::string& path) { return from_torchscript(path, {}); }

namespace {

std::shared_ptr<detail::ModelImpl> load_torchscript(const std::string& path, std::vector<std::string> output_names,
                                                    bool empty) {
  require_arg(!path.empty(), "from_torchscript: the path is empty");
  require(std::ifstream(path).good(), ErrorCode::IO, "TorchScript file \"" + path + "\" cannot be opened");
  try {
    return detail::load_script_model(path, std::move(output_names), empty);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(ErrorCode::IO,
         "TorchScript file \"" + path + "\" could not be loaded: " + message.substr(0, message.find('\n')));
  }
}

}  // namespace

Model Model::from_torchscript(const std::string& path, std::vector<std::string> output_names) {
  return Model(load_torchscript(path, std::move(output_names), false));
}

Model Model::from_torchscript_empty(const std::string& path, std::vector<std::string> output_names) {
  return Model(load_torchscript(path, std::move(output_names), true));
}

Model Model::from_json(const std::string& spec) {
  nlohmann::json parsed = detail::parse_model_spec(spec);
  std::optional<detail::InitSpec> init = detail::take_init_spec(parsed);
  std::optional<detail::TpPlan> tp_plan = detail::take_tp_plan(parsed);
  if (!detail::is_graph_spec(parsed)) {
    auto sequential = detail::build_sequential_from(parsed);
    if (init) detail::apply_init(*sequential, *init);
    auto model = std::make_shared<detail::NnModel>(sequential, detail::sequential_layer_types(parsed));
    model->set_tp_plan(std::move(tp_plan));
    return Model(model);
  }
  detail::GraphModule graph(parsed);
  auto impl = graph.ptr();
  if (init) detail::apply_init(*impl, *init);
  ForwardFn forward;
  // Raw pointers: the model owns the graph, so the functions must not.
  if (impl->takes_one_tensor()) forward = [raw = impl.get()](const at::Tensor& input) { return raw->forward(input); };
  auto model = std::make_shared<detail::NnModel>(
      impl, forward, [raw = impl.get()](const NamedTensors& inputs) { return raw->forward_named(inputs); });
  model->set_tp_plan(std::move(tp_plan));
  return Model(model);
}

Model Model::from_module(std::shared_ptr<torch::nn::Module> module, ForwardFn forward) {
  require_arg(static_cast<bool>(forward), "from_module: the forward function is empty");
  return from_module(std::move(module), std::move(forward), nullptr);
}

Model Model::from_module(std::shared_ptr<torch::nn::Module> module, ForwardFn forward, NamedForwardFn named_forward) {
  require_arg(module != nullptr, "from_module: the module is null");
  require_arg(forward || named_forward, "from_module: both forward functions are empty");
  return Model(std::make_shared<detail::NnModel>(std::move(module), std::move(forward), std::move(named_forward)));
}

at::Tensor Model::forward(const at::Tensor& input) {
  ACCEL_TRACE_SPAN("accel::forward");
  return impl_->forward(input);
}
Model::NamedTensors Model::forward(const NamedTensors& inputs) {
  ACCEL_TRACE_SPAN("accel::forward");
  return impl_->forward_named(inputs);
}
void Model::train(bool training) { impl_->set_training(training); }
bool Model::is_training() const { return impl_->training(); }

std::vector<at::Tensor> Model::parameters() const {
  std::vector<at::Tensor> out;
  for (auto& [name, p] : impl_->named_parameters()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> Model::named_parameters() const { return impl_->named_parameters(); }
std::vector<std::pair<std::string, at::Tensor>> Model::named_buffers() const { return impl_->named_buffers(); }

int64_t Model::num_parameters(bool trainable_only) const {
  int64_t total = 0;
  for (auto& [name, p] : impl_->named_parameters()) {
    if (!trainable_only || p.requires_grad()) total += p.numel();
  }
  return total;
}

c10::Device Model::device() const { return impl_->device(); }
bool Model::is_prepared() const { return impl_->prepared(); }

}  // namespace accel
