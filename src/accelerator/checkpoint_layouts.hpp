// Which sharding layout (checkpoint/shard_layout.hpp) a model's trainable
// parameters have under the running accelerator, which one they had when a
// checkpoint was saved (its manifest's "layouts"), and the state of the one
// cut for the other: load_state's route when the strategy or the world size
// changed since the save.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "accelerator/accelerator_state.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/shard_layout.hpp"
#include "model/model_impl.hpp"

namespace accel::detail {

// The layout of `model` now, and this process's member of its shard group.
ShardLayout live_layout(const ModelImpl& model);
// Its trainable parameters unsharded, in registration order (a whole optimizer's
// indices). A parameter split for tensor parallelism has its whole shape, or
// with `slices` the shape of this rank's slice.
ShardLayout whole_layout(const ModelImpl& model, bool slices = false);
// live_layout with the shapes this rank holds: the same but for a model split
// for tensor parallelism, whose layouts above show each parameter whole (as
// checkpoints hold it) and this one its slice (as its optimizer holds it).
ShardLayout local_layout(const ModelImpl& model);
int live_member(const ModelImpl& model);

// The layout model i had at the save: the manifest's "layouts"[i]; for
// checkpoints written before it was recorded, what the manifest's flags and
// the model prepared now imply (FULL_SHARD units from the shard files'
// metadata; HYBRID_SHARD's node size cannot be known: Unsupported).
ShardLayout saved_layout(const JsonFile& manifest, const CheckpointReader& reader, const ModelImpl& model, size_t i);

// Optimizer i's state dict for this process, cut from the saved files
// (optimizer.bin for a whole source, one optimizer_rank<m>.bin per member
// otherwise), each checked against the manifest and read only where this
// process's elements lie.
c10::IValue resharded_optimizer(const CheckpointReader& reader, size_t i, const ShardLayout& source,
                                const ShardLayout& target, int member);

// Model i's values for this process when the saved parameters were sharded
// (FULL_SHARD/HYBRID model_rank<m>.safetensors) and the layout changed: the
// tensors to copy into and their values (the FULL_SHARD shard, or each whole
// parameter), buffers from member 0's file. Reads only the members it needs.
std::vector<std::pair<at::Tensor, at::Tensor>> resharded_model(const CheckpointReader& reader, size_t i,
                                                               const ShardLayout& source, const ModelImpl& model);

}  // namespace accel::detail
