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
#include "core/remove_tree.hpp"

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
