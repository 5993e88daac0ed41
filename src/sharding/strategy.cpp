#include "sharding/strategy.hpp"

#include "accel/error.hpp"
#include "state/environment.hpp"

namespace accel {

ShardingStrategy parse_sharding_strategy(const std::string& text) {
  // FSDP's ShardingStrategy enum values, as Accelerate 0.22 writes them.
  if (text == "1" || text == "FULL_SHARD") return ShardingStrategy::FullShard;
  if (text == "2" || text == "SHARD_GRAD_OP") return ShardingStrategy::ShardGradOp;
  if (text == "3" || text == "NO_SHARD") return ShardingStrategy::NoShard;
  if (text == "4" || text == "HYBRID_SHARD" || text == "5" || text == "HYBRID_SHARD_ZERO2") {
    return ShardingStrategy::HybridShard;
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

namespace detail {

namespace {

ShardingStrategy from_zero_stage(const std::string& text) {
  if (text == "0") return ShardingStrategy::NoShard;
  if (text == "1") return ShardingStrategy::ShardOptimizer;
  if (text == "2") return ShardingStrategy::ShardGradOp;
  if (text == "3") {
    fail(ErrorCode::Unsupported,
         "ACCELERATE_DEEPSPEED_ZERO_STAGE=3 (parameter sharding, FULL_SHARD) is not supported yet; use stage 1 or 2");
  }
  fail(ErrorCode::InvalidArgument, "environment variable ACCELERATE_DEEPSPEED_ZERO_STAGE=\"" + text +
                                       "\" is not a ZeRO stage (0, 1, 2 or 3)");
}

}  // namespace

ShardingStrategy resolve_sharding_strategy(const std::optional<ShardingStrategy>& option) {
  ShardingStrategy strategy = ShardingStrategy::NoShard;
  std::string source = "sharding_strategy";
  if (option) {
    strategy = *option;
    require_arg(static_cast<int>(strategy) >= 0 && static_cast<int>(strategy) <= 4,
                "sharding_strategy " + std::to_string(static_cast<int>(strategy)) + " is not a ShardingStrategy value");
  } else if (get_env_flag("ACCELERATE_USE_FSDP", false)) {
    std::string text = get_env("FSDP_SHARDING_STRATEGY").value_or("1");
    source = "FSDP_SHARDING_STRATEGY=" + text;
    try {
      strategy = parse_sharding_strategy(text);
    } catch (const Error& error) {
      fail(ErrorCode::InvalidArgument, std::string("environment variable FSDP_SHARDING_STRATEGY: ") + error.what());
    }
  } else if (get_env_flag("ACCELERATE_USE_DEEPSPEED", false)) {
    strategy = from_zero_stage(get_env("ACCELERATE_DEEPSPEED_ZERO_STAGE").value_or("2"));
  }
  if (strategy == ShardingStrategy::FullShard || strategy == ShardingStrategy::HybridShard) {
    fail(ErrorCode::Unsupported, source + ": " + to_string(strategy) +
                                     " (parameter sharding) is not supported yet; use NO_SHARD, SHARD_OPTIMIZER "
                                     "(ZeRO-1) or SHARD_GRAD_OP (ZeRO-2)");
  }
  return strategy;
}

}  // namespace detail
}  // namespace accel
