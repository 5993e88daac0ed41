#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <set>

#include "accel/data.hpp"
#include "accel/error.hpp"

namespace {

std::shared_ptr<accel::TensorDataset> numbers(int64_t n) {
  at::Tensor x = at::arange(n, at::kFloat).unsqueeze(1);
  at::Tensor y = at::arange(n, at::kLong);
  return std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y});
}

std::vector<int64_t> epoch_labels(accel::DataLoader& loader) {
  std::vector<int64_t> seen;
  while (auto batch = loader.next()) {
    at::Tensor y = (*batch)[1];
    EXPECT_TRUE(at::equal((*batch)[0].squeeze(1).to(at::kLong), y));
    seen.insert(seen.end(), y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
  }
  return seen;
}

TEST(DataLoader, ShuffleIsSeededPerEpochAndCoversEverySample) {
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  options.shuffle = true;
  options.seed = 11;
  accel::DataLoader a(numbers(10), options), b(numbers(10), options);
  auto first = epoch_labels(a), second = epoch_labels(a);
  EXPECT_EQ(std::set<int64_t>(first.begin(), first.end()).size(), 10u);
  EXPECT_NE(first, second);             // epoch 1 reshuffles
  EXPECT_EQ(first, epoch_labels(b));    // same seed, same order
  b.set_epoch(1);
  EXPECT_EQ(second, epoch_labels(b));   // set_epoch reproduces epoch 1
}

TEST(DataLoader, ShardedLoadersPartitionTheEpochAndReportTheRemainder) {
  accel::DataLoaderOptions options;
  options.batch_size = 3;
  auto dataset = numbers(10);
  std::vector<int64_t> all;
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(dataset, options);
    auto gradient = std::make_shared<accel::GradientState>();
    loader.shard(accel::ShardPlacement{2, p, std::nullopt, gradient});
    EXPECT_EQ(loader.num_batches(), 2);
    int batches = 0;
    while (auto batch = loader.next()) {
      ++batches;
      EXPECT_EQ(gradient->end_of_dataloader, batches == 2);
      const at::Tensor& y = (*batch)[1];
      all.insert(all.end(), y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
    }
    EXPECT_EQ(gradient->remainder, 4);  // last round: [6,7,8] and [9]+filler
  }
  std::set<int64_t> unique(all.begin(), all.end());
  EXPECT_EQ(unique.size(), 10u);
  EXPECT_EQ(all.size(), 12u);  // two filler samples complete the last round
}

TEST(DataLoader, RejectsBadArguments) {
  accel::DataLoaderOptions options;
  options.batch_size = 0;
  EXPECT_THROW(accel::DataLoader(numbers(3), options), accel::Error);
  EXPECT_THROW(accel::DataLoader(nullptr, accel::DataLoaderOptions{}), accel::Error);
  EXPECT_THROW(accel::TensorDataset({at::zeros({3}), at::zeros({4})}), accel::Error);
}

}  // namespace
