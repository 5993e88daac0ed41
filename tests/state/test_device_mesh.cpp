// ParallelismConfig's mesh arithmetic: Accelerate's order (dp_replicate,
// dp_shard, cp, tp; tp innermost), the groups along each dimension, and the
// checks against the world and the sharding strategy.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "accel/error.hpp"
#include "accelerator/parallelism.hpp"
#include "state/device_mesh.hpp"

namespace {

using accel::detail::MeshDim;
using accel::detail::MeshShape;

MeshShape mesh(int64_t replicate, int64_t shard, int64_t tp) {
  MeshShape shape;
  shape.dp_replicate = replicate, shape.dp_shard = shard, shape.tp = tp;
  return shape;
}

std::string error_of(const MeshShape& shape, int world, accel::ShardingStrategy strategy,
                     accel::ErrorCode* code = nullptr) {
  try {
    accel::detail::check_parallelism(shape, world, strategy);
  } catch (const accel::Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(DeviceMesh, TensorParallelRanksAreConsecutive) {
  const MeshShape shape = mesh(2, 1, 2);  // 4 ranks: (r0: 0 1) (r1: 2 3)
  EXPECT_EQ(accel::detail::mesh_group_ranks(shape, 0, {MeshDim::Tp}), (std::vector<int>{0, 1}));
  EXPECT_EQ(accel::detail::mesh_group_ranks(shape, 3, {MeshDim::Tp}), (std::vector<int>{2, 3}));
  EXPECT_EQ(accel::detail::mesh_group_ranks(shape, 1, {MeshDim::DpReplicate, MeshDim::DpShard}),
            (std::vector<int>{1, 3}));
  const MeshShape three_d = mesh(2, 2, 2);
  EXPECT_EQ(accel::detail::mesh_group_ranks(three_d, 5, {MeshDim::DpShard}), (std::vector<int>{5, 7}));
  EXPECT_EQ(accel::detail::mesh_group_ranks(three_d, 5, {MeshDim::DpReplicate}), (std::vector<int>{1, 5}));
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(accel::detail::mesh_rank(three_d, accel::detail::mesh_position(three_d, rank)), rank);
  }
  EXPECT_EQ(accel::detail::mesh_group_name(three_d, 5, {MeshDim::Tp}), "mesh/tp/dp_replicate1.dp_shard0.cp0");
  EXPECT_EQ(three_d.describe(), "dp_replicate 2 x dp_shard 2 x tp 2");
}

TEST(DeviceMesh, ChecksNameTheBadValue) {
  accel::ErrorCode code{};
  EXPECT_NE(error_of(mesh(1, 1, 3), 4, accel::ShardingStrategy::NoShard, &code).find("= 3, but the world has 4"),
            std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::InvalidArgument);
  EXPECT_NE(error_of(mesh(1, 2, 2), 4, accel::ShardingStrategy::NoShard).find("dp_shard_size 2 shards the model"),
            std::string::npos);
  EXPECT_NE(error_of(mesh(2, 1, 2), 4, accel::ShardingStrategy::FullShard).find("dp_shard_size, which is 1"),
            std::string::npos);
  EXPECT_NE(error_of(mesh(2, 2, 1), 4, accel::ShardingStrategy::ShardGradOp, &code).find("ZeRO-1/2"),
            std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::Unsupported);
  // Context parallelism counts in the product, and a sharding strategy
  // shards over dp_shard x cp (Accelerate's dp_shard_cp).
  MeshShape context = mesh(1, 1, 2);
  context.cp = 2;
  EXPECT_EQ(error_of(context, 4, accel::ShardingStrategy::NoShard), "");
  EXPECT_NE(error_of(context, 2, accel::ShardingStrategy::NoShard, &code).find("x cp_size 2 x tp_size 2 = 4"),
            std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::InvalidArgument);
  MeshShape context_only = mesh(1, 1, 1);
  context_only.cp = 2;
  EXPECT_EQ(error_of(context_only, 2, accel::ShardingStrategy::FullShard), "");
  MeshShape zero = mesh(1, 1, 0);
  EXPECT_NE(error_of(zero, 4, accel::ShardingStrategy::NoShard).find("tp_size must be at least 1, got 0"),
            std::string::npos);
  // Accelerate: all ones on several processes is plain data parallelism.
  EXPECT_EQ(accel::detail::check_parallelism(mesh(1, 1, 1), 4, accel::ShardingStrategy::NoShard).dp_replicate, 4);
  EXPECT_EQ(error_of(mesh(1, 2, 2), 4, accel::ShardingStrategy::FullShard), "");
  EXPECT_EQ(error_of(mesh(2, 2, 1), 4, accel::ShardingStrategy::HybridShard), "");
}

}  // namespace
