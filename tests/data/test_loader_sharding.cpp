// shard_batches and StreamShard against tables produced by Accelerate's own
// BatchSamplerShard and IterableDatasetShard (tests/data/files/make_batch_shard_table.py):
// 1-3 processes, dataset lengths that divide evenly and not, drop_last,
// even_batches and split_batches on and off.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "accel/error.hpp"
#include "data/loader_sharding.hpp"

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

// Lengths and batches per process, 1-4 processes, for PyTorch batch samplers
// and for user batch samplers of varying sizes, from Accelerate 0.22's
// BatchSamplerShard (tests/data/files/make_loader_tables.py).
TEST(Sharding, LengthsAndUserBatchSamplersMatchAccelerate) {
  nlohmann::json table = load_table("accelerate_loader_shards.json");
  size_t checked = 0, varying = 0;
  for (const auto& row : table) {
    if (row["kind"] != "batch_sampler" && row["kind"] != "user_batches") continue;
    accel::detail::ShardSpec spec;
    spec.batch_size = row["batch_size"];
    spec.drop_last = row["drop_last"];
    spec.num_processes = row["num_processes"];
    spec.even_batches = row["even_batches"];
    spec.split_batches = row["split_batches"];
    accel::detail::Batches source;
    if (row["kind"] == "user_batches") {
      source = row["sampler"].get<accel::detail::Batches>();
      ++varying;
    } else {
      std::vector<int64_t> order(row["n"].get<size_t>());
      std::iota(order.begin(), order.end(), 0);
      source = accel::detail::batch_sampler(order, spec);
    }
    for (int p = 0; p < spec.num_processes; ++p) {
      spec.process_index = p;
      auto expected = row["batches"][static_cast<size_t>(p)].get<accel::detail::Batches>();
      EXPECT_EQ(accel::detail::shard_batch_list(source, spec).batches, expected) << row.dump() << " process " << p;
      EXPECT_EQ(accel::detail::shard_length(static_cast<int64_t>(source.size()), spec),
                row["lengths"][static_cast<size_t>(p)].get<int64_t>())
          << row.dump() << " process " << p;
      ++checked;
    }
  }
  EXPECT_GT(checked, 2000u);
  EXPECT_GT(varying, 50u);
}

// Streams without dispatch_batches, 2-4 processes: IterableDatasetShard's padding.
TEST(Sharding, StreamShardMatchesAccelerateUpToFourProcesses) {
  size_t checked = 0;
  for (const auto& row : load_table("accelerate_loader_shards.json")) {
    if (row["kind"] != "iterable_shard") continue;
    accel::detail::ShardSpec spec;
    spec.batch_size = row["batch_size"];
    spec.drop_last = row["drop_last"];
    spec.num_processes = row["num_processes"];
    spec.split_batches = row["split_batches"];
    for (int p = 0; p < spec.num_processes; ++p) {
      spec.process_index = p;
      accel::detail::StreamShard<int64_t> shard(spec);
      accel::detail::Batches batches;
      for (int64_t i = 0; i < row["n"].get<int64_t>(); ++i) {
        if (auto batch = shard.push(i)) batches.push_back(*batch);
      }
      int64_t real = -1;
      if (auto batch = shard.finish(&real)) batches.push_back(*batch);
      EXPECT_EQ(batches, row["batches"][static_cast<size_t>(p)].get<accel::detail::Batches>())
          << row.dump() << " process " << p;
      ++checked;
    }
  }
  EXPECT_GT(checked, 300u);
}

TEST(Sharding, SizelessBatchSamplerNeedsUnevenBatchesAndNoSplit) {
  accel::detail::ShardSpec spec;
  spec.batch_size = 0;
  spec.num_processes = 2;
  accel::detail::Batches batches{{0, 1, 2}, {3}};
  try {
    accel::detail::shard_batch_list(batches, spec);
    FAIL() << "no error";
  } catch (const accel::Error& error) {
    EXPECT_NE(std::string(error.what()).find("needs even_batches = false"), std::string::npos) << error.what();
  }
  spec.even_batches = false;
  spec.split_batches = true;
  EXPECT_THROW(accel::detail::shard_batch_list(batches, spec), accel::Error);
  spec.split_batches = false;
  EXPECT_EQ(accel::detail::shard_batch_list(batches, spec).batches, (accel::detail::Batches{{0, 1, 2}}));
  spec.num_processes = 1;  // one process takes them as they are, whatever the options
  spec.process_index = 0;
  spec.even_batches = true;
  EXPECT_EQ(accel::detail::shard_batch_list(batches, spec).batches, batches);
}

TEST(Sharding, RejectsBadSpecs) {
  accel::detail::ShardSpec spec;
  spec.batch_size = -1;
  EXPECT_THROW(accel::detail::shard_batches({1, 2}, spec), accel::Error);
  spec.batch_size = 0;  // a batch sampler's batch size of 0 cannot chunk an order
  EXPECT_THROW(accel::detail::shard_batches({1, 2}, spec), accel::Error);
  spec.batch_size = 1;
  spec.process_index = 3;
  spec.num_processes = 2;
  EXPECT_THROW(accel::detail::shard_batches({1, 2}, spec), accel::Error);
}

}  // namespace
