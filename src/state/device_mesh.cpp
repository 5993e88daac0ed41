#include "state/device_mesh.hpp"

#include <algorithm>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

constexpr MeshDim kOrder[] = {MeshDim::DpReplicate, MeshDim::DpShard, MeshDim::Cp, MeshDim::Tp};

bool spans(const std::vector<MeshDim>& varying, MeshDim dim) {
  return std::find(varying.begin(), varying.end(), dim) != varying.end();
}

}  // namespace

const char* to_string(MeshDim dim) {
  switch (dim) {
    case MeshDim::DpReplicate: return "dp_replicate";
    case MeshDim::DpShard: return "dp_shard";
    case MeshDim::Cp: return "cp";
    case MeshDim::Tp: return "tp";
  }
  return "unknown";
}

int64_t MeshShape::size(MeshDim dim) const {
  switch (dim) {
    case MeshDim::DpReplicate: return dp_replicate;
    case MeshDim::DpShard: return dp_shard;
    case MeshDim::Cp: return cp;
    case MeshDim::Tp: return tp;
  }
  return 1;
}

std::string MeshShape::describe() const {
  std::string text;
  for (MeshDim dim : kOrder) {
    if (size(dim) == 1) continue;
    text += (text.empty() ? "" : " x ") + std::string(to_string(dim)) + " " + std::to_string(size(dim));
  }
  return text.empty() ? "a world of one" : text;
}

int64_t MeshPosition::at(MeshDim dim) const {
  switch (dim) {
    case MeshDim::DpReplicate: return dp_replicate;
    case MeshDim::DpShard: return dp_shard;
    case MeshDim::Cp: return cp;
    case MeshDim::Tp: return tp;
  }
  return 0;
}

void check_mesh(const MeshShape& shape, int world_size) {
  for (MeshDim dim : kOrder) {
    require_arg(shape.size(dim) >= 1, "parallelism_config: " + std::string(to_string(dim)) +
                                          "_size must be at least 1, got " + std::to_string(shape.size(dim)));
  }
  require_arg(shape.total() == world_size,
              "parallelism_config: dp_replicate_size " + std::to_string(shape.dp_replicate) + " x dp_shard_size " +
                  std::to_string(shape.dp_shard) + " x cp_size " + std::to_string(shape.cp) + " x tp_size " +
                  std::to_string(shape.tp) + " = " + std::to_string(shape.total()) + ", but the world has " +
                  std::to_string(world_size) + " processes; the product must equal the number of processes");
}

MeshPosition mesh_position(const MeshShape& shape, int rank) {
  MeshPosition p;
  int64_t rest = rank;
  p.tp = rest % shape.tp, rest /= shape.tp;
  p.cp = rest % shape.cp, rest /= shape.cp;
  p.dp_shard = rest % shape.dp_shard, rest /= shape.dp_shard;
  p.dp_replicate = rest;
  return p;
}

int mesh_rank(const MeshShape& shape, const MeshPosition& p) {
  return static_cast<int>(((p.dp_replicate * shape.dp_shard + p.dp_shard) * shape.cp + p.cp) * shape.tp + p.tp);
}

std::vector<int> mesh_group_ranks(const MeshShape& shape, int rank, const std::vector<MeshDim>& varying) {
  const MeshPosition me = mesh_position(shape, rank);
  std::vector<int> ranks;
  for (int other = 0; other < shape.total(); ++other) {
    const MeshPosition p = mesh_position(shape, other);
    bool same = true;
    for (MeshDim dim : kOrder) same = same && (spans(varying, dim) || p.at(dim) == me.at(dim));
    if (same) ranks.push_back(other);
  }
  return ranks;
}

std::string mesh_group_name(const MeshShape& shape, int rank, const std::vector<MeshDim>& varying) {
  const MeshPosition me = mesh_position(shape, rank);
  std::string spanned, fixed;
  for (MeshDim dim : kOrder) {
    if (spans(varying, dim)) {
      spanned += (spanned.empty() ? "" : "+") + std::string(to_string(dim));
    } else {
      fixed += (fixed.empty() ? "" : ".") + std::string(to_string(dim)) + std::to_string(me.at(dim));
    }
  }
  return "mesh/" + spanned + "/" + fixed;
}

}  // namespace accel::detail
