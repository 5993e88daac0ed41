// shard_batches and StreamShard against tables produced by Accelerate's own
// BatchSamplerShard and IterableDatasetShard (tests/data/files/make_batch_shard_table.py):
// 1-3 processes, dataset lengths that divide evenly and not, drop_last,
// even_batches and split_batches on and off.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "accel/error.hpp"
#include "data/sharding.hpp"

namespace {

nlohmann::json load_table(const std::string& name = "accelerate_batch_shards.json") {
  std::ifstream in(std::string(ACCEL_TEST_FILES) + "/data/files/" + name);
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

TEST(Sharding, MatchesAccelerateBatchSamplerShard) {
  nlohmann::json table = load_table();
  ASSERT_GT(table.size(), 300u);
  for (const auto& row : table) {
    int64_t n = row["n"];
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    accel::detail::ShardSpec spec;
    spec.batch_size = row["batch_size"];
    spec.drop_last = row["drop_last"];
    spec.num_processes = row["num_processes"];
    spec.even_batches = row["even_batches"];
    spec.split_batches = row["split_batches"];
    for (int p = 0; p < spec.num_processes; ++p) {
      spec.process_index = p;
      auto plan = accel::detail::shard_batches(order, spec);
      auto expected = row["batches"][static_cast<size_t>(p)].get<std::vector<std::vector<int64_t>>>();
      EXPECT_EQ(plan.batches, expected) << row.dump() << " process " << p;
    }
  }
}

TEST(Sharding, StreamShardMatchesAccelerateIterableDatasetShard) {
  nlohmann::json table = load_table("accelerate_iterable_shards.json");
  ASSERT_GT(table.size(), 150u);
  for (const auto& row : table) {
    int64_t n = row["n"];
    accel::detail::ShardSpec spec;
    spec.batch_size = row["batch_size"];
    spec.drop_last = row["drop_last"];
    spec.num_processes = row["num_processes"];
    spec.split_batches = row["split_batches"];
    for (int p = 0; p < spec.num_processes; ++p) {
      spec.process_index = p;
      accel::detail::StreamShard<int64_t> shard(spec);
      std::vector<std::vector<int64_t>> batches;
      for (int64_t i = 0; i < n; ++i) {
        if (auto batch = shard.push(i)) batches.push_back(*batch);
      }
      int64_t real = -1;
      if (auto batch = shard.finish(&real)) batches.push_back(*batch);
      auto expected = row["batches"][static_cast<size_t>(p)].get<std::vector<std::vector<int64_t>>>();
      EXPECT_EQ(batches, expected) << row.dump() << " process " << p;
    }
  }
}

TEST(Sharding, SplitBatchesReportsTheShortLastBatchAsRemainder) {
  std::vector<int64_t> order(10);
  std::iota(order.begin(), order.end(), 0);
  accel::detail::ShardSpec spec;
  spec.batch_size = 4;
  spec.num_processes = 2;
  spec.split_batches = true;
  auto plan = accel::detail::shard_batches(order, spec);
  EXPECT_EQ(plan.last_round_real_samples, 2);  // [8, 9] + filler [0, 1]
  EXPECT_EQ(plan.batches.back(), (std::vector<int64_t>{8, 9}));
  spec.process_index = 1;
  EXPECT_EQ(accel::detail::shard_batches(order, spec).batches.back(), (std::vector<int64_t>{0, 1}));
}

TEST(Sharding, SplitBatchesNeedsADivisibleBatchSize) {
  accel::detail::ShardSpec spec;
  spec.batch_size = 5;
  spec.num_processes = 2;
  spec.split_batches = true;
  try {
    accel::detail::shard_batches({1, 2, 3}, spec);
    FAIL() << "no error";
  } catch (const accel::Error& error) {
    EXPECT_NE(std::string(error.what()).find("batch_size 5 is not divisible by the 2 processes"), std::string::npos)
        << error.what();
  }
}

TEST(Sharding, LastRoundRealSamplesCountsOnlyNonFiller) {
  std::vector<int64_t> order(10);
  std::iota(order.begin(), order.end(), 0);
  accel::detail::ShardSpec spec;
  spec.batch_size = 4;
  spec.num_processes = 2;
  // Batches [0-3] [4-7] | [8,9]+filler, [] -> filler: the last round holds 2 real samples.
  EXPECT_EQ(accel::detail::shard_batches(order, spec).last_round_real_samples, 2);
  spec.num_processes = 1;
  EXPECT_EQ(accel::detail::shard_batches(order, spec).last_round_real_samples, 0);
  order.resize(8);
  spec.num_processes = 2;
  EXPECT_EQ(accel::detail::shard_batches(order, spec).last_round_real_samples, 0);
}

TEST(Sharding, RejectsBadSpecs) {
  accel::detail::ShardSpec spec;
  spec.batch_size = 0;
  EXPECT_THROW(accel::detail::shard_batches({1, 2}, spec), accel::Error);
  spec.batch_size = 1;
  spec.process_index = 3;
  spec.num_processes = 2;
  EXPECT_THROW(accel::detail::shard_batches({1, 2}, spec), accel::Error);
}

}  // namespace
