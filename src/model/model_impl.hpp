// The model behind an accel::Model handle: a module (torch::nn or TorchScript)
// plus what prepare() adds — the accelerator's state and gradient sync.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/gradient_sync.hpp"
#include "parallel/context_parallel.hpp"
#include "parallel/tensor_parallel.hpp"
#include "sharding/flat_shard.hpp"
#include "sharding/full_shard.hpp"

namespace accel::detail {

struct RuntimeContext;

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class ModelImpl : public std::enable_shared_from_this<ModelImpl> {
 public:
  virtual ~ModelImpl();

  virtual NamedTensors named_parameters() const = 0;
  virtual NamedTensors named_buffers() const = 0;
  // PyTorch's state_dict() order: modules in pre-order, each one's parameters
  // then its buffers (Hugging Face's shard packing follows this order).
  virtual NamedTensors state_dict() const = 0;
  virtual void set_training(bool training) = 0;
  virtual bool training() const = 0;

  // Runs the module under the accelerator's autocast, arms gradient sync for the
  // backward that follows, and returns float32 outputs under mixed precision.
  at::Tensor forward(const at::Tensor& input);
  // Named inputs to named outputs, as Hugging Face models are called
  // (input_ids, attention_mask, labels -> loss, logits), with forward()'s
  // device check, autocast, gradient-sync arming and float32 outputs.
  // Throws InvalidArgument naming a missing, unknown or undefined input.
  NamedTensors forward_named(const NamedTensors& inputs);

  // Moves to the device, broadcasts rank 0's weights, installs gradient sync. Collective.
  void prepare(const std::shared_ptr<RuntimeContext>& state);
  bool prepared() const { return state_ != nullptr; }
  c10::Device device() const { return device_; }
  // Set by load_checkpoint_and_dispatch for a map holding a GPU: the graph
  // moves each node's inputs where its weights are, so inputs may come from
  // any device (the outputs go back there), as with Accelerate's hooks;
  // cleared by a dispatch whose map holds no GPU.
  void set_inputs_on_any_device(bool any) { inputs_on_any_device_ = any; }
  GradientSync* gradient_sync() { return gradient_sync_.get(); }
  // Set by prepare under SHARD_OPTIMIZER, SHARD_GRAD_OP and FULL_SHARD with several processes.
  const std::shared_ptr<FlatShard>& flat_shard() const { return flat_shard_; }
  // Set by prepare under FULL_SHARD with several processes (the same object as flat_shard()).
  FullShard* full_shard() const { return full_shard_.get(); }
  // Set by prepare with tp_size > 1: the model is split, and these parameters
  // hold this rank's slices (state_dict() shows them as they are; the
  // accelerator's get_state_dict gathers them whole).
  const TensorParallelModel* tensor_parallel() const { return tensor_parallel_ ? &*tensor_parallel_ : nullptr; }

  // Under FULL_SHARD, every unit's parameters are gathered (full) while one of
  // these lives, so state_dict readers and writers see the whole tensors; a
  // writer calls scattered() before it ends to copy its slices into the
  // shards (FULL_SHARD, and any strategy's host copy under CPU offload).
  // Construction is collective under FULL_SHARD (it all-gathers);
  // destruction only frees.
  class Gathered {
   public:
    explicit Gathered(const ModelImpl& model);
    ~Gathered();
    Gathered(const Gathered&) = delete;
    Gathered& operator=(const Gathered&) = delete;
    void scattered();

   private:
    FlatShard* shard_;
  };

  // Splits the model for tensor parallelism (parallel/tensor_parallel.hpp) and
  // returns the split parameters by state-dict name; nothing changes when it
  // throws. The default (C++ modules) throws Unsupported. prepare
  // splits with its tp group; estimate_memory splits an unprepared model with
  // none (slot.group null), for the shapes alone: its forward cannot run then.
  virtual ParameterSplits split_for_tensor_parallel(const TensorParallelSlot& slot);
  // Makes the model run on this rank's block of the sequence
  // (parallel/context_parallel.hpp); an inactive slot undoes it.
  // `tensor_parallel`: the model is about to be split for tensor parallelism
  // too. Nothing changes when it throws. The default (C++ modules,
  // TorchScript) throws Unsupported.
  virtual void use_context_parallel(const ContextParallelSlot& slot, bool tensor_parallel);

  // transformers' hf_device_map: the device map dispatch_model or
  // load_checkpoint_and_dispatch last placed the model with (module name to
  // device, in the map's order); empty when neither did.
  const std::vector<std::pair<std::string, std::string>>& hf_device_map() const { return hf_device_map_; }
  void set_hf_device_map(std::vector<std::pair<std::string, std::string>> map) { hf_device_map_ = std::move(map); }

 protected:
  virtual at::Tensor run(const at::Tensor& input) = 0;
  // Default for modules with one tensor in and out: exactly one input (any
  // name) and the output named "output".
  virtual NamedTensors run_named(const NamedTensors& inputs);
  virtual void move_to(const c10::Device& device) = 0;
  // FULL_SHARD's wrap units, one per non-empty layout, in forward order: for a
  // model made of layers, each top-level layer with trainable parameters, or
  // (min_num_params > 0, Accelerate's size_based_auto_wrap_policy)
  // consecutive layers grouped until they hold min_num_params; a model that
  // returns such units runs them through full_shard()->run_unit. The default,
  // for models that cannot be cut (a C++ module), is one whole_model unit of
  // every trainable parameter, which forward() runs around run()/run_named()
  // (FSDP wrapping the root only). Throws Unsupported for a policy the model
  // cannot honour.
  virtual std::vector<UnitLayout> wrap_units(const WrapPolicy& policy);
  // Under FULL_SHARD with a whole_model unit: its index.
  std::optional<size_t> whole_model_unit() const { return whole_model_unit_; }

 private:
  // What every training forward does before the module runs: buffers from
  // process 0 (broadcast_buffers); and after it succeeded: arming gradient sync.
  void before_forward();
  void after_forward();
  at::Tensor run_in_units(const at::Tensor& input);
  NamedTensors run_named_in_units(const NamedTensors& inputs);
  at::Tensor to_output_precision(at::Tensor output) const;

  std::shared_ptr<RuntimeContext> state_;
  std::unique_ptr<GradientSync> gradient_sync_;  // none under SHARD_GRAD_OP: the shard reduce-scatters
  std::shared_ptr<FlatShard> flat_shard_;
  std::shared_ptr<FullShard> full_shard_;
  std::optional<size_t> whole_model_unit_;
  std::optional<TensorParallelModel> tensor_parallel_;
  c10::Device device_{c10::kCPU};
  bool inputs_on_any_device_ = false;
  std::vector<std::pair<std::string, std::string>> hf_device_map_;
};

// A TorchScript file as a model (see Model::from_torchscript). Throws what
// torch::jit::load throws; InvalidArgument for empty or repeated output names.
// empty: its parameters on the meta device, unread (load_script_module_empty).
std::shared_ptr<ModelImpl> load_script_model(const std::string& path, std::vector<std::string> output_names,
                                             bool empty = false);

}  // namespace accel::detail
