// ParallelismConfig (Accelerate 1.10+) for the accelerator: the mesh sizes
// from `accel launch --parallelism_config_*` / Accelerate's launcher
// (ACCELERATE_USE_PARALLELISM_CONFIG=true with PARALLELISM_CONFIG_*_SIZE), checked
// against the world and the sharding strategy, and the process groups over it.
#pragma once

#include <optional>

#include "accel/options.hpp"
#include "state/device_mesh.hpp"
#include "state/runtime_context.hpp"

namespace accel::detail {

// The option's mesh when set (InvalidArgument naming a size below 1); else
// the environment's: nullopt unless ACCELERATE_USE_PARALLELISM_CONFIG is true,
// then each of PARALLELISM_CONFIG_{DP_REPLICATE,DP_SHARD,TP,CP}_SIZE (1 when
// unset; InvalidArgument naming a variable that is not a positive integer).
std::optional<MeshShape> resolve_parallelism(const std::optional<ParallelismConfig>& option);

// Checks `mesh` against the world and `strategy` before anything is created,
// as Accelerate's ParallelismConfig._validate_accelerator does (sizes that
// multiply to the world size; all ones means dp_replicate = the world), and
// returns the mesh to use. InvalidArgument naming the value: a product other
// than the world size, dp_shard_size > 1 without a sharding strategy, a
// sharding strategy with dp_shard_size x cp_size 1. Unsupported:
// SHARD_GRAD_OP or SHARD_OPTIMIZER over dp_replicate x dp_shard (FULL_SHARD
// and HYBRID_SHARD replicate their shards; ZeRO-1/2 do not yet).
MeshShape check_parallelism(const MeshShape& mesh, int world_size, ShardingStrategy strategy);

// Creates this rank's groups of the mesh on state.process_group (every rank
// calls it, with the same mesh): tp_group with tp_size > 1, cp_group and
// batch_group with cp_size > 1, data_group with either; the
// dp_shard group (shard_group) and the dp_replicate group (replica_group) when
// a sharded model replicates across dp_replicate. Collective.
void create_mesh_groups(RuntimeContext& state, const MeshShape& mesh);

}  // namespace accel::detail
