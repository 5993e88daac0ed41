// The model and optimizer state that Python Accelerate's FSDP save_state writes
// with SHARDED_STATE_DICT, in PyTorch's distributed checkpoint format
// (formats/dcp.hpp): pytorch_model_fsdp_<i>/ (keys "model.<name>") and
// optimizer_<i>/ (keys "optimizer.state.<name>.<key>",
// "optimizer.param_groups.0.<option>"), cut for the running strategy as they
// are read: a sharded process reads one whole parameter at a time and keeps
// its own elements of it.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <utility>
#include <vector>

#include "checkpoint/shard_layout.hpp"
#include "model/model_impl.hpp"

namespace accel::detail {

// The model's tensors to copy into, with their values from "model.<name>" of
// the DCP directory: each parameter and buffer whole, or under FULL_SHARD /
// HYBRID_SHARD this process's shard (FullShard::shard(), read one parameter at
// a time; nothing gathered) and the buffers. Throws IO naming the directory and
// the tensor when one is missing, has another shape or another kind of dtype,
// or when the directory holds a "model." tensor the model lacks.
std::vector<std::pair<at::Tensor, at::Tensor>> dcp_model_values(const std::string& model_dir, const ModelImpl& model);
// The same for a state dict of whole tensors.
std::vector<std::pair<at::Tensor, at::Tensor>> dcp_model_values(const std::string& model_dir,
                                                                const NamedTensors& state_dict);

// The optimizer state as the state dict of member `member` of `target`
// (optimizer_reshard.hpp: whole, one entry per parameter; flat or units, one
// entry for the member's vector, read one parameter at a time): "state" from
// "optimizer.state.<name>.<key>", the one parameter group's options from
// "optimizer.param_groups.0.*", whose "params" must name exactly the model's
// trainable parameters. Non-per-element values (step) must agree between
// parameters when cut. Throws IO (Unsupported for more than one parameter
// group) naming the directory and the key.
c10::IValue dcp_optimizer_state(const std::string& optimizer_dir, const ShardLayout& target, int member);

}  // namespace accel::detail
