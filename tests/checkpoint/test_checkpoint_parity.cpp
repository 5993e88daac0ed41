// Accelerate parity of checkpoints and model files (issue 17, items 15, 17,
// 19): save_state's return value and its refusal to replace an automatic
// checkpoint, settable iteration, Hugging Face's shard packing and sorted
// index, and free_memory forgetting every prepared object.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "accel/accel.hpp"
#include "checkpoint/training_run.hpp"

namespace fs = std::filesystem;

using namespace accel::test;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CheckpointParity, SaveStateReturnsTheDirectoryAndNeverReplacesAnAutomaticCheckpoint) {
  std::string project = fresh_dir("parity_project");
  accel::AcceleratorOptions options;
  options.project.project_dir = project;
  options.project.automatic_checkpoint_naming = true;
  {
    TrainingRun run(options);
    run.train(2);
    EXPECT_EQ(run.accelerator.save_state(), project + "/checkpoints/checkpoint_0");
    std::string explicit_dir = fresh_dir("parity_explicit");
    EXPECT_EQ(run.accelerator.save_state(explicit_dir), explicit_dir);
  }
  const std::string manifest = read_text(project + "/checkpoints/checkpoint_0/manifest.json");

  // A restarted run numbers from 0 again: Accelerate raises a ValueError
  // rather than overwrite checkpoint_0, before running hooks or writing.
  TrainingRun restarted(options);
  int hooks = 0;
  restarted.accelerator.register_save_state_pre_hook([&](const std::string&) { ++hooks; });
  try {
    restarted.accelerator.save_state();
    ADD_FAILURE() << "an existing automatic checkpoint was replaced";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(project + "/checkpoints/checkpoint_0 (iteration 0) already exists"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(hooks, 0);
  EXPECT_EQ(read_text(project + "/checkpoints/checkpoint_0/manifest.json"), manifest);
  EXPECT_EQ(restarted.accelerator.save_iteration(), 0);

  // project_configuration.iteration = 1 continues the numbering.
  restarted.accelerator.set_save_iteration(1);
  EXPECT_EQ(restarted.accelerator.save_state(), project + "/checkpoints/checkpoint_1");
  EXPECT_EQ(restarted.accelerator.save_iteration(), 2);
  EXPECT_NE(error_of([&] { restarted.accelerator.set_save_iteration(-1); }).find("got -1"), std::string::npos);
  EXPECT_EQ(restarted.accelerator.save_iteration(), 2);
}

// Expected shards from Accelerate 0.22's accelerate.utils.shard_checkpoint on
// torch.nn.Sequential(Linear(4, 8), BatchNorm1d(8), Linear(8, 2)).state_dict()
// with max_shard_size=130 (tensor bytes 128, 32, 32, 32, 32, 32, 8, 64, 8).
TEST(CheckpointParity, SaveModelPacksShardsAsHuggingFaceInStateDictOrder) {
  std::string dir = fresh_dir("parity_shards");
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(
      R"([{"type": "Linear", "in_features": 4, "out_features": 8}, {"type": "BatchNorm1d", "num_features": 8},
          {"type": "Linear", "in_features": 8, "out_features": 2}])");
  std::vector<std::string> names;
  for (auto& [name, tensor] : accelerator.get_state_dict(model)) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                             "1.running_var", "1.num_batches_tracked", "2.weight", "2.bias"}));
  accelerator.save_model(model, dir, "130B");
  const char* expected = R"({
  "metadata": {
    "total_size": 368
  },
  "weight_map": {
    "0.bias": "model-00002-of-00003.safetensors",
    "0.weight": "model-00001-of-00003.safetensors",
    "1.bias": "model-00002-of-00003.safetensors",
    "1.num_batches_tracked": "model-00003-of-00003.safetensors",
    "1.running_mean": "model-00002-of-00003.safetensors",
    "1.running_var": "model-00003-of-00003.safetensors",
    "1.weight": "model-00002-of-00003.safetensors",
    "2.bias": "model-00003-of-00003.safetensors",
    "2.weight": "model-00003-of-00003.safetensors"
  }
}
)";
  EXPECT_EQ(read_text(dir + "/model.safetensors.index.json"), expected);

  // A tensor larger than the limit gets a shard of its own, never an empty one before it.
  std::string big = fresh_dir("parity_big");
  accelerator.save_model(model, big, "100B");
  nlohmann::json index = nlohmann::json::parse(read_text(big + "/model.safetensors.index.json"));
  EXPECT_EQ(index["weight_map"]["0.weight"], "model-00001-of-00004.safetensors");
  EXPECT_EQ(index["weight_map"]["0.bias"], "model-00002-of-00004.safetensors");
  EXPECT_EQ(index["weight_map"]["2.bias"], "model-00004-of-00004.safetensors");
}

TEST(CheckpointParity, FreeMemoryForgetsEveryPreparedObject) {
  std::string dir = fresh_dir("parity_free");
  accel::AcceleratorOptions options;
  options.gradient_accumulation_steps = 2;
  TrainingRun run(options);
  run.train(1);
  run.accelerator.accumulate_begin(run.model);
  run.accelerator.accumulate_end(run.model);
  run.accelerator.clear();  // Accelerate's alias of free_memory
  EXPECT_TRUE(run.accelerator.sync_gradients());
  run.accelerator.save_state(dir);
  nlohmann::json manifest = nlohmann::json::parse(read_text(dir + "/manifest.json"));
  for (const char* kind : {"models", "optimizers", "schedulers", "dataloaders"}) {
    EXPECT_EQ(manifest[kind], 0) << kind;
  }
  EXPECT_EQ(manifest["custom_objects"], 1);  // registered objects stay, as in Accelerate
  // The objects themselves still work: the caller owns them.
  run.train(3);
  EXPECT_EQ(run.steps, 3);
}

}  // namespace
