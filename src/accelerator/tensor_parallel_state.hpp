// save_state and load_state of a model split for tensor parallelism
// (docs/parallelism.md): the files hold the whole model and the whole
// optimizer state, exactly as an unsplit run writes them, so a checkpoint
// loads on any mesh (or none), and any checkpoint of the same model loads onto
// a split one. Saving gathers the slices over the tensor-parallel group;
// loading keeps this rank's slices of what it read.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <utility>
#include <vector>

#include "model/model_impl.hpp"
#include "parallel/tensor_parallel.hpp"

namespace accel::detail {

// The model's parameters then buffers (model_state_dict's entries), the split
// ones gathered whole. Collective over the tensor-parallel group.
NamedTensors whole_model_state(const ModelImpl& model);

// An optimizer state dict of PyTorch's structure for `model`'s trainable
// parameters (index = position, each once, in registration order), with the
// per-parameter tensors of split parameters (those shaped like this rank's
// slice) gathered whole; the rest as it is. Collective over the group.
c10::IValue whole_optimizer_state(const c10::IValue& state, const ModelImpl& model);

// The reverse: this rank's slices of a whole state dict's per-parameter
// tensors (those shaped like the whole parameter). Throws IO naming `label`
// and the parameter when such a tensor cannot be split.
c10::IValue split_optimizer_state(const c10::IValue& whole, const ModelImpl& model, const std::string& label);

// What load_state copies the saved model into: the model's entries, a split
// parameter replaced by a whole-shaped staging tensor; `keep_slices` then
// copies each staging tensor's slice into its parameter.
struct WholeModelTargets {
  struct Staged {
    at::Tensor parameter, staging;
    TensorSplit split;
  };
  NamedTensors targets;
  std::vector<Staged> staged;
  void keep_slices(const TensorParallelSlot& slot) const;
};
WholeModelTargets whole_model_targets(const ModelImpl& model, const NamedTensors& entries);

}  // namespace accel::detail
