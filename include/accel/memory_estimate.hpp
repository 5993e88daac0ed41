// accel estimate-memory (Accelerate's command): the bytes each process needs
// for a model's parameters, gradients and optimizer state under each sharding
// strategy, from the model's parameter shapes alone (nothing is allocated).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "accel/accelerator.hpp"
#include "accel/optimizer.hpp"

namespace accel {

struct MemoryEstimate {
  ShardingStrategy strategy = ShardingStrategy::NoShard;
  HeldBytes bytes;                  // held between steps, as Accelerator::held_bytes counts it
  int64_t gathered_unit_bytes = 0;  // FULL_SHARD: the largest unit, whole while it runs
  // With cpu_offload: how many of `bytes` are in host memory (the master
  // chunk, gradient chunk and optimizer state); the rest is on the device.
  int64_t offloaded_bytes = 0;
  // 1: the strategy over every process. More: the strategy over the
  // world_size / tp_size data-parallel processes of a mesh whose tensor-parallel
  // groups of tp_size split the model as prepare would (ParallelismConfig).
  int tp_size = 1;
};

// What to estimate for; the fields as the function below takes them.
struct MemoryEstimateOptions {
  int world_size = 1;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  int64_t min_num_params = 0;
  bool cpu_offload = false;
  int num_machines = 1;
  // More than 1: besides the rows above, the same strategies with the model
  // split over tensor-parallel groups of tp_size (ranks consecutive within a
  // machine), its plan applied as prepare applies it (the spec's "tp_plan" or
  // the built-in one), and data parallelism over the world_size / tp_size
  // ranks holding the same slices (HYBRID_SHARD: over each machine's share).
  int tp_size = 1;
};

// `path`: a JSON model spec (.json), a TorchScript file (.pt, .pth, .ts) or a
// safetensors checkpoint (.safetensors, or a sharded index .json naming
// "weight_map"). Wrap units: the top-level layers (names before the first
// '.'), grouped as fsdp_min_num_params does (0: one per layer); a TorchScript
// model is one unit, as FULL_SHARD wraps it without
// fsdp_transformer_layer_cls_to_wrap. Optimizer
// state elements per parameter: Adam/AdamW 2, SGD (with momentum) 1, RMSprop
// 1, Adagrad 1. Parameters are counted in their own dtype (fp32 for specs).
// cpu_offload: the sharded strategies keep their master chunk (a second copy
// of the parameters' chunk), gradient chunk and optimizer state in host
// memory (AcceleratorOptions::cpu_offload); NO_SHARD cannot offload and is
// listed as without. One process without offload trains every strategy as
// NO_SHARD; with offload it shards over a world of one.
// num_machines > 1 adds a HYBRID_SHARD row: FULL_SHARD within each machine's
// world_size / num_machines processes, replicated across machines.
// Throws InvalidArgument naming a world_size below 1, a negative
// min_num_params or a num_machines that does not divide world_size; IO
// naming a file that cannot be read, or a path that does not exist (saying
// that Hub model names are not supported and what to pass instead). A folder
// stands for the first of model.safetensors.index.json, model.safetensors,
// pytorch_model.bin.index.json, pytorch_model.bin and model.pt it holds.
std::vector<MemoryEstimate> estimate_memory(const std::string& path, int world_size, OptimizerKind optimizer,
                                            int64_t min_num_params = 0, bool cpu_offload = false, int num_machines = 1);

// The rows above, then with options.tp_size > 1 the same strategies under
// tensor parallelism (tp_size set in each). Besides the errors above: tp_size
// below 1, or not dividing each machine's world_size / num_machines
// processes, is InvalidArgument naming it; tp_size > 1 on a checkpoint (which
// does not say how its layers would split) is Unsupported, and a model that
// cannot be split gives prepare's error (a size that does not divide the
// heads, a plan entry matching nothing, a TorchScript model that is not
// transformers' GPT-2).
std::vector<MemoryEstimate> estimate_memory(const std::string& path, const MemoryEstimateOptions& options);

}  // namespace accel
