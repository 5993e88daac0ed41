// shard_batches against a table produced by Accelerate's own BatchSamplerShard
// (tests/data/files/make_batch_shard_table.py): 1-3 processes, dataset lengths
// that divide evenly and not, drop_last and even_batches on and off.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "accel/error.hpp"
#include "data/sharding.hpp"

namespace {

nlohmann::json load_table() {
  std::ifstream in(std::string(ACCEL_TEST_FILES) + "/data/files/accelerate_batch_shards.json");
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
    for (int p = 0; p < spec.num_processes; ++p) {
      spec.process_index = p;
      auto plan = accel::detail::shard_batches(order, spec);
      auto expected = row["batches"][static_cast<size_t>(p)].get<std::vector<std::vector<int64_t>>>();
      EXPECT_EQ(plan.batches, expected) << row.dump() << " process " << p;
    }
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
