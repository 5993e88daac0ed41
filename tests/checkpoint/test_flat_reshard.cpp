// ZeRO-1/2 optimizer state cut again for another world size
// (src/checkpoint/flat_reshard.hpp): for every (saved, new) pair, each new
// process's state must be bitwise its range of the whole state, which is the
// saved chunks end to end; padding is zero.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "accel/error.hpp"
#include "checkpoint/flat_reshard.hpp"

namespace accel::detail {
namespace {

using Dict = c10::impl::GenericDict;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// What process `rank` of `world` saves for a flat vector of `total` elements
// whose whole Adam state is (exp_avg, exp_avg_sq), step 7.
c10::IValue chunk_of(const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq, int world, int rank) {
  const int64_t total = exp_avg.numel(), size = ceil_div(total, world);
  auto cut = [&](const at::Tensor& whole) {
    at::Tensor padded = at::cat({whole, at::zeros({size * world - total}, whole.options())});
    return padded.narrow(0, rank * size, size).clone();
  };
  Dict param(c10::StringType::get(), c10::AnyType::get());
  param.insert("step", at::scalar_tensor(7.0, at::kFloat));
  param.insert("exp_avg", cut(exp_avg));
  param.insert("exp_avg_sq", cut(exp_avg_sq));
  Dict state(c10::IntType::get(), c10::AnyType::get());
  state.insert(0, param);
  Dict group(c10::StringType::get(), c10::AnyType::get());
  group.insert("lr", 0.001);
  group.insert("params", c10::List<int64_t>({0}));
  c10::impl::GenericList groups(c10::AnyType::get());
  groups.push_back(group);
  Dict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("state", state);
  dict.insert("param_groups", groups);
  return dict;
}

at::Tensor state_tensor(const c10::IValue& dict, const std::string& key) {
  return dict.toGenericDict().at("state").toGenericDict().at(0).toGenericDict().at(key).toTensor();
}

TEST(FlatReshard, EveryProcessGetsItsRangeOfTheWholeState) {
  // 83 elements: uneven chunks for 2, 3 and 4 processes (dist_sharding's model).
  for (int64_t total : {83, 5, 1}) {
    at::Tensor exp_avg = at::randn({total}, at::kFloat), exp_avg_sq = at::rand({total}, at::kDouble);
    for (auto [saved, world] : {std::pair{2, 3}, {3, 2}, {4, 2}, {2, 1}, {1, 2}, {3, 4}}) {
      const int64_t size = ceil_div(total, world);
      at::Tensor padded_avg = at::cat({exp_avg, at::zeros({size * world - total})});
      at::Tensor padded_sq = at::cat({exp_avg_sq, at::zeros({size * world - total}, at::kDouble)});
      for (int rank = 0; rank < world; ++rank) {
        std::set<int> asked;
        c10::IValue out = reshard_flat_optimizer_state(
            [&](int r) {
              asked.insert(r);
              return chunk_of(exp_avg, exp_avg_sq, saved, r);
            },
            saved, world, rank, total, "test");
        const std::string where = std::to_string(saved) + " -> " + std::to_string(world) + " rank " +
                                  std::to_string(rank) + " of " + std::to_string(total);
        EXPECT_TRUE(at::equal(state_tensor(out, "exp_avg"), padded_avg.narrow(0, rank * size, size))) << where;
        EXPECT_TRUE(at::equal(state_tensor(out, "exp_avg_sq"), padded_sq.narrow(0, rank * size, size))) << where;
        EXPECT_EQ(state_tensor(out, "exp_avg_sq").scalar_type(), at::kDouble) << where;
        EXPECT_EQ(state_tensor(out, "step").item<float>(), 7.0f) << where;
        EXPECT_EQ(out.toGenericDict().at("param_groups").toList().size(), 1u) << where;
        // Only the saved chunks that overlap this process's range are read.
        const int64_t saved_size = ceil_div(total, saved);
        const int64_t begin = std::min(rank * size, total), end = std::min((rank + 1) * size, total);
        const size_t overlapping =
            begin < end ? static_cast<size_t>((end - 1) / saved_size - begin / saved_size + 1) : 1;
        EXPECT_EQ(asked.size(), overlapping) << where;
      }
    }
  }
}

TEST(FlatReshard, UnflattenedStateIsEachParametersSlice) {
  const std::vector<std::vector<int64_t>> shapes{{2, 3}, {4}, {1}};
  at::Tensor exp_avg = at::randn({11}), exp_avg_sq = at::rand({11});
  for (int saved : {1, 2, 3, 4}) {
    c10::IValue out = unflatten_optimizer_state([&](int r) { return chunk_of(exp_avg, exp_avg_sq, saved, r); }, saved,
                                                shapes, "test");
    const Dict state = out.toGenericDict().at("state").toGenericDict();
    ASSERT_EQ(state.size(), 3u);
    int64_t offset = 0;
    for (int64_t i = 0; i < 3; ++i) {
      const Dict param = state.at(i).toGenericDict();
      const int64_t numel = c10::multiply_integers(shapes[i]);
      EXPECT_TRUE(at::equal(param.at("exp_avg").toTensor(), exp_avg.narrow(0, offset, numel).view(shapes[i])))
          << "saved by " << saved << ", parameter " << i;
      EXPECT_TRUE(at::equal(param.at("exp_avg_sq").toTensor(), exp_avg_sq.narrow(0, offset, numel).view(shapes[i])));
      EXPECT_EQ(param.at("step").toTensor().item<float>(), 7.0f);
      offset += numel;
    }
    const auto group = out.toGenericDict().at("param_groups").toList().get(0).toGenericDict();
    EXPECT_EQ(group.at("params").toIntVector(), (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(group.at("lr").toDouble(), 0.001);
  }
}

TEST(FlatReshard, ChunksThatDoNotFitAreRefusedNamingTheFile) {
  at::Tensor whole = at::randn({10});
  // Saved by 2 (5 elements each), but claimed to be from 3 processes (4 each).
  try {
    reshard_flat_optimizer_state([&](int r) { return chunk_of(whole, whole, 2, std::min(r, 1)); }, 3, 2, 0, 10,
                                 "ckpt/optimizer_rank0.bin");
    FAIL() << "a chunk of the wrong size was cut";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::IO);
    EXPECT_NE(std::string(error.what()).find("ckpt/optimizer_rank0.bin: process 0's \"exp_avg\" has 5 elements"),
              std::string::npos)
        << error.what();
  }
  // A step that differs between the chunks.
  auto other_step = [&](int r) {
    c10::IValue chunk = chunk_of(whole, whole, 2, r);
    if (r == 1) {
      chunk.toGenericDict().at("state").toGenericDict().at(0).toGenericDict().insert_or_assign(
          "step", at::scalar_tensor(8.0, at::kFloat));
    }
    return chunk;
  };
  EXPECT_THROW(reshard_flat_optimizer_state(other_step, 2, 1, 0, 10, "x"), Error);
}

}  // namespace
}  // namespace accel::detail
