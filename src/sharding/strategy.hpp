// What the sharding strategies have in common; the choice of one, from the
// options or the environment, is resolved in accelerator/resolved_options.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "accel/options.hpp"

namespace accel::detail {

// FULL_SHARD and HYBRID_SHARD: parameters sharded in wrap units (HYBRID_SHARD
// within each node, replicated across nodes).
inline bool shards_parameters(ShardingStrategy strategy) {
  return strategy == ShardingStrategy::FullShard || strategy == ShardingStrategy::HybridShard;
}

// A min_num_params that groups every layer into one unit.
constexpr int64_t kOneUnit = INT64_MAX;

}  // namespace accel::detail
