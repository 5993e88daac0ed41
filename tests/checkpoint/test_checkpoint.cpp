// save_model / load_checkpoint_in_model and save_state / load_state on one
// process: layouts, exact restores, strict loads, hooks, automatic naming.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "accel/accel.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "formats/torch_pickle.hpp"
#include "checkpoint/training_run.hpp"

namespace fs = std::filesystem;

using namespace accel::test;

TEST(Checkpoint, ResumeIsBitwiseEqualToAnUninterruptedRun) {
  std::string dir = fresh_dir("resume");
  at::manual_seed(1);
  TrainingRun reference;
  reference.train(17);

  at::manual_seed(1);
  {
    TrainingRun first;
    first.train(10);  // mid-epoch (8 batches per epoch)
    first.accelerator.save_state(dir);
  }
  at::manual_seed(99);  // a different start: everything must come from the checkpoint
  TrainingRun resumed;
  resumed.accelerator.load_state(dir);
  EXPECT_EQ(resumed.steps, 10);
  resumed.train(17);
  auto a = reference.model.parameters(), b = resumed.model.parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "parameter " << i;
  EXPECT_EQ(reference.scheduler.last_lr(), resumed.scheduler.last_lr());
  for (const char* name : {"model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl",
                           "custom_checkpoint_0.pkl", "manifest.json"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + name)) << name;
  }
  EXPECT_FALSE(fs::exists(::testing::TempDir() + ".ckpt_resume.partial"));
}

TEST(Checkpoint, CustomObjectsArePickledBytesAndOldBinFilesStillLoad) {
  std::string dir = fresh_dir("custom_pkl");
  at::manual_seed(1);
  TrainingRun run;
  run.train(4);
  run.accelerator.save_state(dir);
  // custom_checkpoint_0.pkl: torch.load returns the object's bytes ("4").
  std::ifstream in(dir + "/custom_checkpoint_0.pkl", std::ios::binary);
  const std::string pickled((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const c10::IValue value = accel::detail::read_torch_save(pickled, "custom_checkpoint_0.pkl");
  ASSERT_TRUE(value.isString());
  EXPECT_EQ(value.toStringRef(), "4");

  // A checkpoint written before: custom_checkpoint_0.bin with the raw bytes.
  fs::remove(dir + "/custom_checkpoint_0.pkl");
  std::ofstream(dir + "/custom_checkpoint_0.bin", std::ios::binary) << "3";
  nlohmann::json manifest = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"));
  manifest["files"].erase("custom_checkpoint_0.pkl");
  const accel::detail::FileDigest digest = accel::detail::digest_of("3");
  manifest["files"]["custom_checkpoint_0.bin"] = {{"bytes", digest.bytes}, {"xxh3", digest.xxh3}};
  std::ofstream(dir + "/manifest.json") << manifest.dump();
  run.accelerator.load_state(dir);
  EXPECT_EQ(run.steps, 3);
}

TEST(Checkpoint, LoadChecksEverythingBeforeApplyingAnything) {
  std::string dir = fresh_dir("strict");
  at::manual_seed(2);
  TrainingRun run;
  run.train(3);
  run.accelerator.save_state(dir);
  auto before = run.model.parameters()[0].clone();

  EXPECT_NE(error_of([&] { run.accelerator.load_state(dir + "_missing"); }).find("manifest.json is missing"),
            std::string::npos);
  // A truncated optimizer file: named, and the model is untouched.
  run.train(5);
  auto trained = run.model.parameters()[0].clone();
  std::string optimizer_file = dir + "/optimizer.bin";
  fs::resize_file(optimizer_file, fs::file_size(optimizer_file) / 2);
  std::string message = error_of([&] { run.accelerator.load_state(dir); });
  EXPECT_NE(message.find("optimizer.bin has"), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_TRUE(at::equal(run.model.parameters()[0], trained));
  EXPECT_FALSE(at::equal(trained, before));

  // A checkpoint of a different setup: the count mismatch is named.
  std::string other = fresh_dir("other");
  {
    TrainingRun two;
    accel::Model extra = accel::Model::from_json(kSpec);
    two.accelerator.prepare(extra);
    two.accelerator.save_state(other);
  }
  TrainingRun three;
  EXPECT_NE(error_of([&] { three.accelerator.load_state(other); }).find("holds 2 models, 1 are prepared"),
            std::string::npos);
}

TEST(Checkpoint, AutomaticNamingKeepsTotalLimitAndLoadsTheNewest) {
  std::string project = fresh_dir("project");
  accel::AcceleratorOptions options;
  options.project.project_dir = project;
  options.project.automatic_checkpoint_naming = true;
  options.project.total_limit = 2;
  TrainingRun run(options);
  std::vector<std::string> hooked;
  int64_t hook = run.accelerator.register_save_state_pre_hook([&](const std::string& d) { hooked.push_back(d); });
  for (int i = 0; i < 3; ++i) {
    run.train(2 * (i + 1));
    run.accelerator.save_state();
  }
  run.accelerator.remove_hook(hook);
  run.accelerator.save_state();
  EXPECT_EQ(hooked.size(), 3u);
  EXPECT_FALSE(fs::exists(project + "/checkpoints/checkpoint_0"));
  EXPECT_FALSE(fs::exists(project + "/checkpoints/checkpoint_1"));
  EXPECT_TRUE(fs::exists(project + "/checkpoints/checkpoint_2"));
  EXPECT_TRUE(fs::exists(project + "/checkpoints/checkpoint_3"));
  EXPECT_EQ(run.accelerator.save_iteration(), 4);

  TrainingRun fresh(options);
  fresh.accelerator.load_state();
  EXPECT_EQ(fresh.steps, 6);
  EXPECT_EQ(fresh.accelerator.save_iteration(), 4);
  EXPECT_NE(error_of([&] { fresh.accelerator.remove_hook(12345); }).find("no hook has id 12345"), std::string::npos);
}

TEST(Checkpoint, SaveModelShardsInHuggingFaceLayout) {
  std::string dir = fresh_dir("model");
  accel::Accelerator accelerator;
  at::manual_seed(4);
  accel::Model model = accel::Model::from_json(kSpec);
  accelerator.save_model(model, dir, "400B");  // [0.weight 384 B] [0.bias 64, 2.weight 192, 2.bias 12]
  nlohmann::json index = nlohmann::json::parse(std::ifstream(dir + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], (6 * 16 + 16 + 16 * 3 + 3) * 4);
  EXPECT_EQ(index["weight_map"]["0.weight"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["2.bias"], "model-00002-of-00002.safetensors");
  EXPECT_TRUE(fs::exists(dir + "/model-00002-of-00002.safetensors"));

  accel::Model other = accel::Model::from_json(kSpec);
  accel::LoadReport report = accelerator.load_checkpoint_in_model(other, dir + "/model.safetensors.index.json");
  EXPECT_TRUE(report.missing_keys.empty());
  EXPECT_TRUE(report.unexpected_keys.empty());
  auto a = model.parameters(), b = other.parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i]));

  std::string single = fresh_dir("single");
  accelerator.save_model(model, single);
  EXPECT_TRUE(fs::exists(single + "/model.safetensors"));
  accel::Model bigger = accel::Model::from_json(
      R"([{"type": "Linear", "in_features": 6, "out_features": 16}, {"type": "ReLU"},
          {"type": "Linear", "in_features": 16, "out_features": 3}, {"type": "Linear", "in_features": 3, "out_features": 2}])");
  report = accelerator.load_checkpoint_in_model(bigger, single + "/model.safetensors");
  EXPECT_EQ(report.missing_keys, (std::vector<std::string>{"3.weight", "3.bias"}));
  EXPECT_TRUE(report.unexpected_keys.empty());
  accel::Model smaller = accel::Model::from_json(R"([{"type": "Linear", "in_features": 6, "out_features": 16}])");
  report = accelerator.load_checkpoint_in_model(smaller, single + "/model.safetensors");
  EXPECT_TRUE(report.missing_keys.empty());
  EXPECT_EQ(report.unexpected_keys, (std::vector<std::string>{"2.bias", "2.weight"}));
  accel::Model mismatched = accel::Model::from_json(R"([{"type": "Linear", "in_features": 5, "out_features": 16}])");
  EXPECT_NE(error_of([&] {
              accelerator.load_checkpoint_in_model(mismatched, single + "/model.safetensors");
            }).find("\"0.weight\" has shape [16, 6], the model's has [16, 5]"),
            std::string::npos);
}

TEST(Checkpoint, SaveModelWithoutSafeSerializationWritesPytorchModelBin) {
  // Hugging Face's pickle layout: pytorch_model.bin, or pytorch_model-0000i-of-0000N.bin
  // shards and pytorch_model.bin.index.json; load_checkpoint_in_model reads both back.
  std::string dir = fresh_dir("model_bin");
  accel::Accelerator accelerator;
  at::manual_seed(4);
  accel::Model model = accel::Model::from_json(kSpec);
  accelerator.save_model(model, dir + "/single", "10GB", false);
  EXPECT_TRUE(fs::exists(dir + "/single/pytorch_model.bin"));
  EXPECT_FALSE(fs::exists(dir + "/single/model.safetensors"));
  accelerator.save_model(model, dir + "/sharded", "400B", false);
  nlohmann::json index = nlohmann::json::parse(std::ifstream(dir + "/sharded/pytorch_model.bin.index.json"));
  EXPECT_EQ(index["weight_map"]["0.weight"], "pytorch_model-00001-of-00002.bin");
  EXPECT_EQ(index["weight_map"]["2.bias"], "pytorch_model-00002-of-00002.bin");
  for (const char* path : {"/single/pytorch_model.bin", "/sharded/pytorch_model.bin.index.json"}) {
    accel::Model other = accel::Model::from_json(kSpec);
    accel::LoadReport report = accelerator.load_checkpoint_in_model(other, dir + path, true);
    EXPECT_TRUE(report.missing_keys.empty() && report.unexpected_keys.empty()) << path;
    auto a = model.parameters(), b = other.parameters();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << path << " parameter " << i;
  }
}

TEST(Checkpoint, SaveStateWithoutSafeSerializationResumesFromPytorchModelBin) {
  std::string dir = fresh_dir("resume_bin");
  at::manual_seed(1);
  TrainingRun reference;
  reference.train(17);
  at::manual_seed(1);
  {
    TrainingRun first;
    first.train(10);
    first.accelerator.save_state(dir, /*safe_serialization=*/false);
  }
  EXPECT_TRUE(fs::exists(dir + "/pytorch_model.bin"));
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  nlohmann::json manifest = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"));
  EXPECT_TRUE(manifest["files"].contains("pytorch_model.bin"));
  at::manual_seed(99);
  TrainingRun resumed;
  resumed.accelerator.load_state(dir);
  resumed.train(17);
  auto a = reference.model.parameters(), b = resumed.model.parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "parameter " << i;

  // The manifest covers the pickle: a flipped byte is named, nothing applied.
  auto before = resumed.model.parameters()[0].clone();
  // (inverted, not overwritten: the zip's padding is already 'Z' bytes).
  std::fstream file(dir + "/pytorch_model.bin", std::ios::in | std::ios::out | std::ios::binary);
  const auto middle = static_cast<std::streamoff>(fs::file_size(dir + "/pytorch_model.bin") / 2);
  file.seekg(middle);
  const char byte = static_cast<char>(file.get());
  file.seekp(middle);
  file.put(static_cast<char>(~byte));
  file.close();
  std::string message = error_of([&] { resumed.accelerator.load_state(dir); });
  EXPECT_NE(message.find("pytorch_model.bin is corrupt"), std::string::npos) << message;
  EXPECT_TRUE(at::equal(before, resumed.model.parameters()[0]));
}

TEST(Checkpoint, AnAccumulationWindowResumesAligned) {
  // Accelerate's expectation: saved at micro-step 3 of 4, the next accumulate after load_state syncs.
  std::string dir = fresh_dir("accumulation");
  accel::AcceleratorOptions options;
  options.gradient_accumulation_steps = 4;
  auto micro_steps = [](accel::Accelerator& accelerator, accel::Model& model, int n) {
    std::vector<bool> syncs;
    for (int i = 0; i < n; ++i) {
      accelerator.accumulate_begin(model);
      syncs.push_back(accelerator.sync_gradients());
      accelerator.accumulate_end(model);
    }
    return syncs;
  };
  {
    accel::Accelerator accelerator(options);
    accel::Model model = accel::Model::from_json(kSpec);
    accelerator.prepare(model);
    EXPECT_EQ(micro_steps(accelerator, model, 3), (std::vector<bool>{false, false, false}));
    accelerator.save_state(dir);
  }
  accel::Accelerator resumed(options);
  accel::Model model = accel::Model::from_json(kSpec);
  resumed.prepare(model);
  resumed.load_state(dir);
  EXPECT_EQ(micro_steps(resumed, model, 5), (std::vector<bool>{true, false, false, false, true}));
}
