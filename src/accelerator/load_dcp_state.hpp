// The model and optimizer state that Python Accelerate's FSDP save_state writes
// with SHARDED_STATE_DICT, in PyTorch's distributed checkpoint format
// (formats/dcp.hpp): pytorch_model_fsdp_<i>/ (keys "model.<name>") and
// optimizer_<i>/ (keys "optimizer.state.<name>.<key>",
// "optimizer.param_groups.0.<option>"), read whole on every process and then
// cut for the running strategy (load_accelerate_state.cpp).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <utility>
#include <vector>

#include "checkpoint/shard_layout.hpp"
#include "model/model_impl.hpp"

namespace accel::detail {

// Every tensor of `state_dict` (a model's parameters and buffers, whole) with
// its value "model.<name>" from the DCP directory. Throws IO naming the
// directory and the tensor when one is missing, has another shape or another
// kind of dtype, or when the directory holds a "model." tensor the model lacks.
std::vector<std::pair<at::Tensor, at::Tensor>> dcp_model_values(const std::string& model_dir,
                                                                const NamedTensors& state_dict);

// The optimizer state as libaccel's unsharded state dict over `whole`'s
// parameters (index = position): "state" from "optimizer.state.<name>.<key>",
// the one parameter group's options from "optimizer.param_groups.0.*", whose
// "params" must name exactly those parameters. Throws IO (Unsupported for more
// than one parameter group) naming the directory and the key.
c10::IValue dcp_optimizer_state(const std::string& optimizer_dir, const ShardLayout& whole);

}  // namespace accel::detail
