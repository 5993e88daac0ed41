// Files whose JSON nests 100,000 levels deep, through every public call that
// reads JSON from a checkpoint: each is refused with a message naming the file
// and the depth. Before the nesting limit, the deep safetensors shape
// overflowed the stack when shown in the error message.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "accel/accel.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "core/remove_tree.hpp"

namespace fs = std::filesystem;

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const char* kSpec = R"([{"type": "Linear", "in_features": 2, "out_features": 1}])";

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "deep_json_" + name;
  accel::detail::remove_tree(dir);
  fs::create_directories(dir);
  return dir;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& error) {
    EXPECT_EQ(error.code(), accel::ErrorCode::IO);
    return error.what();
  }
  return "no error";
}

std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A safetensors file whose tensor "0.weight" has a shape nested depth arrays deep.
void write_deep_shape(const std::string& path, size_t depth) {
  std::string header = R"({"0.weight":{"dtype":"F32","shape":[)" + nested_arrays(depth) + R"(],"data_offsets":[0,0]}})";
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  std::memcpy(&bytes[0], &n, 8);  // little-endian host
  write(path, bytes + header);
}

TEST(DeepJsonInputs, SafetensorsShapeNestedDeepIsRefused) {
  std::string dir = fresh_dir("safetensors");
  const std::string path = dir + "/model.safetensors";
  write_deep_shape(path, 100000);
  const auto names_depth = AllOf(HasSubstr(path + ": not a valid safetensors file: header nests arrays and objects"),
                                 HasSubstr("100003 levels deep; the limit is 256"));
  EXPECT_THAT(error_of([&] { accel::load_safetensors(path); }), names_depth);

  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kSpec);
  EXPECT_THAT(error_of([&] { accelerator.load_checkpoint_in_model(model, path); }), names_depth);
  EXPECT_THAT(error_of([&] { accel::load_safetensors_dataset(dir, {"0.weight"}); }), names_depth);

  // Within the limit, the bad shape is shown cut short.
  write_deep_shape(path, 200);
  EXPECT_THAT(error_of([&] { accel::load_safetensors(path); }),
              HasSubstr("tensor \"0.weight\": shape holds [[[[[[[[[[[[[[["));
}

TEST(DeepJsonInputs, ShardedIndexNestedDeepIsRefused) {
  std::string dir = fresh_dir("index");
  const std::string index = dir + "/model.safetensors.index.json";
  write(index, "{\"weight_map\": " + nested_arrays(100000) + "}");
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kSpec);
  EXPECT_THAT(error_of([&] { accelerator.load_checkpoint_in_model(model, index); }),
              AllOf(HasSubstr(index + " nests arrays and objects 100001 levels deep")));
}

TEST(DeepJsonInputs, CheckpointMetadataNestedDeepIsRefused) {
  std::string dir = fresh_dir("state");
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kSpec);
  accelerator.prepare(model);
  accelerator.save_state(dir);

  // The "dataloaders" metadata of the random-state file older checkpoints hold
  // (random_states_0.safetensors, in place of today's .pkl).
  const std::string rng = dir + "/random_states_0.safetensors";
  accel::save_safetensors(rng, {{"cpu", at::detail::getDefaultCPUGenerator().get_state()}},
                          {{"dataloaders", nested_arrays(100000)}});
  std::filesystem::remove(dir + "/random_states_0.pkl");
  {  // the manifest's checksum made to match, so the parser is what refuses it
    nlohmann::json manifest = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"));
    accel::detail::FileDigest digest = accel::detail::digest_file(rng);
    manifest["files"].erase("random_states_0.pkl");
    manifest["files"]["random_states_0.safetensors"] = {{"bytes", digest.bytes}, {"xxh3", digest.xxh3}};
    std::ofstream(dir + "/manifest.json", std::ios::trunc) << manifest.dump();
  }
  EXPECT_THAT(error_of([&] { accelerator.load_state(dir); }),
              HasSubstr(rng + ": metadata \"dataloaders\" nests arrays and objects 100000 levels deep"));

  // The manifest.
  const std::string manifest = dir + "/manifest.json";
  write(manifest, "{\"format\": " + nested_arrays(100000) + "}");
  EXPECT_THAT(error_of([&] { accelerator.load_state(dir); }),
              HasSubstr("load_state: " + manifest + " nests arrays and objects 100001 levels deep"));
}

}  // namespace
