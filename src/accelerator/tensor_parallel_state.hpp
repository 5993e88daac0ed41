// save_state and load_state of a model split for tensor parallelism
// (docs/parallelism.md): the files hold the whole model and the whole
// optimizer state, exactly as an unsplit run writes them, so a checkpoint
// loads on any mesh (or none), and any checkpoint of the same model loads onto
// a split one. Saving gathers the slices over the tensor-parallel group
// (distributed checkpoints need no gather: save_dcp_state.hpp); loading keeps
// this rank's slices of what it read.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/shard_layout.hpp"
#include "model/model_impl.hpp"
#include "parallel/tensor_parallel.hpp"

namespace accel::detail {

// The model's parameters then buffers (model_state_dict's entries), the split
// ones gathered whole; under FULL_SHARD each unit gathered first and every
// value copied out. Collective over the tensor-parallel group (and FULL_SHARD's).
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

// Under a sharding strategy (ZeRO-1/2, FULL_SHARD, HYBRID_SHARD): the
// optimizer's state dict, this member's flat chunk of the model's slices, as
// the whole-layout state dict of this rank's slices (what
// whole_optimizer_state takes): every member's chunk all-gathered over
// `shard_group`, then cut per parameter. Collective over the shard group.
c10::IValue unsharded_optimizer_state(const c10::IValue& member_state, const ModelImpl& model,
                                      ProcessGroup& shard_group, const std::string& label);

// Optimizer i's state for a split model from a checkpoint laid out as
// `source` (the whole files any mesh writes, or the per-process shards of an
// unsplit sharded run): the whole state read, this rank's slices kept, and
// under a sharding strategy cut again for this member's chunk. Reads only.
c10::IValue split_optimizer_from_checkpoint(const CheckpointReader& reader, size_t i, const ShardLayout& source,
                                            const ModelImpl& model, const std::string& label);
// The same from the whole state dict (whole_layout's indices, e.g. read
// from a distributed checkpoint): this rank's slices, cut for this member's
// chunk under a sharding strategy.
c10::IValue split_optimizer_from_whole(const c10::IValue& whole, const ModelImpl& model, const std::string& label);

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
