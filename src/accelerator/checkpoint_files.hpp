// What save_state and load_state share: the file names of a checkpoint
// directory, the objects a checkpoint covers, and the generator states.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "accel/checkpoint.hpp"
#include "accel/data.hpp"
#include "checkpoint/random_states.hpp"
#include "model/model_impl.hpp"
#include "accelerator/accelerator_state.hpp"

namespace accel::detail {

// Version 2 records a size and XXH3 checksum per file; version 1 (sizes only) still loads.
constexpr int kCheckpointFormatVersion = 2;
constexpr int kOldestReadableCheckpointVersion = 1;
constexpr const char* kManifestName = "manifest.json";

// "model.safetensors", "model_1.safetensors", ...
std::string numbered_file(const std::string& base, size_t i, const std::string& extension);
// "random_states_{rank}.pkl" (Accelerate's name and format); checkpoints
// written before libaccel used that format hold "random_states_{rank}.safetensors".
std::string random_states_file(int rank);
// SHARD_OPTIMIZER / SHARD_GRAD_OP: optimizer i's chunk of process `rank`
// (optimizer_rank1.bin, optimizer_2_rank0.bin), written by every process.
std::string optimizer_shard_file(size_t i, int rank);
// FULL_SHARD: model i's parameter shard of process `rank` (model_rank1.safetensors,
// model_2_rank0.safetensors), written by every process; see sharded_model_state.
std::string model_shard_file(size_t i, int rank);
// FSDP's SHARDED_STATE_DICT (PyTorch distributed checkpoints, Accelerate's
// names): model i's folder pytorch_model_fsdp_{i}, optimizer i's optimizer_{i}.
std::string dcp_model_folder(size_t i);
std::string dcp_optimizer_folder(size_t i);
std::string legacy_random_states_file(int rank);
// "custom_checkpoint_{i}.pkl" (Accelerate's name): the object's bytes as a
// pickled Python bytes object; checkpoints written before hold the raw bytes
// in "custom_checkpoint_{i}.bin".
std::string custom_object_file(size_t i);
std::string legacy_custom_object_file(size_t i);
std::string project_root(const AcceleratorState& state);
std::string checkpoints_root(const AcceleratorState& state);

// The prepared objects a checkpoint covers, in prepare order; objects that
// have been destroyed are forgotten.
struct CheckpointTargets {
  std::vector<std::shared_ptr<ModelImpl>> models;
  std::vector<OptimizerCheckpoint> optimizers;
  std::vector<CheckpointObject> schedulers;
  std::vector<DataLoader*> loaders;  // not movable: the pointers are stable
};
CheckpointTargets live_targets(AcceleratorState& state);

// A model's parameters then buffers.
NamedTensors model_state_dict(const ModelImpl& model);
// FULL_SHARD: what model_shard_file holds: "flat_param_shard" (this process's
// chunk of every wrap unit's flat parameter, units in forward order) then the
// buffers by name.
NamedTensors sharded_model_state(const ModelImpl& model);

// Partial directories of saves interrupted under automatic naming, removed on
// every process (Accelerator creation and load_state), so that a leftover
// never makes an empty checkpoints/ look non-empty to a restart recipe.
void remove_interrupted_saves(const AcceleratorState& state);

}  // namespace accel::detail
