#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
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
  EXPECT_NE(first, second);           // epoch 1 reshuffles
  EXPECT_EQ(first, epoch_labels(b));  // same seed, same order
  b.set_epoch(1);
  EXPECT_EQ(second, epoch_labels(b));  // set_epoch reproduces epoch 1
}

TEST(DataLoader, ShardedLoadersPartitionTheEpochAndReportTheRemainder) {
  accel::DataLoaderOptions options;
  options.batch_size = 3;
  auto dataset = numbers(10);
  std::vector<int64_t> all;
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(dataset, options);
    auto gradient = std::make_shared<accel::GradientState>();
    accel::ShardPlacement placement;
    placement.num_processes = 2;
    placement.process_index = p;
    placement.gradient_state = gradient;
    loader.shard(placement);
    EXPECT_EQ(loader.num_batches(), 2);
    EXPECT_EQ(gradient->remainder, -1);  // no epoch yet
    int batches = 0;
    while (auto batch = loader.next()) {
      ++batches;
      EXPECT_EQ(gradient->end_of_dataloader, batches == 2);
      EXPECT_EQ(gradient->remainder, 4);  // known from the start: 10 % (3 * 2)
      const at::Tensor& y = (*batch)[1];
      all.insert(all.end(), y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
    }
    EXPECT_EQ(gradient->remainder, -1);  // the epoch is over
  }
  std::set<int64_t> unique(all.begin(), all.end());
  EXPECT_EQ(unique.size(), 10u);
  EXPECT_EQ(all.size(), 12u);  // two filler samples complete the last round
}

TEST(DataLoader, RejectsBadArguments) {
  accel::DataLoaderOptions options;
  options.batch_size = 0;
  EXPECT_THROW(accel::DataLoader(numbers(3), options), accel::Error);
  EXPECT_THROW(accel::DataLoader(std::shared_ptr<accel::Dataset>(), accel::DataLoaderOptions{}), accel::Error);
  EXPECT_THROW(accel::TensorDataset({at::zeros({3}), at::zeros({4})}), accel::Error);
}

}  // namespace

namespace {

std::vector<std::vector<int64_t>> epoch_batches(accel::DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  while (auto batch = loader.next()) {
    at::Tensor y = (*batch)[1].contiguous();
    batches.emplace_back(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
  }
  return batches;
}

// A dataset that counts reads, to show skipped batches are not read.
class CountingDataset : public accel::Dataset {
 public:
  explicit CountingDataset(int64_t n) : inner_(numbers(n)) {}
  int64_t size() const override { return inner_->size(); }
  accel::Batch get_batch(const std::vector<int64_t>& indices) const override {
    reads_ += static_cast<int64_t>(indices.size());
    return inner_->get_batch(indices);
  }
  int64_t reads() const { return reads_; }

 private:
  std::shared_ptr<accel::TensorDataset> inner_;
  mutable std::atomic<int64_t> reads_{0};
};

// A stream of 0..n-1 (as (x, y) samples); reset counts the passes.
class CountingStream : public accel::IterableDataset {
 public:
  explicit CountingStream(int64_t n) : n_(n) {}
  void reset(uint64_t epoch) override {
    next_ = 0;
    last_epoch = epoch;
  }
  std::optional<accel::Sample> next() override {
    if (next_ == n_) return std::nullopt;
    int64_t i = next_++;
    return accel::Sample{at::full({1}, static_cast<float>(i)), at::scalar_tensor(i, at::kLong)};
  }
  uint64_t last_epoch = 99;

 private:
  int64_t n_;
  int64_t next_ = 0;
};

}  // namespace

TEST(DataLoader, WorkersNeverChangeTheOrder) {
  accel::DataLoaderOptions options;
  options.batch_size = 3;
  options.shuffle = true;
  options.seed = 5;
  accel::DataLoader serial(numbers(50), options);
  auto expected = epoch_batches(serial);
  for (int workers : {1, 2, 3}) {
    options.num_workers = workers;
    options.prefetch_factor = workers;
    accel::DataLoader prefetching(numbers(50), options);
    EXPECT_EQ(epoch_batches(prefetching), expected) << workers << " workers";
    EXPECT_EQ(epoch_batches(prefetching).size(), expected.size());  // a second epoch works too
  }
}

TEST(DataLoader, WorkerErrorsReachTheCaller) {
  auto dataset = std::make_shared<accel::CallbackDataset>(
      std::vector<accel::FieldSpec>{{at::kFloat, {2}}}, [] { return int64_t{10}; },
      [](int64_t index, const std::vector<void*>&) {
        if (index == 7) throw accel::Error(accel::ErrorCode::IO, "sample 7 is corrupt");
      });
  accel::DataLoaderOptions options;
  options.batch_size = 2;
  options.num_workers = 2;
  accel::DataLoader loader(dataset, options);
  EXPECT_TRUE(loader.next().has_value());
  EXPECT_TRUE(loader.next().has_value());
  EXPECT_TRUE(loader.next().has_value());
  try {
    loader.next();
    FAIL() << "no error";
  } catch (const accel::Error& error) {
    EXPECT_EQ(error.code(), accel::ErrorCode::IO);
    EXPECT_NE(std::string(error.what()).find("sample 7"), std::string::npos);
  }
}

TEST(DataLoader, SkipFirstBatchesResumesWithoutReadingTheSkippedSamples) {
  auto dataset = std::make_shared<CountingDataset>(20);
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  options.shuffle = true;
  options.seed = 3;
  accel::DataLoader full(dataset, options);
  auto whole = epoch_batches(full);
  int64_t reads_before = dataset->reads();
  auto skipping = full.skip_first_batches(2);  // full is at epoch 1 now: the skip applies there
  full.set_epoch(0);
  auto resumed = full.skip_first_batches(2);
  auto rest = epoch_batches(*resumed);
  EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(whole.begin() + 2, whole.end()));
  EXPECT_EQ(dataset->reads() - reads_before, 12);  // 3 batches of 4, not 5
  EXPECT_EQ(epoch_batches(*resumed).size(), 5u);   // the next pass is whole
  EXPECT_EQ(skipping->position().epoch, 1u);
}

TEST(DataLoader, PositionAndResumeFromContinueMidEpoch) {
  accel::DataLoaderOptions options;
  options.batch_size = 2;
  options.shuffle = true;
  options.seed = 9;
  accel::DataLoader a(numbers(12), options), b(numbers(12), options);
  epoch_batches(a);
  auto epoch1 = epoch_batches(a);  // reference for epoch 1
  b.set_epoch(1);
  b.next();
  b.next();
  accel::DataLoader::Position at = b.position();
  EXPECT_EQ(at.epoch, 1u);
  EXPECT_EQ(at.batches_consumed, 2);
  accel::DataLoader c(numbers(12), options);
  c.resume_from(at);
  auto rest = epoch_batches(c);
  EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(epoch1.begin() + 2, epoch1.end()));
}

TEST(DataLoader, IterableDatasetsAreShardedAndReportTheEndAndRemainder) {
  accel::DataLoaderOptions options;
  options.batch_size = 3;
  std::vector<std::vector<int64_t>> seen[2];
  for (int p = 0; p < 2; ++p) {
    auto stream = std::make_shared<CountingStream>(10);
    accel::DataLoader loader(stream, options);
    auto gradient = std::make_shared<accel::GradientState>();
    accel::ShardPlacement placement;
    placement.num_processes = 2;
    placement.process_index = p;
    placement.gradient_state = gradient;
    loader.shard(placement);
    while (auto batch = loader.next()) {
      at::Tensor y = (*batch)[1];
      seen[p].emplace_back(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
      bool last = seen[p].size() == 2;
      EXPECT_EQ(gradient->end_of_dataloader, last);
      EXPECT_EQ(gradient->remainder, last ? 4 : -1);  // a stream's is unknown until 6..9, real in the last run of 6
    }
    EXPECT_EQ(stream->last_epoch, 0u);
    EXPECT_THROW(loader.num_batches(), accel::Error);
  }
  EXPECT_EQ(seen[0], (std::vector<std::vector<int64_t>>{{0, 1, 2}, {6, 7, 8}}));
  EXPECT_EQ(seen[1], (std::vector<std::vector<int64_t>>{{3, 4, 5}, {9, 0, 1}}));
}

TEST(DataLoader, SplitBatchesAndHostPlacementFollowThePlacement) {
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  accel::DataLoader loader(numbers(8), options);
  accel::ShardPlacement placement;
  placement.num_processes = 2;
  placement.process_index = 1;
  placement.split_batches = true;
  loader.shard(placement);
  EXPECT_EQ(epoch_batches(loader), (std::vector<std::vector<int64_t>>{{2, 3}, {6, 7}}));
  accel::DataLoader odd(numbers(8), [] {
    accel::DataLoaderOptions o;
    o.batch_size = 3;
    return o;
  }());
  EXPECT_THROW(odd.shard(placement), accel::Error);  // 3 does not split over 2 processes
}

TEST(DataLoader, IterableDatasetsRejectShuffle) {
  accel::DataLoaderOptions options;
  options.shuffle = true;
  EXPECT_THROW(accel::DataLoader(std::make_shared<CountingStream>(3), options), accel::Error);
  options.shuffle = false;
  options.num_workers = -1;
  EXPECT_THROW(accel::DataLoader(numbers(3), options), accel::Error);
}

namespace {

TEST(DataLoader, NumWorkersIsCapped) {
  accel::DataLoaderOptions options;
  options.num_workers = accel::kMaxNumWorkers;
  EXPECT_NO_THROW(accel::DataLoader(numbers(3), options));
  for (int workers : {accel::kMaxNumWorkers + 1, 1000000}) {
    options.num_workers = workers;
    try {
      accel::DataLoader loader(numbers(3), options);
      ADD_FAILURE() << "num_workers " << workers << " accepted";
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::to_string(workers)), std::string::npos) << e.what();
    }
  }
}

}  // namespace
