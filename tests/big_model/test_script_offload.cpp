// disk_offload of a TorchScript model: every submodule holding tensors gets
// them back from the offload folder around each of its calls (the graph's
// calls rewritten, as FULL_SHARD's wrap units are), and the model computes
// what it computed before. The GPT-2 export of transformers is checked the
// same way in bindings/python/tests/test_big_model.py.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "accel/model.hpp"
#include "big_model/dispatch.hpp"
#include "core/remove_tree.hpp"
#include "model/model_impl.hpp"

namespace {

using Named = accel::Model::NamedTensors;

std::string fixture(const std::string& name) { return std::string(ACCEL_TEST_FILES) + "/model/files/" + name; }

std::string fresh_dir(const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("accel_script_offload_" + name)).string();
  accel::detail::remove_tree(dir);  // not std::filesystem::remove_all (docs/gpu.md)
  return dir;
}

// tied_lm.pt: an embedding, a head tied to it, and two buffers of the root module.
Named lm_inputs() {
  return Named{{"input_ids", at::tensor({1, 4, 7, 2, 9, 0}, at::kLong).reshape({2, 3})},
               {"labels", at::tensor({4, 7, 2, 9, 0, 3}, at::kLong).reshape({2, 3})}};
}

at::Tensor output(const Named& outputs, const std::string& name) {
  for (const auto& [key, value] : outputs) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no output " << name;
  return at::Tensor();
}

TEST(ScriptOffload, SubmodulesBringTheirWeightsInAroundEachCall) {
  const Named want = accel::Model::from_torchscript(fixture("tied_lm.pt")).forward(lm_inputs());
  accel::Model model = accel::Model::from_torchscript(fixture("tied_lm.pt"));
  const std::string dir = fresh_dir("tied");
  accel::disk_offload(model, dir);
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.is_meta()) << name;
  for (const auto& [name, b] : model.named_buffers()) EXPECT_FALSE(b.is_meta()) << name << ": the root's own stay";
  for (int run = 0; run < 2; ++run) {
    const Named got = model.forward(lm_inputs());
    // The same products on the same tensors: the same bits.
    EXPECT_TRUE(at::equal(output(got, "logits"), output(want, "logits"))) << "run " << run;
    EXPECT_TRUE(at::equal(output(got, "loss"), output(want, "loss"))) << "run " << run;
    for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.is_meta()) << name << " went back to meta";
  }
  accel::detail::remove_tree(dir);
}

TEST(ScriptOffload, AModelThatRanIsRefusedAndLeftAsItWas) {
  accel::Model model = accel::Model::from_torchscript(fixture("tied_lm.pt"));
  const Named want = model.forward(lm_inputs());
  const std::string dir = fresh_dir("ran");
  try {
    accel::disk_offload(model, dir);
    ADD_FAILURE() << "a model that ran a forward was offloaded";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("load it again"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "nothing is written";
  for (const auto& [name, p] : model.named_parameters()) EXPECT_FALSE(p.is_meta()) << name;
  EXPECT_TRUE(at::equal(output(model.forward(lm_inputs()), "logits"), output(want, "logits")));
}

}  // namespace

// Accelerate's init_empty_weights + load_checkpoint_and_dispatch for a
// TorchScript model: its parameters are never read from the file (meta),
// its buffers are (the non-persistent mask is in no checkpoint), and a
// checkpoint then fills it, in memory or streamed from disk.
namespace {

std::string write_checkpoint(const std::string& name) {
  const accel::Model loaded = accel::Model::from_torchscript(fixture("tied_lm.pt"));
  const std::string dir = fresh_dir(name);
  std::filesystem::create_directories(dir);
  // What save_model writes: the export's state_dict names (the mask left out), the tied weight once.
  accel::detail::write_offload_weights(dir, loaded.impl().state_dict());
  return dir;
}

}  // namespace

TEST(ScriptEmptyInit, ParametersStayUnreadAndBuffersComeFromTheFile) {
  const accel::Model full = accel::Model::from_torchscript(fixture("tied_lm.pt"));
  accel::Model empty = accel::Model::from_torchscript_empty(fixture("tied_lm.pt"));
  ASSERT_EQ(empty.named_parameters().size(), 1u) << "the tied head and embedding stay one tensor";
  for (const auto& [name, p] : empty.named_parameters()) EXPECT_TRUE(p.is_meta()) << name;
  const auto want = full.named_buffers();
  const auto got = empty.named_buffers();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    EXPECT_TRUE(at::equal(got[i].second, want[i].second)) << got[i].first;
  }
  EXPECT_THROW(empty.forward(lm_inputs()), accel::Error) << "no weights yet";
}

TEST(ScriptEmptyInit, MaterializeFromACheckpointComputesTheSame) {
  const Named want = accel::Model::from_torchscript(fixture("tied_lm.pt")).forward(lm_inputs());
  const std::string dir = write_checkpoint("materialize");
  accel::Model model = accel::Model::from_torchscript_empty(fixture("tied_lm.pt"));
  accel::materialize(model, dir);
  for (const auto& [name, p] : model.named_parameters()) EXPECT_FALSE(p.is_meta()) << name;
  const Named got = model.forward(lm_inputs());
  EXPECT_TRUE(at::equal(output(got, "logits"), output(want, "logits")));
  EXPECT_TRUE(at::equal(output(got, "loss"), output(want, "loss")));
  accel::detail::remove_tree(dir);
}

TEST(ScriptEmptyInit, DispatchStreamsDiskSubmodulesFromTheCheckpoint) {
  const Named want = accel::Model::from_torchscript(fixture("tied_lm.pt")).forward(lm_inputs());
  const std::string dir = write_checkpoint("dispatch");
  accel::Model model = accel::Model::from_torchscript_empty(fixture("tied_lm.pt"));
  // The tied weight is held by wte and head: brought in around each of their calls.
  accel::load_checkpoint_and_dispatch(model, dir, {{"", "disk"}});
  for (int run = 0; run < 2; ++run) {
    const Named got = model.forward(lm_inputs());
    EXPECT_TRUE(at::equal(output(got, "logits"), output(want, "logits"))) << "run " << run;
    for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.is_meta()) << name << " between calls";
    for (const auto& [name, b] : model.named_buffers()) EXPECT_FALSE(b.is_meta()) << name << ": the root's own stay";
  }
  accel::detail::remove_tree(dir);
}

TEST(ScriptEmptyInit, BadMapsAndCheckpointsChangeNothing) {
  const std::string dir = write_checkpoint("refused");
  accel::Model model = accel::Model::from_torchscript_empty(fixture("tied_lm.pt"));
  const auto expect_error = [&](const accel::DeviceMap& map, accel::ErrorCode code, const std::string& named) {
    try {
      accel::load_checkpoint_and_dispatch(model, dir, map);
      ADD_FAILURE() << "accepted a map naming " << named;
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
    for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.is_meta()) << name << " after " << named;
  };
  expect_error({{"", "cuda:0"}}, accel::ErrorCode::Unsupported, "cuda:0");
  expect_error({{"wte", "cpu"}}, accel::ErrorCode::InvalidArgument, "is not placed");
  expect_error({{"", "cpu"}, {"lm", "disk"}}, accel::ErrorCode::InvalidArgument, "\"lm\"");
  expect_error({{"", "tape"}}, accel::ErrorCode::InvalidArgument, "tape");
  expect_error({{"", "cpu"}, {"wte", "disk"}}, accel::ErrorCode::InvalidArgument, "covered twice");
  // A checkpoint without the weight, or with another shape.
  const std::string other = fresh_dir("other");
  std::filesystem::create_directories(other);
  accel::detail::write_offload_weights(other, {{"wte.weight", at::zeros({10, 5})}});
  try {
    accel::materialize(model, other);
    ADD_FAILURE() << "a checkpoint of another shape was loaded";
  } catch (const accel::Error& e) {
    EXPECT_NE(std::string(e.what()).find("wte.weight"), std::string::npos) << e.what();
  }
  accel::detail::write_offload_weights(other, {{"steps", at::zeros({1})}});
  try {
    accel::materialize(model, other);
    ADD_FAILURE() << "a checkpoint without the weight was loaded";
  } catch (const accel::Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no tensor \"wte.weight\""), std::string::npos) << e.what();
  }
  for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.is_meta()) << name;
  accel::detail::remove_tree(dir);
  accel::detail::remove_tree(other);
}
