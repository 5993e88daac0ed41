// A directory of safetensors shards as a dataset: order, concatenation, errors.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "accel/checkpoint.hpp"
#include "accel/data.hpp"
#include "accel/error.hpp"
#include "core/remove_tree.hpp"

namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + name;
  accel::detail::remove_tree(dir);
  fs::create_directories(dir);
  return dir;
}

void write_shard(const std::string& path, int64_t first, int64_t rows) {
  at::Tensor x = at::arange(first, first + rows, at::kFloat).unsqueeze(1).repeat({1, 3});
  at::Tensor y = at::arange(first, first + rows, at::kLong);
  accel::save_safetensors(path, {{"inputs", x}, {"targets", y}});
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(SafetensorsDataset, ConcatenatesShardsInFileNameOrder) {
  std::string dir = fresh_dir("shards_ok");
  write_shard(dir + "/part-001.safetensors", 4, 3);
  write_shard(dir + "/part-000.safetensors", 0, 4);
  std::ofstream(dir + "/README.txt") << "not a shard";
  auto dataset = accel::load_safetensors_dataset(dir, {"targets", "inputs"});
  ASSERT_EQ(dataset->size(), 7);
  auto batch = dataset->get_batch({0, 4, 6});
  EXPECT_TRUE(batch[0].equal(at::tensor({0, 4, 6}, at::kLong)));
  EXPECT_EQ(batch[1].sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(batch[1][2][1].item().toFloat(), 6.0f);
}

TEST(SafetensorsDataset, ErrorsNameTheDirectoryFileAndTensor) {
  EXPECT_NE(error_of([] { accel::load_safetensors_dataset("/no/such/dir", {"x"}); }).find("/no/such/dir"),
            std::string::npos);
  std::string empty = fresh_dir("shards_empty");
  EXPECT_NE(error_of([&] { accel::load_safetensors_dataset(empty, {"x"}); }).find("no .safetensors files"),
            std::string::npos);

  std::string dir = fresh_dir("shards_bad");
  write_shard(dir + "/a.safetensors", 0, 2);
  EXPECT_NE(error_of([&] {
              accel::load_safetensors_dataset(dir, {"inputs", "labels"});
            }).find("a.safetensors has no tensor 'labels'"),
            std::string::npos);

  accel::save_safetensors(dir + "/b.safetensors",
                          {{"inputs", at::zeros({2, 4})}, {"targets", at::zeros({2}, at::kLong)}});
  EXPECT_NE(error_of([&] {
              accel::load_safetensors_dataset(dir, {"inputs", "targets"});
            }).find("b.safetensors"),
            std::string::npos);

  std::string uneven = fresh_dir("shards_uneven");
  accel::save_safetensors(uneven + "/a.safetensors",
                          {{"inputs", at::zeros({3, 2})}, {"targets", at::zeros({2}, at::kLong)}});
  EXPECT_NE(error_of([&] {
              accel::load_safetensors_dataset(uneven, {"inputs", "targets"});
            }).find("'targets' has 2 rows but 'inputs' has 3"),
            std::string::npos);
}

}  // namespace
