// accel estimate-memory's arithmetic with tensor parallelism: a spec's layers
// split as prepare splits them, then each strategy over the data-parallel
// ranks. The distributed tests check the same rows against held_bytes on real
// meshes (dist_tensor_parallel); here the counts are worked out by hand.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "accel/checkpoint.hpp"
#include "accel/error.hpp"
#include "accel/memory_estimate.hpp"
#include "core/remove_tree.hpp"

namespace {

// One encoder layer (d_model 8, 2 heads, feed-forward 16) and a Linear head.
// Elements the built-in plan splits: in_proj 24x8 + 24, out_proj.weight 8x8,
// linear1 16x8 + 16, linear2.weight 8x16 = 552; left whole: out_proj.bias,
// linear2.bias (8 each) and two LayerNorms (16 each) = 48; the head 8x4 + 4 = 36.
constexpr int64_t kSplit = 552, kWhole = 48, kHead = 36;

class MemoryEstimateTp : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("accel_memory_estimate_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    spec_ = (dir_ / "model.json").string();
    std::ofstream(spec_) << R"({"layers": [
      {"type": "TransformerEncoderLayer", "d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0,
       "batch_first": true},
      {"type": "Linear", "in_features": 8, "out_features": 4}]})";
  }
  void TearDown() override {
    accel::detail::remove_tree(dir_.string());  // not std::filesystem::remove_all (docs/gpu.md)
  }

  static std::string error_of(const std::string& path, const accel::MemoryEstimateOptions& options,
                              accel::ErrorCode expected) {
    try {
      accel::estimate_memory(path, options);
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), expected) << e.what();
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
  std::string spec_;
};

const accel::MemoryEstimate& row(const std::vector<accel::MemoryEstimate>& rows, int tp,
                                 accel::ShardingStrategy strategy) {
  for (const auto& e : rows) {
    if (e.tp_size == tp && e.strategy == strategy) return e;
  }
  ADD_FAILURE() << "no row for tp_size " << tp << " and " << accel::to_string(strategy);
  return rows.front();
}

TEST_F(MemoryEstimateTp, SplitsTheSpecThenShardsOverTheDataParallelRanks) {
  accel::MemoryEstimateOptions options;
  options.world_size = 4;
  options.tp_size = 2;
  const auto rows = accel::estimate_memory(spec_, options);
  ASSERT_EQ(rows.size(), 8u);  // four strategies over 4 processes, then the same over tp 2 x dp 2
  const int64_t whole = kSplit + kWhole + kHead;
  EXPECT_EQ(row(rows, 1, accel::ShardingStrategy::NoShard).bytes.parameters, whole * 4);

  // Each rank of a tp group holds half of the split elements and all the others.
  const int64_t layer = kSplit / 2 + kWhole, local = layer + kHead;  // 324 + 36 = 360
  const accel::MemoryEstimate& replicated = row(rows, 2, accel::ShardingStrategy::NoShard);
  EXPECT_EQ(replicated.bytes.parameters, local * 4);
  EXPECT_EQ(replicated.bytes.gradients, local * 4);
  EXPECT_EQ(replicated.bytes.optimizer_state, 2 * local * 4);  // AdamW: two moments

  // FULL_SHARD over the 2 data-parallel ranks: each unit (a top-level layer) in halves.
  const accel::MemoryEstimate& full = row(rows, 2, accel::ShardingStrategy::FullShard);
  EXPECT_EQ(full.bytes.parameters, (layer / 2 + kHead / 2) * 4);
  EXPECT_EQ(full.gathered_unit_bytes, layer * 4);

  // ZeRO-2: whole local parameters, a flat chunk of gradients and state.
  const accel::MemoryEstimate& zero2 = row(rows, 2, accel::ShardingStrategy::ShardGradOp);
  EXPECT_EQ(zero2.bytes.parameters, local * 4);
  EXPECT_EQ(zero2.bytes.gradients, local / 2 * 4);
  EXPECT_EQ(zero2.bytes.optimizer_state, local * 4);
}

TEST_F(MemoryEstimateTp, OneDataParallelRankListsOnlyNoShardUnderTheMesh) {
  accel::MemoryEstimateOptions options;
  options.world_size = 2;
  options.tp_size = 2;
  const auto rows = accel::estimate_memory(spec_, options);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows.back().tp_size, 2);
  EXPECT_EQ(rows.back().strategy, accel::ShardingStrategy::NoShard);
  EXPECT_EQ(rows.back().bytes.parameters, (kSplit / 2 + kWhole + kHead) * 4);
}

TEST_F(MemoryEstimateTp, RefusesWhatAMeshCannotBe) {
  accel::MemoryEstimateOptions options;
  options.world_size = 4;
  options.tp_size = 3;
  EXPECT_NE(error_of(spec_, options, accel::ErrorCode::InvalidArgument)
                .find("tp_size must divide the 4 processes of each machine (world_size 4, num_machines 1), got 3"),
            std::string::npos);
  options.tp_size = 2;
  options.num_machines = 4;  // one process per machine: a tp group would cross machines
  EXPECT_NE(error_of(spec_, options, accel::ErrorCode::InvalidArgument).find("got 2"), std::string::npos);
  options.num_machines = 1;
  options.tp_size = 4;  // the layer has 2 heads: prepare's own error
  EXPECT_NE(
      error_of(spec_, options, accel::ErrorCode::InvalidArgument).find("tp_size 4 does not divide its num_heads 2"),
      std::string::npos);
  options.tp_size = 0;
  EXPECT_NE(error_of(spec_, options, accel::ErrorCode::InvalidArgument).find("got 0"), std::string::npos);

  // A checkpoint does not say how its layers would split.
  const std::string weights = (dir_ / "model.safetensors").string();
  accel::save_safetensors(weights, {{"0.weight", at::ones({4, 4})}});
  options.tp_size = 2;
  EXPECT_NE(error_of(weights, options, accel::ErrorCode::Unsupported)
                .find("tp_size 2 needs a model (a JSON spec or a TorchScript file)"),
            std::string::npos);
  options.tp_size = 1;
  EXPECT_EQ(accel::estimate_memory(weights, options).size(), 4u);
}

}  // namespace
