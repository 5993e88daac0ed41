// Accelerate parity of prepared loaders (issue 17, items 1-6): lengths after
// skip_first_batches, len() per process, the remainder from the epoch's start,
// dispatching, user batch samplers and the shuffle's seed. Placements are
// built by hand, one process at a time; a dispatched loader's broadcast is
// simulated by replaying what the main process sent.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "data/number_datasets.hpp"

namespace {

using accel_test::numbers;

using Batches = std::vector<std::vector<int64_t>>;

Batches epoch(accel::DataLoader& loader, std::vector<int64_t>* remainders = nullptr,
              const accel::GradientState* gradient = nullptr) {
  Batches batches;
  while (auto batch = loader.next()) {
    at::Tensor y = (*batch)[1].contiguous();
    batches.emplace_back(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
    if (remainders) remainders->push_back(gradient->remainder);
  }
  return batches;
}

accel::ShardPlacement placement(int P, int p, std::shared_ptr<accel::GradientState> gradient = nullptr) {
  accel::ShardPlacement placement;
  placement.num_processes = P;
  placement.process_index = p;
  placement.gradient_state = gradient ? gradient : std::make_shared<accel::GradientState>();
  return placement;
}

// The batches every process of a dispatched loader gets: the main process runs
// first and records what it broadcasts; the others replay it.
std::vector<Batches> dispatched(const std::function<std::unique_ptr<accel::DataLoader>()>& make, int P, bool split,
                                std::vector<int64_t>* last_remainders) {
  std::vector<std::optional<accel::Batch>> sent;
  std::vector<Batches> out;
  for (int p = 0; p < P; ++p) {
    auto loader = make();
    auto gradient = std::make_shared<accel::GradientState>();
    accel::ShardPlacement place = placement(P, p, gradient);
    place.split_batches = split;
    auto replay = std::make_shared<size_t>(0);
    place.dispatch = [&sent, replay, p](std::optional<accel::Batch> batch) {
      if (p == 0) sent.push_back(batch);
      return sent.at((*replay)++);
    };
    loader->shard(place);
    Batches mine;
    while (auto batch = loader->next()) {
      at::Tensor y = (*batch)[1].contiguous();
      mine.emplace_back(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
      if (gradient->end_of_dataloader) last_remainders->push_back(gradient->remainder);
    }
    out.push_back(mine);
  }
  return out;
}

TEST(LoaderParity, SkipFirstBatchesShortensTheLengthOfThatPass) {
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(numbers(22), options);
    loader.shard(placement(2, p));
    ASSERT_EQ(loader.num_batches(), 3);
    auto skipped = loader.skip_first_batches(1);
    EXPECT_EQ(skipped->num_batches(), 2);
    EXPECT_EQ(epoch(*skipped).size(), 2u);
    EXPECT_EQ(skipped->num_batches(), 3);                       // later passes are whole
    EXPECT_EQ(loader.skip_first_batches(7)->num_batches(), 0);  // never negative
  }
  accel::DataLoader stream(std::make_shared<accel_test::CountingStream>(10), options);
  try {
    stream.skip_first_batches(1)->num_batches();
    FAIL() << "no error";
  } catch (const accel::Error& error) {
    EXPECT_EQ(error.code(), accel::ErrorCode::State);
  }
}

TEST(LoaderParity, SplitBatchesWithUnevenBatchesReportsTheSameLengthEverywhere) {
  // Accelerate: length 22, batch 4, 2 processes -> len() 6 and 6 (process 1 yields 5).
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(numbers(22), options);
    accel::ShardPlacement place = placement(2, p);
    place.split_batches = true;
    place.even_batches = false;
    loader.shard(place);
    EXPECT_EQ(loader.num_batches(), 6) << "process " << p;
    EXPECT_EQ(epoch(loader).size(), p == 0 ? 6u : 5u);
  }
}

TEST(LoaderParity, RemainderIsKnownFromTheEpochStartAndMinusOneWithDropLast) {
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  for (bool drop_last : {false, true}) {
    options.drop_last = drop_last;
    for (int P : {1, 2, 3}) {
      auto gradient = std::make_shared<accel::GradientState>();
      accel::DataLoader loader(numbers(22), options);
      loader.shard(placement(P, 0, gradient));
      std::vector<int64_t> remainders;
      epoch(loader, &remainders, gradient.get());
      ASSERT_FALSE(remainders.empty());
      int64_t expected = drop_last ? -1 : 22 % (4 * P);
      for (int64_t r : remainders) EXPECT_EQ(r, expected) << P << " processes, drop_last " << drop_last;
      EXPECT_EQ(gradient->remainder, -1);  // outside an epoch
    }
  }
}

TEST(LoaderParity, DispatchSplitsTheLastBatchWithoutPadding) {
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  std::vector<int64_t> remainders;
  // The example: range(10), batch 4, 2 processes.
  auto stream = [&] {
    return std::make_unique<accel::DataLoader>(std::make_shared<accel_test::CountingStream>(10), options);
  };
  EXPECT_EQ(dispatched(stream, 2, false, &remainders),
            (std::vector<Batches>{{{0, 1, 2, 3}, {8}}, {{4, 5, 6, 7}, {9}}}));
  EXPECT_EQ(remainders, (std::vector<int64_t>{2, 2}));
  // Rows that do not divide: each process gets rows / P + 1, completed with the first rows.
  options.batch_size = 2;
  remainders.clear();
  auto map = [&] { return std::make_unique<accel::DataLoader>(numbers(10), options); };
  EXPECT_EQ(dispatched(map, 3, false, &remainders),
            (std::vector<Batches>{{{0, 1}, {6, 7}}, {{2, 3}, {8, 9}}, {{4, 5}, {0, 1}}}));
  EXPECT_EQ(remainders, (std::vector<int64_t>{4, 4, 4}));
  options.batch_size = 1;
  remainders.clear();
  EXPECT_EQ(dispatched(map, 4, false, &remainders),
            (std::vector<Batches>{{{0}, {4}, {8}}, {{1}, {5}, {9}}, {{2}, {6}, {0}}, {{3}, {7}, {1}}}));
  // split_batches: each batch of 4 is cut in two; the last [8, 9] gives one row each.
  options.batch_size = 4;
  remainders.clear();
  EXPECT_EQ(dispatched(map, 2, true, &remainders),
            (std::vector<Batches>{{{0, 1}, {4, 5}, {8}}, {{2, 3}, {6, 7}, {9}}}));
  EXPECT_EQ(remainders, (std::vector<int64_t>{2, 2}));
}

TEST(LoaderParity, DispatchLengthIsTheDispatchersLength) {
  accel::DataLoaderOptions options;
  options.batch_size = 4;
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(numbers(22), options);  // 6 batches of 4 -> 3 rounds of 2
    accel::ShardPlacement place = placement(2, p);
    place.dispatch = [](std::optional<accel::Batch> batch) { return batch; };
    loader.shard(place);
    EXPECT_EQ(loader.num_batches(), 3);
  }
}

TEST(LoaderParity, UserBatchSamplerIsShardedAsBatchSamplerShard) {
  // Accelerate's test_batch_sampler_with_varying_batch_size.
  Batches sampler{{0, 1, 2}, {3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13}};
  accel::DataLoaderOptions options;
  options.batch_size = 0;  // sizes vary
  accel::DataLoader whole(numbers(14), sampler, options);
  EXPECT_EQ(epoch(whole), sampler);
  EXPECT_EQ(whole.num_batches(), 5);
  auto rest = whole.skip_first_batches(3);  // also what load_state does to resume mid-epoch
  EXPECT_EQ(rest->num_batches(), 2);
  EXPECT_EQ(epoch(*rest), (Batches{{9, 10, 11}, {12, 13}}));
  Batches expected[2] = {{{0, 1, 2}, {5, 6, 7, 8}, {12, 13}}, {{3, 4}, {9, 10, 11}}};
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(numbers(14), sampler, options);
    accel::ShardPlacement place = placement(2, p);
    EXPECT_THROW(loader.shard(place), accel::Error);  // even_batches needs a batch size
    EXPECT_FALSE(loader.is_prepared());
    place.even_batches = false;
    loader.shard(place);
    EXPECT_EQ(loader.num_batches(), p == 0 ? 3 : 2);
    EXPECT_EQ(epoch(loader), expected[p]);
    EXPECT_EQ(epoch(loader), expected[p]);  // the same batches every epoch
  }
}

TEST(LoaderParity, SetBatchesFeedsTheNextEpochShardedAsTheFirst) {
  Batches first{{0, 1, 2}, {3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13}};
  Batches second{{13}, {12, 11}, {10, 9, 8}, {7}};
  accel::DataLoaderOptions options;
  options.batch_size = 0;
  // BatchSamplerShard deals the new batches as it dealt the first: 0, 2 to rank 0.
  Batches expected[2] = {{{13}, {10, 9, 8}}, {{12, 11}, {7}}};
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(numbers(14), first, options);
    accel::ShardPlacement place = placement(2, p);
    place.even_batches = false;
    loader.shard(place);
    epoch(loader);
    loader.set_batches(second);
    EXPECT_EQ(loader.num_batches(), 2);
    EXPECT_EQ(epoch(loader), expected[p]);
    EXPECT_EQ(epoch(loader), expected[p]);  // kept until replaced
  }
}

TEST(LoaderParity, SetBatchesRefusesMidEpochBadBatchesAndPlainLoadersLeavingTheLoaderAsItWas) {
  accel::DataLoaderOptions options;
  options.batch_size = 2;
  Batches sampler{{0, 1}, {2, 3}, {4}};
  accel::DataLoader loader(numbers(5), sampler, options);
  auto code_and_message = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const accel::Error& error) {
      return std::make_pair(error.code(), std::string(error.what()));
    }
    return std::make_pair(static_cast<accel::ErrorCode>(0), std::string());
  };
  ASSERT_TRUE(loader.next().has_value());
  auto [code, message] = code_and_message([&] { loader.set_batches({{4}}); });
  EXPECT_EQ(code, accel::ErrorCode::State);
  EXPECT_NE(message.find("an epoch is in progress (1 batches taken)"), std::string::npos) << message;
  EXPECT_EQ(epoch(loader), (Batches{{2, 3}, {4}}));  // the epoch goes on with its batches
  std::tie(code, message) = code_and_message([&] { loader.set_batches({{1}, {0, 5}}); });
  EXPECT_EQ(code, accel::ErrorCode::InvalidArgument);
  EXPECT_NE(message.find("set_batches: batch sampler batch 1 holds index 5"), std::string::npos) << message;
  std::tie(code, message) = code_and_message([&] { loader.set_batches({{1}, {}}); });
  EXPECT_NE(message.find("set_batches: batch sampler batch 1 is empty"), std::string::npos) << message;
  EXPECT_EQ(epoch(loader), sampler);  // nothing was replaced
  accel::DataLoader plain(numbers(5), options);
  std::tie(code, message) = code_and_message([&] { plain.set_batches({{0}}); });
  EXPECT_EQ(code, accel::ErrorCode::State);
  EXPECT_NE(message.find("not made from a batch sampler"), std::string::npos) << message;
}

TEST(LoaderParity, ABatchSamplerPerEpochIsAskedForEachEpochAndForTheOneAResumeReturnsTo) {
  auto asked = std::make_shared<std::vector<uint64_t>>();
  auto batches_for = [asked](uint64_t e) {
    asked->push_back(e);
    const auto shift = static_cast<int64_t>(e % 3);
    return Batches{{shift, shift + 1}, {shift + 2}, {shift + 3, shift + 4}};
  };
  accel::DataLoaderOptions options;
  options.batch_size = 2;
  accel::DataLoader loader(numbers(8), batches_for, options);
  EXPECT_EQ(epoch(loader), (Batches{{0, 1}, {2}, {3, 4}}));
  EXPECT_EQ(epoch(loader), (Batches{{1, 2}, {3}, {4, 5}}));
  EXPECT_EQ(epoch(loader), (Batches{{2, 3}, {4}, {5, 6}}));
  EXPECT_EQ(*asked, (std::vector<uint64_t>{0, 1, 2}));  // once per epoch
  EXPECT_EQ(loader.num_batches(), 3);
  // A run resuming epoch 4 after one batch gets that epoch's batches back.
  accel::DataLoader resumed(numbers(8), batches_for, options);
  resumed.resume_from({4, 1, 0});
  EXPECT_EQ(epoch(resumed), (Batches{{3}, {4, 5}}));
  auto skipped = resumed.skip_first_batches(2);
  EXPECT_EQ(epoch(*skipped), (Batches{{5, 6}}));  // epoch 5's batches, from the third
  // A sampler whose batch count changes is named, not half-used.
  accel::DataLoader growing(
      numbers(8), [](uint64_t e) { return Batches(e + 1, std::vector<int64_t>{0}); }, options);
  epoch(growing);
  try {
    growing.next();
    FAIL() << "no error for a changed batch count";
  } catch (const accel::Error& error) {
    EXPECT_NE(std::string(error.what()).find("gave 2 batches for epoch 1 and 1 for epoch 0"), std::string::npos)
        << error.what();
  }
}

TEST(LoaderParity, UserBatchSamplerRejectsBadBatches) {
  accel::DataLoaderOptions options;
  options.batch_size = 0;
  auto expect_message = [&](Batches batches, const std::string& part) {
    try {
      accel::DataLoader loader(numbers(5), batches, options);
      FAIL() << "no error for " << part;
    } catch (const accel::Error& error) {
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
    }
  };
  expect_message({{0, 1}, {}}, "batch 1 is empty");
  expect_message({{0, 5}}, "holds index 5");
  expect_message({{-1}}, "holds index -1");
  options.shuffle = true;
  expect_message({{0}}, "shuffle=true with a batch sampler");
  options.shuffle = false;
  options.batch_size = -2;
  expect_message({{0}}, "got -2");
}

nlohmann::json orders(const std::string& kind) {
  std::ifstream in(std::string(ACCEL_TEST_FILES) + "/data/files/accelerate_loader_shards.json");
  nlohmann::json rows = nlohmann::json::array();
  for (auto& row : nlohmann::json::parse(in)) {
    if (row["kind"] == kind) rows.push_back(row);
  }
  EXPECT_FALSE(rows.empty());
  return rows;
}

TEST(LoaderParity, WithoutASeedTheOrderFollowsTheGlobalGenerator) {
  for (const auto& row : orders("random_sampler")) {
    accel::DataLoaderOptions options;
    options.batch_size = row["n"];
    options.shuffle = true;  // no seed: PyTorch's RandomSampler without a generator
    accel::DataLoader loader(numbers(row["n"]), options);
    at::manual_seed(row["set_seed"].get<uint64_t>());
    for (const auto& expected : row["epochs"]) EXPECT_EQ(epoch(loader).at(0), expected) << row.dump();
  }
}

TEST(LoaderParity, SeedableSamplerShufflesWithDataSeedPlusEpoch) {
  for (const auto& row : orders("seedable_sampler")) {
    accel::DataLoaderOptions options;
    options.batch_size = row["n"];
    options.shuffle = true;
    options.seed = 99;  // overridden by the seedable sampler, as in Accelerate
    accel::DataLoader loader(numbers(row["n"]), options);
    accel::ShardPlacement place = placement(1, 0);
    place.use_seedable_sampler = true;
    place.data_seed = row["data_seed"].get<uint64_t>();
    loader.shard(place);
    for (const auto& expected : row["epochs"]) EXPECT_EQ(epoch(loader).at(0), expected) << row.dump();
    // Without data_seed: the global generator's initial seed.
    accel::DataLoader fallback(numbers(row["n"]), options);
    place.data_seed.reset();
    fallback.shard(place);
    at::manual_seed(row["data_seed"].get<uint64_t>());
    at::randn({3});  // drawing does not move the initial seed
    for (const auto& expected : row["epochs"]) EXPECT_EQ(epoch(fallback).at(0), expected) << row.dump();
  }
}

TEST(LoaderParity, SeveralProcessesAgreeOnTheMainProcesssDraw) {
  accel::DataLoaderOptions options;
  options.batch_size = 8;
  options.shuffle = true;
  std::vector<uint64_t> offered;
  Batches seen[2];
  for (int p = 0; p < 2; ++p) {
    accel::DataLoader loader(numbers(16), options);
    accel::ShardPlacement place = placement(2, p);
    place.agree_seed = [&offered](uint64_t seed) {
      offered.push_back(seed);
      return offered.front();  // the main process's draw
    };
    loader.shard(place);
    at::manual_seed(p == 0 ? 1 : 2);  // generators that drifted apart
    seen[p] = epoch(loader);
  }
  ASSERT_EQ(offered.size(), 2u);
  EXPECT_NE(offered[0], offered[1]);
  std::vector<int64_t> all = seen[0].at(0);
  all.insert(all.end(), seen[1].at(0).begin(), seen[1].at(0).end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], i);  // one permutation, split
}

}  // namespace
