// ParallelismConfig's device mesh (Accelerate 1.10+): the world factored into
// dp_replicate x dp_shard x cp x tp, in Accelerate's order with tp innermost,
// so that a tensor-parallel group is consecutive ranks (one node's, with
// torchrun's numbering) and data parallelism crosses nodes. Pure arithmetic;
// the process groups over it live in RuntimeContext (state/runtime_context.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace accel::detail {

enum class MeshDim { DpReplicate, DpShard, Cp, Tp };
const char* to_string(MeshDim dim);

struct MeshShape {
  int64_t dp_replicate = 1;
  int64_t dp_shard = 1;
  int64_t cp = 1;
  int64_t tp = 1;

  int64_t size(MeshDim dim) const;
  int64_t total() const { return dp_replicate * dp_shard * cp * tp; }
  // The data-parallel dimensions together: the ranks that see different batches.
  int64_t data_parallel_size() const { return dp_replicate * dp_shard; }
  // "dp_replicate 2 x tp 2": the dimensions larger than one, in mesh order
  // ("a world of one" when none is).
  std::string describe() const;
};

// A rank's coordinate along each dimension.
struct MeshPosition {
  int64_t dp_replicate = 0, dp_shard = 0, cp = 0, tp = 0;
  int64_t at(MeshDim dim) const;
};

// Throws InvalidArgument naming a size below 1 or a product other than
// `world_size` (with the sizes that multiply to it).
void check_mesh(const MeshShape& shape, int world_size);

MeshPosition mesh_position(const MeshShape& shape, int rank);
int mesh_rank(const MeshShape& shape, const MeshPosition& position);

// The ranks that share `rank`'s coordinates on every dimension not in
// `varying`, ascending: the group along those dimensions that `rank` is in.
std::vector<int> mesh_group_ranks(const MeshShape& shape, int rank, const std::vector<MeshDim>& varying);

// A name for that group, the same on all its members ("mesh/tp/dp_replicate0.dp_shard1.cp0"):
// the dimensions it spans, then the fixed coordinates.
std::string mesh_group_name(const MeshShape& shape, int rank, const std::vector<MeshDim>& varying);

}  // namespace accel::detail
