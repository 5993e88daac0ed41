#include "accelerator/parallelism.hpp"

#include <string>
#include <vector>

#include "accel/error.hpp"
#include "sharding/strategy.hpp"
#include "state/environment.hpp"

namespace accel::detail {

namespace {

int64_t size_from_env(const char* name) {
  const std::optional<std::string> text = get_env(name);
  if (!text) return 1;
  int64_t value = 0;
  try {
    size_t used = 0;
    value = std::stoll(*text, &used);
    if (used != text->size()) value = 0;
  } catch (const std::exception&) {
    value = 0;
  }
  require_arg(value >= 1, "environment variable " + std::string(name) + "=\"" + text->substr(0, 40) +
                              "\" is not a positive integer");
  return value;
}

std::unique_ptr<ProcessGroup> group_along(RuntimeContext& state, const MeshShape& mesh,
                                          const std::vector<MeshDim>& varying) {
  const int rank = state.rank();
  return std::make_unique<ProcessGroup>(*state.process_group, mesh_group_name(mesh, rank, varying),
                                        mesh_group_ranks(mesh, rank, varying));
}

}  // namespace

std::optional<MeshShape> resolve_parallelism() {
  if (!get_env_flag("ACCELERATE_USE_PARALLELISM_CONFIG", false)) return std::nullopt;
  MeshShape mesh;
  mesh.dp_replicate = size_from_env("PARALLELISM_CONFIG_DP_REPLICATE_SIZE");
  mesh.dp_shard = size_from_env("PARALLELISM_CONFIG_DP_SHARD_SIZE");
  mesh.tp = size_from_env("PARALLELISM_CONFIG_TP_SIZE");
  mesh.cp = size_from_env("PARALLELISM_CONFIG_CP_SIZE");
  return mesh;
}

MeshShape check_parallelism(const MeshShape& given, int world_size, ShardingStrategy strategy) {
  MeshShape mesh = given;
  // Accelerate: a config of all ones on several processes is plain data parallelism.
  if (mesh.total() == 1) mesh.dp_replicate = world_size;
  check_mesh(mesh, world_size);
  const std::string sizes = " (parallelism_config: " + mesh.describe() + ")";
  if (strategy == ShardingStrategy::NoShard) {
    require_arg(mesh.dp_shard == 1, "parallelism_config dp_shard_size " + std::to_string(mesh.dp_shard) +
                                        " shards the model, but no sharding strategy is set: set one (FULL_SHARD, "
                                        "SHARD_GRAD_OP, ...; Accelerate's FSDP) or use dp_replicate_size" +
                                        sizes);
    return mesh;
  }
  require_arg(mesh.dp_shard > 1, std::string("sharding_strategy ") + to_string(strategy) +
                                     " shards over parallelism_config's dp_shard_size, which is 1: set "
                                     "dp_shard_size > 1 or sharding_strategy NO_SHARD" +
                                     sizes);
  require(mesh.dp_replicate == 1 || shards_parameters(strategy), ErrorCode::Unsupported,
          std::string("sharding_strategy ") + to_string(strategy) + " with dp_replicate_size " +
              std::to_string(mesh.dp_replicate) +
              " > 1: ZeRO-1/2 shards are not replicated yet; use FULL_SHARD or HYBRID_SHARD" + sizes);
  return mesh;
}

void create_mesh_groups(RuntimeContext& state, const MeshShape& mesh) {
  state.mesh = mesh;
  if (!state.process_group) return;
  if (mesh.tp > 1) {
    state.tp_group = group_along(state, mesh, {MeshDim::Tp});
    state.data_group = group_along(state, mesh, {MeshDim::DpReplicate, MeshDim::DpShard});
  }
  // A sharded model over dp_shard, its shards replicated across dp_replicate (HSDP).
  if (state.sharding_strategy != ShardingStrategy::NoShard && mesh.dp_replicate > 1) {
    state.shard_group = group_along(state, mesh, {MeshDim::DpShard});
    state.replica_group = group_along(state, mesh, {MeshDim::DpReplicate});
  }
}

}  // namespace accel::detail
