// Which sharding strategy a process runs, from the options or from the
// environment `accel launch` (and Accelerate's launcher) writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "accel/accelerator.hpp"

namespace accel::detail {

// The option when set; else ACCELERATE_USE_FSDP=true with FSDP_SHARDING_STRATEGY
// (a name or FSDP's number 1-5; Accelerate's default 1, FULL_SHARD), else
// ACCELERATE_USE_DEEPSPEED=true with ACCELERATE_DEEPSPEED_ZERO_STAGE (0 NoShard,
// 1 ShardOptimizer, 2 ShardGradOp, 3 FullShard; Accelerate's default 2), else NoShard.
// Throws InvalidArgument naming a malformed variable (HYBRID_SHARD_ZERO2, FSDP's
// 5, which libaccel does not run, among them).
ShardingStrategy resolve_sharding_strategy(const std::optional<ShardingStrategy>& option);

// FULL_SHARD and HYBRID_SHARD: parameters sharded in wrap units (HYBRID_SHARD
// within each node, replicated across nodes).
inline bool shards_parameters(ShardingStrategy strategy) {
  return strategy == ShardingStrategy::FullShard || strategy == ShardingStrategy::HybridShard;
}

// A min_num_params that groups every layer into one unit.
constexpr int64_t kOneUnit = INT64_MAX;

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
