// What a checkpoint must survive: saves that fail midway, leftovers of
// interrupted saves, damaged or tampered files, planted symlinks, FIFOs and
// index files that point elsewhere. Each failure names the file and leaves the
// run exactly as it was.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "accel/accel.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "optim/optimizer_state.hpp"
#include "checkpoint/tamper.hpp"
#include "checkpoint/training_run.hpp"

namespace fs = std::filesystem;
using namespace accel::test;

namespace {

accel::AcceleratorOptions automatic(const std::string& project, int64_t total_limit) {
  accel::AcceleratorOptions options;
  options.project.project_dir = project;
  options.project.automatic_checkpoint_naming = true;
  options.project.total_limit = total_limit;
  return options;
}

}  // namespace

TEST(CheckpointSafety, AFailedSaveWithTotalLimitOneKeepsTheLastCheckpoint) {
  std::string project = fresh_dir("limit1");
  TrainingRun run(automatic(project, 1));
  run.train(2);
  run.accelerator.save_state();
  bool fail_next = true;
  run.accelerator.register_for_checkpointing({[&]() -> std::string {
                                                if (fail_next)
                                                  accel::fail(accel::ErrorCode::IO, "disk full (simulated)");
                                                return "x";
                                              },
                                              [](const std::string&) {}});
  EXPECT_NE(error_of([&] { run.accelerator.save_state(); }).find("disk full"), std::string::npos);
  // The new checkpoint was never committed, so the old one must still be there.
  ASSERT_TRUE(fs::exists(project + "/checkpoints/checkpoint_0/manifest.json"));
  fail_next = false;
  run.accelerator.save_state();
  EXPECT_FALSE(fs::exists(project + "/checkpoints/checkpoint_0"));
  EXPECT_TRUE(fs::exists(project + "/checkpoints/checkpoint_1/manifest.json"));
}

TEST(CheckpointSafety, LeftoversOfInterruptedSavesAreIgnoredAndCleaned) {
  std::string project = fresh_dir("leftovers");
  fs::create_directories(project + "/checkpoints/.checkpoint_0.partial");
  write_all(project + "/checkpoints/.checkpoint_0.partial/model.safetensors", "half");
  {
    // A restart recipe tests whether checkpoints/ is empty before load_state.
    TrainingRun run(automatic(project, 2));
    EXPECT_TRUE(fs::is_empty(project + "/checkpoints"));
    run.train(3);
    run.accelerator.save_state();
    run.train(5);
    run.accelerator.save_state();
  }
  // An interrupted third save and an interrupted prune, left behind.
  fs::create_directories(project + "/checkpoints/.checkpoint_2.partial");
  fs::create_directories(project + "/checkpoints/.checkpoint_0.removing");
  TrainingRun resumed(automatic(project, 2));
  EXPECT_FALSE(fs::exists(project + "/checkpoints/.checkpoint_2.partial"));
  fs::create_directories(project + "/checkpoints/.checkpoint_2.partial");
  resumed.accelerator.load_state();
  EXPECT_EQ(resumed.steps, 5);
  EXPECT_FALSE(fs::exists(project + "/checkpoints/.checkpoint_2.partial"));
  EXPECT_EQ(resumed.accelerator.save_iteration(), 2);
}

TEST(CheckpointSafety, ABadRandomStateFileAppliesNothing) {
  std::string dir = fresh_dir("bad_rng");
  at::manual_seed(4);
  TrainingRun run;
  run.train(3);
  run.accelerator.save_state(dir);
  const std::string rng_file = "random_states_0.pkl";
  const std::string good = read_all(dir + "/" + rng_file);
  run.train(6);  // the run moves on, so a partial load would show

  using Dict = c10::impl::GenericDict;
  auto variant = [&](const std::function<void(Dict&)>& edit) {
    Dict d = accel::detail::unpickle_state_dict(good, "test").toGenericDict();
    edit(d);
    return accel::detail::pickle_state_dict(d);
  };
  auto positions = [](std::vector<c10::IValue> pair) {
    c10::impl::GenericList inner(c10::AnyType::get()), outer(c10::AnyType::get());
    for (auto& v : pair) inner.push_back(v);
    outer.push_back(inner);
    return outer;
  };
  struct Case {
    std::string bytes, expected;
  };
  std::vector<Case> cases{
      {variant([&](Dict& d) {
         d.insert_or_assign("libaccel_dataloaders", positions({int64_t{0}, int64_t{-3}}));
       }),
       "[0]: batches_consumed is -3, not a non-negative integer"},
      {variant([&](Dict& d) {
         d.insert_or_assign("libaccel_dataloaders", positions({std::string("one"), int64_t{2}}));
       }),
       "[0]: epoch is a String, not a non-negative integer"},
      {variant([](Dict& d) { d.insert_or_assign("libaccel_dataloaders", int64_t{1}); }),
       "does not hold the positions of 1 dataloaders"},
      {variant([](Dict& d) { d.insert_or_assign("torch_manual_seed", at::zeros({16}, at::kByte)); }),
       "\"torch_manual_seed\" has shape [16], this generator's has"},
      {variant([](Dict& d) {
         d.insert_or_assign("torch_manual_seed", d.at("torch_manual_seed").toTensor().to(at::kFloat));
       }),
       "\"torch_manual_seed\" has dtype Float, expected uint8"},
      {variant([](Dict& d) { (void)d.erase("torch_manual_seed"); }), "lacks \"torch_manual_seed\""},
      {variant([](Dict& d) { d.insert_or_assign("step", int64_t{-1}); }), "\"step\" is -1, not a non-negative integer"},
      {variant([](Dict& d) { d.insert_or_assign("torch_cuda_manual_seed", int64_t{0}); }),
       "\"torch_cuda_manual_seed\" is 0, not a list"},
      {"{\"cpu\": 1}", "not a PyTorch pickle of plain data"},
  };
  for (const Case& c : cases) {
    tamper(dir, rng_file, c.bytes);
    Snapshot before(run);
    std::string message = error_of([&] { run.accelerator.load_state(dir); });
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_NE(message.find(rng_file), std::string::npos) << message;
    Snapshot after(run);
    before.expect_equal(after);
  }
  tamper(dir, rng_file, good);
  run.accelerator.load_state(dir);
  EXPECT_EQ(run.steps, 3);
}

// Checkpoints written before libaccel used Accelerate's format kept the
// generator states in random_states_{rank}.safetensors, positions and step as
// metadata: they still load, and their bad values are still refused.
TEST(CheckpointSafety, OlderSafetensorsRandomStatesStillLoad) {
  std::string dir = fresh_dir("legacy_rng");
  at::manual_seed(4);
  TrainingRun run;
  run.train(3);
  run.accelerator.save_state(dir);
  const at::Tensor generator = at::detail::getDefaultCPUGenerator().get_state();
  const accel::DataLoader::Position position = run.loader.position();
  const std::string legacy = "random_states_0.safetensors";
  auto make_legacy = [&](const accel::TensorDict& tensors, const std::string& positions) {
    fs::remove(dir + "/random_states_0.pkl");
    nlohmann::json manifest = nlohmann::json::parse(read_all(dir + "/manifest.json"));
    manifest["files"].erase("random_states_0.pkl");
    write_all(dir + "/manifest.json", manifest.dump());
    const std::string path = dir + "/variant.safetensors";
    accel::save_safetensors(path, tensors, {{"dataloaders", positions}, {"step", "0"}});
    tamper(dir, legacy, read_all(path));
    fs::remove(path);
  };
  const std::string positions =
      "[[" + std::to_string(position.epoch) + ", " + std::to_string(position.batches_consumed) + "]]";
  run.train(6);
  make_legacy({{"cpu", at::zeros({16}, at::kByte)}}, positions);
  Snapshot before(run);
  const std::string message = error_of([&] { run.accelerator.load_state(dir); });
  EXPECT_NE(message.find(legacy + ": generator state \"cpu\" has shape [16]"), std::string::npos) << message;
  Snapshot(run).expect_equal(before);

  make_legacy({{"cpu", generator}}, positions);
  run.accelerator.load_state(dir);
  EXPECT_EQ(run.steps, 3);
  EXPECT_TRUE(at::equal(at::detail::getDefaultCPUGenerator().get_state(), generator));
  EXPECT_EQ(run.loader.position().batches_consumed, position.batches_consumed);
}

TEST(CheckpointSafety, AFlippedByteIsACorruptFileNamed) {
  std::string dir = fresh_dir("flipped");
  TrainingRun run;
  run.train(2);
  run.accelerator.save_state(dir);
  for (const std::string name : {"model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl"}) {
    std::string bytes = read_all(dir + "/" + name);
    std::string flipped = bytes;
    flipped[flipped.size() - 3] ^= 0x10;  // in the data, past any header
    write_all(dir + "/" + name, flipped);
    Snapshot before(run);
    std::string message = error_of([&] { run.accelerator.load_state(dir); });
    EXPECT_NE(message.find(name + " is corrupt: its XXH3 checksum is"), std::string::npos) << message;
    Snapshot(run).expect_equal(before);
    write_all(dir + "/" + name, bytes);
  }
  run.accelerator.load_state(dir);
}

TEST(CheckpointSafety, MalformedJsonFilesNameTheFileAndField) {
  std::string dir = fresh_dir("malformed");
  TrainingRun run;
  run.train(2);
  run.accelerator.save_state(dir);
  const std::string manifest = read_all(dir + "/manifest.json");
  nlohmann::json changed = nlohmann::json::parse(manifest);
  changed["version"] = "2";
  write_all(dir + "/manifest.json", changed.dump());
  accel::Error error(accel::ErrorCode::Internal, "");
  try {
    run.accelerator.load_state(dir);
  } catch (const accel::Error& e) {
    error = e;
  }
  EXPECT_EQ(error.code(), accel::ErrorCode::IO);
  EXPECT_NE(std::string(error.what()).find("manifest.json: \"version\" is \"2\", not an integer"), std::string::npos)
      << error.what();
  write_all(dir + "/manifest.json", "{\"format\": ");
  EXPECT_NE(error_of([&] { run.accelerator.load_state(dir); }).find("manifest.json is not valid JSON"),
            std::string::npos);
  write_all(dir + "/manifest.json", manifest);

  // scheduler.bin as older checkpoints hold it (JSON), then as PyTorch's pickle.
  nlohmann::json scheduler = nlohmann::json::parse(run.scheduler.state_json());
  scheduler["last_epoch"] = "many";
  tamper(dir, "scheduler.bin", scheduler.dump());
  Snapshot before(run);
  std::string message = error_of([&] { run.accelerator.load_state(dir); });
  EXPECT_NE(message.find("scheduler.bin: scheduler state: \"last_epoch\" is not an integer"), std::string::npos)
      << message;
  Snapshot(run).expect_equal(before);

  run.accelerator.save_state(dir + "_pickle");
  auto dict = accel::detail::unpickle_state_dict(read_all(dir + "_pickle/scheduler.bin"), "test").toGenericDict();
  dict.insert_or_assign("last_epoch", std::string("many"));
  tamper(dir + "_pickle", "scheduler.bin", accel::detail::pickle_state_dict(dict));
  message = error_of([&] { run.accelerator.load_state(dir + "_pickle"); });
  EXPECT_NE(message.find("scheduler.bin: scheduler state (LambdaLR): \"last_epoch\" is \"many\", not an integer"),
            std::string::npos)
      << message;
  Snapshot(run).expect_equal(before);
}

TEST(CheckpointSafety, FifosAndDevicesAreRefusedNotWaitedOn) {
  std::string dir = fresh_dir("fifo");
  fs::create_directories(dir);
  std::string fifo = dir + "/model.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kSpec);
  EXPECT_NE(error_of([&] { accelerator.load_checkpoint_in_model(model, fifo); }).find(fifo + " is a FIFO"),
            std::string::npos);
  EXPECT_NE(error_of([&] { accel::load_safetensors("/dev/zero"); }).find("/dev/zero is a character device"),
            std::string::npos);
  EXPECT_NE(error_of([&] { accel::load_safetensors(dir); }).find("is a directory"), std::string::npos);
}

TEST(CheckpointSafety, WritesNeverFollowAPlantedTemporary) {
  std::string dir = fresh_dir("planted");
  fs::create_directories(dir);
  const std::string victim = dir + "/victim.txt";
  write_all(victim, "precious");
  fs::create_symlink(victim, dir + "/out.safetensors.tmp");
  accel::save_safetensors(dir + "/out.safetensors", {{"w", at::ones({2})}});
  EXPECT_EQ(read_all(victim), "precious");
  EXPECT_TRUE(at::equal(accel::load_safetensors(dir + "/out.safetensors")[0].second, at::ones({2})));
  // A failed write leaves no temporary behind: the target is a directory.
  fs::create_directories(dir + "/taken.safetensors");
  EXPECT_NE(error_of([&] {
              accel::save_safetensors(dir + "/taken.safetensors", {{"w", at::ones({2})}});
            }).find("cannot rename"),
            std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST(CheckpointSafety, ShardIndexesStayInTheirDirectoryAndTypesMatch) {
  std::string dir = fresh_dir("index");
  fs::create_directories(dir + "/model");
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(R"([{"type": "Linear", "in_features": 2, "out_features": 2}])");
  const std::string index = dir + "/model/model.safetensors.index.json";
  auto write_index = [&](const nlohmann::json& weight_map) {
    write_all(index, nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", weight_map}}.dump());
  };
  accel::save_safetensors(dir + "/outside.safetensors", {{"0.weight", at::ones({2, 2})}});
  accel::save_safetensors(dir + "/model/a.safetensors", {{"0.weight", at::ones({2, 2})}, {"0.bias", at::ones({2})}});
  accel::save_safetensors(dir + "/model/b.safetensors", {{"0.bias", at::zeros({2})}});

  write_index({{"0.weight", "../outside.safetensors"}, {"0.bias", "a.safetensors"}});
  EXPECT_NE(error_of([&] {
              accelerator.load_checkpoint_in_model(model, index);
            }).find("names \"../outside.safetensors\", which is not a file name in the index's directory"),
            std::string::npos);
  fs::create_symlink("../outside.safetensors", dir + "/model/link.safetensors");
  write_index({{"0.weight", "link.safetensors"}});
  EXPECT_NE(error_of([&] { accelerator.load_checkpoint_in_model(model, index); }).find("leads outside the directory"),
            std::string::npos);
  write_index({{"0.weight", "a.safetensors"}, {"0.bias", "b.safetensors"}});
  EXPECT_NE(
      error_of([&] { accelerator.load_checkpoint_in_model(model, index); }).find("tensor \"0.bias\" appears in both"),
      std::string::npos);

  accel::save_safetensors(dir + "/ints.safetensors",
                          {{"0.weight", at::ones({2, 2}, at::kInt)}, {"0.bias", at::ones({2})}});
  EXPECT_NE(error_of([&] {
              accelerator.load_checkpoint_in_model(model, dir + "/ints.safetensors");
            }).find("tensor \"0.weight\" is stored as I32, the model's is Float"),
            std::string::npos);
  // Floating types convert, as transformers loads a bf16 checkpoint into fp32.
  accel::save_safetensors(dir + "/half.safetensors",
                          {{"0.weight", at::full({2, 2}, 0.5, at::kBFloat16)}, {"0.bias", at::ones({2})}});
  accelerator.load_checkpoint_in_model(model, dir + "/half.safetensors", true);
  EXPECT_TRUE(at::equal(model.parameters()[0], at::full({2, 2}, 0.5)));
}

TEST(CheckpointSafety, ATensorNamedTwiceInOneFileIsRefused) {
  std::string dir = fresh_dir("duplicate");
  fs::create_directories(dir);
  // Two entries named "w" (nlohmann would keep the last): hand-made header.
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(8, '\0');
  write_all(dir + "/dup.safetensors", bytes);
  EXPECT_NE(error_of([&] {
              accel::load_safetensors(dir + "/dup.safetensors");
            }).find("names the key \"w\" twice in one object"),
            std::string::npos);
}
