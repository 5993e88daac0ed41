#include "sharding/strategy.hpp"

#include <string>

#include "accel/error.hpp"

namespace accel {

ShardingStrategy parse_sharding_strategy(const std::string& text) {
  // FSDP's ShardingStrategy enum values, as Accelerate 0.22 writes them.
  if (text == "1" || text == "FULL_SHARD") return ShardingStrategy::FullShard;
  if (text == "2" || text == "SHARD_GRAD_OP") return ShardingStrategy::ShardGradOp;
  if (text == "3" || text == "NO_SHARD") return ShardingStrategy::NoShard;
  if (text == "4" || text == "HYBRID_SHARD") return ShardingStrategy::HybridShard;
  if (text == "5" || text == "HYBRID_SHARD_ZERO2") {
    fail(ErrorCode::Unsupported, "sharding strategy \"" + text +
                                     "\" (HYBRID_SHARD_ZERO2: SHARD_GRAD_OP within a node) is not supported; "
                                     "use HYBRID_SHARD (FULL_SHARD within a node)");
  }
  if (text == "SHARD_OPTIMIZER") return ShardingStrategy::ShardOptimizer;
  fail(ErrorCode::InvalidArgument,
       "sharding strategy \"" + text +
           "\" is not one of NO_SHARD, SHARD_OPTIMIZER, SHARD_GRAD_OP, FULL_SHARD, HYBRID_SHARD, "
           "HYBRID_SHARD_ZERO2 or FSDP's numbers 1-5");
}

const char* to_string(ShardingStrategy strategy) {
  switch (strategy) {
    case ShardingStrategy::NoShard: return "NO_SHARD";
    case ShardingStrategy::ShardOptimizer: return "SHARD_OPTIMIZER";
    case ShardingStrategy::ShardGradOp: return "SHARD_GRAD_OP";
    case ShardingStrategy::FullShard: return "FULL_SHARD";
    case ShardingStrategy::HybridShard: return "HYBRID_SHARD";
  }
  return "unknown";
}

}  // namespace accel
