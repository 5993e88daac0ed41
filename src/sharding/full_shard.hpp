// FULL_SHARD (ZeRO-3, FSDP) over c10d: parameters sharded too.
//
// The model is cut into wrap units (consecutive top-level layers); each unit's
// trainable parameters form one flat parameter of T_u elements, padded to
// world_size * S_u (S_u = ceil(T_u / world_size)), element-granular like
// FlatShard. A rank keeps only its S_u elements of every unit, concatenated in
// shard() (the optimizer steps on it, as under ZeRO-2). A unit's full flat
// buffer has its storage allocated only while the unit runs: all-gathered just
// before its forward, freed after it, all-gathered again just before its
// backward, freed after it (FSDP frees by resizing the storage to 0; so do we,
// so tensors autograd saved during the forward see the re-gathered values).
// Two exceptions, as in FSDP: the next unit's all-gather may be in flight
// already (prefetch), and in training mode the unit whose forward ends last
// stays whole until the backward starts with it (finish_forward).
// Outside a unit's forward or backward its parameters are empty tensors
// (numel 0): reading them gives nothing rather than freed memory; state_dict
// readers call gather_all() / release_all() around the read.
//
// The backward of a unit is a custom autograd function around it: it
// re-gathers the unit, backpropagates through the graph its forward recorded
// (with activation checkpointing: through the graph of a second run),
// reduce-scatters the unit's gradient into shard().grad (so the
// reduce-scatter of unit u overlaps nothing but runs while the later units'
// gradients are already freed) and frees the unit again.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sharding/flat_shard.hpp"

namespace accel::detail {

// One unit as prepare() found it: its name (the layers it covers) and its
// trainable parameters, in registration order.
struct UnitLayout {
  std::string name;
  std::vector<std::pair<std::string, at::Tensor>> parameters;
  // FSDP's root unit: gathered for the model's whole forward (and its whole
  // backward), holding what no inner unit holds. The model runs the inner
  // units itself.
  bool whole_model = false;
};

// How prepare cuts a model into units (Accelerate's fsdp_auto_wrap_policy):
// by parameter count (min_num_params, kOneUnit for the whole model) or, when
// `classes` is not empty, by submodule class or name (transformer_auto_wrap_policy).
struct WrapPolicy {
  int64_t min_num_params = 0;
  std::vector<std::string> classes;
};

class FullShard final : public FlatShard, public std::enable_shared_from_this<FullShard> {
 public:
  using Body = std::function<at::Tensor(const at::Tensor&)>;
  using Bodies = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

  // Not collective: prepare has already made the parameters equal everywhere.
  // Frees every unit's full storage. Throws Unsupported naming a parameter whose
  // dtype or device differs from the first's, or one shared by two units.
  // process_group null: a world of one (one process with CPU offload).
  // cpu_offload: shard() and its gradient live in host memory; a unit's chunk
  // is copied to the device before its all-gather and its gradient chunk back
  // after its reduce-scatter.
  FullShard(const std::vector<UnitLayout>& units, ProcessGroup* process_group, bool cpu_offload);

  size_t num_units() const { return units_.size(); }
  // Where every parameter lives in shard(), for readers without the model
  // (accel merge-weights): a JSON array of units in forward order, each
  // {"name", "chunk" (S_u), "shard_offset" (where the unit's chunk starts in
  // shard()), "params": [{"name", "shape", "offset" (in the unit's flat
  // buffer of world_size * S_u elements, rank r holding [r*S_u, (r+1)*S_u))}]}.
  std::string layout_json() const;

  // FSDP's activation checkpointing (Accelerate's fsdp_activation_checkpointing):
  // a unit's forward keeps only its input; its backward runs the unit again,
  // with the random generator's state of the forward, to rebuild the graph.
  // Costs one more forward per unit; frees every activation inside a unit.
  void set_activation_checkpointing(bool on) { activation_checkpointing_ = on; }
  bool activation_checkpointing() const { return activation_checkpointing_; }
  const std::string& unit_name(size_t unit) const { return units_[unit].name; }

  // Runs body (the unit's layers) on input with the unit's parameters
  // gathered; with grad mode on, wraps it in the autograd function that
  // re-gathers for backward and reduce-scatters the unit's gradient. Collective.
  at::Tensor run_unit(size_t unit, const at::Tensor& input, const Body& body);
  // The same with any number of tensors in and out (a TorchScript submodule's
  // call, a model's named forward). Inputs may be undefined; gradients flow
  // back to the floating inputs that require grad; integer outputs carry none.
  std::vector<at::Tensor> run_unit(size_t unit, const std::vector<at::Tensor>& inputs, const Bodies& body);

  // Every unit's parameters full (for state_dict, save, load) / freed again. Collective.
  void gather_all() override;
  void release_all() override;
  // Copies this rank's slice of every (gathered) unit into shard().
  void scatter_from_full() override;

  // FSDP's forward_prefetch / backward_prefetch (BACKWARD_PRE): while unit u
  // runs its forward, unit u + 1's all-gather is already in flight; while it
  // runs its backward, unit u - 1's. Costs the memory of one more unit whole.
  void set_prefetch(bool forward, bool backward) {
    forward_prefetch_ = forward;
    backward_prefetch_ = backward;
  }

  void reduce_scatter_gradients() override {}
  // Waits for (and frees) prefetches not consumed, before the step changes the shards.
  void before_step() override { drain_prefetches(); }
  void after_step() override {}
  void zero_grad() override;

  // Used by the autograd function. gather() consumes a prefetch of the unit.
  void gather(size_t unit);
  void release(size_t unit);
  // Issues the all-gather of `unit` (when it exists, is not whole and not in
  // flight) without waiting: the prefetch of the unit that runs next, in
  // forward order (forward) or backward order. Collective.
  void prefetch_forward(size_t after) {
    if (forward_prefetch_) prefetch(after + 1);
  }
  void prefetch_backward(size_t before) {
    if (backward_prefetch_ && before > 0) prefetch(before - 1);
  }
  // Waits for prefetches not consumed and frees them, and frees the unit kept
  // after the last forward (before a step changes the shards they hold).
  void drain_prefetches();
  // The end of a unit's forward with grad mode on: the unit stays whole until
  // the next unit's forward ends or a backward starts, so the unit whose
  // forward ends last (the one whose backward runs first: FSDP's root, which
  // it does not reshard after forward) is not all-gathered again at once.
  void finish_forward(size_t unit);
  // Frees the unit finish_forward kept (after the backward's unit is gathered).
  void start_backward();
  // Whether finish_forward keeps units: a model in training mode (an
  // evaluation forward with grad mode on is followed by no backward).
  void set_keep_after_forward(bool keep) { keep_after_forward_ = keep; }
  std::vector<at::Tensor> unit_parameters(size_t unit) const { return units_[unit].params; }
  // The unit holding `param` (the same tensor as one of unit_parameters), with
  // its full shape in *shape; -1 when no unit holds it (a frozen parameter, a buffer).
  int64_t unit_of(const at::Tensor& param, std::vector<int64_t>* shape) const;
  // The unit's parameter gradients (undefined: zero) after one backward:
  // reduce-scattered into shard().grad, or kept whole on a micro-step that
  // does not sync. Collective when syncing.
  void absorb_gradients(size_t unit, const std::vector<at::Tensor>& grads);
  // Bytes of the full local gradients kept between micro-steps that do not sync.
  int64_t unsynced_gradient_bytes() const;

 private:
  struct Unit {
    std::string name;
    std::vector<at::Tensor> params;
    std::vector<std::string> names;  // the model's parameter names
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int64_t> offsets;  // in the unit's flat buffer
    int64_t chunk = 0;             // S_u
    int64_t shard_offset = 0;      // where this unit's chunk starts in shard()
    at::Tensor full;               // world_size * S_u elements; storage freed outside the unit's use
    at::Tensor anchor;             // an empty leaf that requires grad, so the unit always has a backward
    at::Tensor unsynced_grad;      // full local gradient kept between micro-steps that do not sync
    int gathered = 0;              // nesting count of gather()
    std::unique_ptr<ProcessGroup::Pending> prefetch;  // an all-gather in flight into `full`
  };
  void prefetch(size_t unit);
  // Allocates the unit's full buffer and starts its all-gather (async: the
  // pending work, else done on return).
  std::unique_ptr<ProcessGroup::Pending> start_gather(Unit& unit, bool async);
  at::Tensor unit_shard(const Unit& unit) const { return shard_.narrow(0, unit.shard_offset, unit.chunk); }

  std::vector<Unit> units_;
  bool activation_checkpointing_ = false;
  bool forward_prefetch_ = false, backward_prefetch_ = false;
  int64_t kept_after_forward_ = -1;  // the unit finish_forward kept whole, or -1
  bool keep_after_forward_ = true;
};

}  // namespace accel::detail
