// Which sharding strategy a process runs, from the options or from the
// environment `accel launch` (and Accelerate's launcher) writes.
#pragma once

#include <optional>

#include "accel/accelerator.hpp"

namespace accel::detail {

// The option when set; else ACCELERATE_USE_FSDP=true with FSDP_SHARDING_STRATEGY
// (a name or FSDP's number 1-5; Accelerate's default 1, FULL_SHARD), else
// ACCELERATE_USE_DEEPSPEED=true with ACCELERATE_DEEPSPEED_ZERO_STAGE (0 NoShard,
// 1 ShardOptimizer, 2 ShardGradOp; Accelerate's default 2), else NoShard.
// Throws InvalidArgument naming a malformed variable and Unsupported naming
// FULL_SHARD, HYBRID_SHARD or ZeRO stage 3, which libaccel does not run yet (issue 19: see docs/sharding.md).
ShardingStrategy resolve_sharding_strategy(const std::optional<ShardingStrategy>& option);

}  // namespace accel::detail
