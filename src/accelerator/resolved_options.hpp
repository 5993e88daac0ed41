// AcceleratorOptions resolved once: every value checked, and every override
// that `accel launch` and Accelerate's launcher write into the environment
// (ACCELERATE_*, FSDP_*) applied, here and nowhere else. The Accelerator is
// built from the result; a bad value fails here, naming the option or the
// variable, before anything (a process group, a device) is created.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "accel/options.hpp"
#include "accelerator/rng_sync.hpp"
#include "state/device_mesh.hpp"

namespace accel::detail {

struct ResolvedOptions {
  AcceleratorOptions given;  // as the caller passed them, for the fields below that are copied unchanged
  bool use_cpu = false;      // the cpu option or ACCELERATE_USE_CPU
  MixedPrecision mixed_precision = MixedPrecision::No;  // the option, else ACCELERATE_MIXED_PRECISION
  int64_t gradient_accumulation_steps = 1;              // ACCELERATE_GRADIENT_ACCUMULATION_STEPS wins over the option
  bool debug_mode = false;                              // ACCELERATE_DEBUG_MODE
  ShardingStrategy sharding_strategy = ShardingStrategy::NoShard;
  int64_t fsdp_min_num_params = 0;
  std::vector<std::string> fsdp_wrap_classes;
  bool fsdp_backward_prefetch = true;
  bool fsdp_forward_prefetch = false;
  bool fsdp_activation_checkpointing = false;
  bool cpu_offload = false;
  // FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT (Accelerate's fsdp_state_dict_type):
  // save_state writes sharded state as PyTorch distributed checkpoints.
  bool sharded_state_dict = false;
  // ParallelismConfig's sizes as given (accelerator/parallelism.hpp); checked
  // against the world once it is known.
  std::optional<MeshShape> parallelism;
  RngTypes rng_types;  // the option, else {"generator"}
  // InitProcessGroupKwargs: "" (the device's), "gloo" or "nccl", checked
  // against the device once it is chosen; init_method "tcp://HOST:PORT" as
  // the store's address (unset: MASTER_ADDR and MASTER_PORT).
  std::string backend;
  std::optional<std::string> store_host;
  int store_port = 0;
};

// Throws InvalidArgument naming the option or environment variable whose value
// is bad, Unsupported naming a combination libaccel does not run.
ResolvedOptions resolve_options(const AcceleratorOptions& options);

// The option when set; else ACCELERATE_USE_FSDP=true with FSDP_SHARDING_STRATEGY
// (a name or FSDP's number 1-5; Accelerate's default 1, FULL_SHARD), else
// ACCELERATE_USE_DEEPSPEED=true with ACCELERATE_DEEPSPEED_ZERO_STAGE (0 NoShard,
// 1 ShardOptimizer, 2 ShardGradOp, 3 FullShard; Accelerate's default 2), else NoShard.
// Throws InvalidArgument naming a malformed variable (HYBRID_SHARD_ZERO2, FSDP's
// 5, which libaccel does not run, among them).
ShardingStrategy resolve_sharding_strategy(const std::optional<ShardingStrategy>& option);

// FULL_SHARD's min_num_params: the option when set; else, with
// ACCELERATE_USE_FSDP=true, FSDP_MIN_NUM_PARAMS when FSDP_AUTO_WRAP_POLICY is
// SIZE_BASED_WRAP, and kOneUnit for NO_WRAP (Accelerate's default) or a
// minimum of 0; else 0 (one unit per layer; TRANSFORMER_BASED_WRAP too, whose
// units come from resolve_wrap_classes). InvalidArgument naming a negative
// option, a malformed variable or an unknown policy.
int64_t resolve_min_num_params(const std::optional<int64_t>& option);

// transformer_auto_wrap_policy's class or submodule names: the option when
// set; else FSDP_TRANSFORMER_CLS_TO_WRAP (comma-separated, Accelerate's
// variable) when ACCELERATE_USE_FSDP=true and FSDP_AUTO_WRAP_POLICY is
// TRANSFORMER_BASED_WRAP; else none. InvalidArgument naming an empty name, or
// TRANSFORMER_BASED_WRAP without the variable (Accelerate would read the
// model's _no_split_modules, which a TorchScript file does not keep).
std::vector<std::string> resolve_wrap_classes(const std::optional<std::vector<std::string>>& option);
// FULL_SHARD's backward prefetch: the option when set; else off only for
// FSDP_BACKWARD_PREFETCH=NO_PREFETCH under ACCELERATE_USE_FSDP (BACKWARD_PRE,
// BACKWARD_POST and unset: on). InvalidArgument naming another value.
bool resolve_backward_prefetch(const std::optional<bool>& option);

// Whether FULL_SHARD's units checkpoint their activations: the option, else
// FSDP_ACTIVATION_CHECKPOINTING under ACCELERATE_USE_FSDP. Throws Unsupported
// when on with a strategy that has no wrap units.
bool resolve_activation_checkpointing(const std::optional<bool>& option, ShardingStrategy strategy);

// Whether sharded models offload to the CPU: the option, else
// FSDP_OFFLOAD_PARAMS under ACCELERATE_USE_FSDP=true, else
// ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE or _PARAM_DEVICE "cpu" under
// ACCELERATE_USE_DEEPSPEED=true. InvalidArgument naming a device other than
// none and cpu (nvme: Unsupported); Unsupported when on with NoShard.
bool resolve_cpu_offload(const std::optional<bool>& option, ShardingStrategy strategy);

}  // namespace accel::detail
