#include "accelerator/parallelism.hpp"

#include <string>
#include <vector>

#include "accel/error.hpp"
#include "accel/logging.hpp"
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

// Creates the group and adds "NAME [ranks]" to `names` (the INFO line below).
std::unique_ptr<ProcessGroup> group_along(RuntimeContext& state, const MeshShape& mesh,
                                          const std::vector<MeshDim>& varying, std::string& names) {
  const int rank = state.rank();
  const std::string name = mesh_group_name(mesh, rank, varying);
  const std::vector<int> ranks = mesh_group_ranks(mesh, rank, varying);
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  names += (names.empty() ? "" : "; ") + name + " [" + list + "]";
  return std::make_unique<ProcessGroup>(*state.process_group, state.subgroup_name(name), ranks);
}

}  // namespace

std::optional<MeshShape> resolve_parallelism(const std::optional<ParallelismConfig>& option) {
  MeshShape mesh;
  if (option) {
    mesh.dp_replicate = option->dp_replicate_size;
    mesh.dp_shard = option->dp_shard_size;
    mesh.tp = option->tp_size;
    mesh.cp = option->cp_size;
    for (MeshDim dim : {MeshDim::DpReplicate, MeshDim::DpShard, MeshDim::Cp, MeshDim::Tp}) {
      require_arg(mesh.size(dim) >= 1, "parallelism_config." + std::string(to_string(dim)) +
                                           "_size must be at least 1, got " + std::to_string(mesh.size(dim)));
    }
    return mesh;
  }
  if (!get_env_flag("ACCELERATE_USE_PARALLELISM_CONFIG", false)) return std::nullopt;
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
  // Accelerate shards over dp_shard x cp (its "dp_shard_cp" mesh dimension).
  require_arg(mesh.dp_shard * mesh.cp > 1, std::string("sharding_strategy ") + to_string(strategy) +
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
  std::string names;
  if (mesh.tp > 1) state.tp_group = group_along(state, mesh, {MeshDim::Tp}, names);
  // The ranks of a context-parallel group hold the same parameters but see
  // the same batches: their gradients are averaged with the data-parallel
  // ranks', their batches are not dealt apart.
  if (mesh.cp > 1) state.cp_group = group_along(state, mesh, {MeshDim::Cp}, names);
  if (mesh.tp > 1 || mesh.cp > 1)
    state.data_group = group_along(state, mesh, {MeshDim::DpReplicate, MeshDim::DpShard, MeshDim::Cp}, names);
  if (mesh.cp > 1) state.batch_group = group_along(state, mesh, {MeshDim::DpReplicate, MeshDim::DpShard}, names);
  // A sharded model over dp_shard (x cp), its shards replicated across dp_replicate (HSDP).
  if (state.sharding_strategy != ShardingStrategy::NoShard && mesh.dp_replicate > 1) {
    state.shard_group = group_along(state, mesh, {MeshDim::DpShard, MeshDim::Cp}, names);
    state.replica_group = group_along(state, mesh, {MeshDim::DpReplicate}, names);
  }
  // ACCELERATE_LOG_LEVEL=INFO shows each rank's groups.
  Logger("accel.parallelism")
      .info("parallelism_config " + mesh.describe() + ": rank " + std::to_string(state.rank()) + " in " +
                (names.empty() ? std::string("the world's group only") : names),
            /*main_process_only=*/false);
}

}  // namespace accel::detail
