// GradientState across several prepared loaders: which loader is in an epoch
// (Accelerate's in_dataloader and dataloader_references) and whose
// end_of_dataloader and remainder it reports (its active_dataloader's, the
// last to open an epoch). Expected values from Accelerate's
// test_dataloader_break (tests/test_sync.py): loaders of 80 and 96 samples in
// batches of 16, the second iterated whole inside the first's second batch.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "accel/data.hpp"

namespace {

std::shared_ptr<accel::TensorDataset> numbers(int64_t n) {
  at::Tensor x = at::arange(n, at::kFloat).unsqueeze(1);
  at::Tensor y = at::arange(n, at::kLong);
  return std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y});
}

// A loader of n samples in batches of batch_size, prepared for one process with `gradient`.
std::unique_ptr<accel::DataLoader> prepared(int64_t n, int64_t batch_size,
                                            const std::shared_ptr<accel::GradientState>& gradient) {
  accel::DataLoaderOptions options;
  options.batch_size = batch_size;
  auto loader = std::make_unique<accel::DataLoader>(numbers(n), options);
  accel::ShardPlacement placement;
  placement.gradient_state = gradient;
  loader->shard(placement);
  return loader;
}

const accel::DataLoader* active(const accel::GradientState& gradient) {
  return gradient.open_loaders.empty() ? nullptr : gradient.open_loaders.back();
}

TEST(GradientState, NestedLoadersFollowAccelerateDataloaderBreak) {
  auto gradient = std::make_shared<accel::GradientState>();
  auto first = prepared(80, 16, gradient), second = prepared(96, 16, gradient);
  ASSERT_EQ(first->num_batches(), 5);
  ASSERT_EQ(second->num_batches(), 6);
  EXPECT_EQ(active(*gradient), nullptr);
  EXPECT_FALSE(gradient->in_dataloader());

  int64_t iteration = 0;
  while (first->next()) {
    EXPECT_EQ(active(*gradient), first.get());
    EXPECT_EQ(first->open_index(), 0);
    EXPECT_EQ(gradient->end_of_dataloader, iteration == 4);
    if (iteration == 1) {
      int64_t batch_num = 0;
      while (second->next()) {
        EXPECT_EQ(active(*gradient), second.get());
        EXPECT_EQ(second->open_index(), 1);
        EXPECT_EQ(gradient->end_of_dataloader, batch_num == 5);
        ++batch_num;
      }
      EXPECT_EQ(batch_num, 6);
      EXPECT_EQ(second->open_index(), -1);
      EXPECT_EQ(active(*gradient), first.get());  // the outer loop's loader answers again
    }
    ++iteration;
  }
  EXPECT_EQ(iteration, 5);
  EXPECT_EQ(active(*gradient), nullptr);
  EXPECT_FALSE(gradient->in_dataloader());
  EXPECT_FALSE(gradient->end_of_dataloader);
  EXPECT_EQ(gradient->remainder, -1);
}

// An evaluation run at the training epoch's last batch, before its step: the
// step still reads end_of_dataloader (which forces the accumulation window's
// sync) and the training loader's remainder, not the finished evaluation's.
TEST(GradientState, AnInnerEpochEndingRestoresTheOuterLoadersAnswers) {
  auto gradient = std::make_shared<accel::GradientState>();
  auto train = prepared(10, 4, gradient), eval = prepared(7, 3, gradient);
  ASSERT_TRUE(train->next());
  ASSERT_TRUE(train->next());
  ASSERT_TRUE(train->next());  // 8..9: the last batch
  EXPECT_TRUE(gradient->end_of_dataloader);
  EXPECT_EQ(gradient->remainder, 2);  // 10 % 4
  int eval_batches = 0;
  while (eval->next()) {
    ++eval_batches;
    EXPECT_EQ(gradient->end_of_dataloader, eval_batches == 3);
    EXPECT_EQ(gradient->remainder, 1);  // 7 % 3
  }
  EXPECT_EQ(eval_batches, 3);
  EXPECT_TRUE(gradient->end_of_dataloader);
  EXPECT_EQ(gradient->remainder, 2);
  EXPECT_FALSE(train->next());
  EXPECT_FALSE(gradient->end_of_dataloader);
  EXPECT_EQ(gradient->remainder, -1);
}

// A loader left mid-epoch stays in it (as Accelerate's suspended iterator)
// until set_epoch, resume_from, a new shard or its destruction takes it out.
TEST(GradientState, ALoaderLeavesWhenItsEpochIsAbandoned) {
  auto gradient = std::make_shared<accel::GradientState>();
  auto a = prepared(10, 4, gradient), b = prepared(10, 4, gradient);
  ASSERT_TRUE(a->next());
  a->set_epoch(3);
  EXPECT_FALSE(gradient->in_dataloader());

  ASSERT_TRUE(a->next());
  a->resume_from(accel::DataLoader::Position{0, 1, 0});
  EXPECT_FALSE(gradient->in_dataloader());

  ASSERT_TRUE(a->next());
  ASSERT_TRUE(b->next());
  EXPECT_EQ(b->open_index(), 1);
  a.reset();  // destroyed mid-epoch
  EXPECT_EQ(b->open_index(), 0);
  EXPECT_EQ(active(*gradient), b.get());

  auto other = std::make_shared<accel::GradientState>();
  accel::ShardPlacement placement;
  placement.gradient_state = other;
  b->shard(placement);  // prepared again, by another accelerator
  EXPECT_FALSE(gradient->in_dataloader());
  EXPECT_EQ(b->open_index(), -1);
  ASSERT_TRUE(b->next());
  EXPECT_EQ(active(*other), b.get());
  EXPECT_FALSE(gradient->in_dataloader());
}

// A binding may free a loader from a finalizer thread (Go's, a Python garbage
// collection on another thread) while a loader of the same accelerator runs:
// the open loaders stay consistent. With open_loaders_mutex taken out, this
// test failed 5 runs of 5 (AMD EPYC, 2 cores); with it, it passes in 0.5 s.
TEST(GradientState, LoadersLeavingFromAnotherThreadKeepTheStateWhole) {
  auto gradient = std::make_shared<accel::GradientState>();
  auto train = prepared(64, 1, gradient);
  std::atomic<bool> done{false};
  std::thread finalizer([&] {
    for (int i = 0; i < 3000; ++i) {
      auto dropped = prepared(8, 4, gradient);
      EXPECT_TRUE(dropped->next());  // destroyed in its epoch
    }
    done = true;
  });
  int64_t passes = 0, batches = 0;
  while (!done) {  // epochs open and close for as long as the other thread runs
    while (train->next()) {
      ++batches;
      EXPECT_GE(train->open_index(), 0);
    }
    ++passes;
  }
  finalizer.join();
  EXPECT_EQ(batches, passes * 64);
  EXPECT_FALSE(gradient->in_dataloader());
  EXPECT_TRUE(gradient->open_loaders.empty());
}

TEST(GradientState, AnUnpreparedLoaderIsInNoState) {
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  accel::DataLoader loader(numbers(10), options);
  ASSERT_TRUE(loader.next());
  EXPECT_EQ(loader.open_index(), -1);
}

}  // namespace
