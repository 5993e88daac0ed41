// Checkpoints an attacker or an accident hands over (issue 43), one case per
// finding: each refused with an error naming the file and what is wrong, and
// nothing applied. The hostile-pickle corpus itself runs through the C ABI in
// tests/capi/hostile_checkpoint_corpus.cpp.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/output-archive.h>

#include <caffe2/serialize/inline_container.h>

#include <filesystem>
#include <functional>
#include <sstream>

#include "accel/accel.hpp"
#include "checkpoint/tamper.hpp"
#include "formats/torch_pickle.hpp"
#include "checkpoint/training_run.hpp"
#include "optim/optimizer_state.hpp"

namespace fs = std::filesystem;
using namespace accel::test;

namespace {

using Dict = c10::impl::GenericDict;

// A saved run that has moved on since, so that a partial load would show.
struct Saved {
  std::string dir;
  TrainingRun run;
  explicit Saved(const std::string& name) : dir(fresh_dir(name)) {
    at::manual_seed(4);
    run.train(3);
    run.accelerator.save_state(dir);
    run.train(6);
  }
  // random_states_0.pkl with one edit, re-recorded in the manifest.
  void edit_random_states(const std::function<void(Dict&)>& edit) {
    const std::string good = read_all(dir + "/random_states_0.pkl");
    Dict d = accel::detail::unpickle_state_dict(good, "test").toGenericDict();
    edit(d);
    tamper(dir, "random_states_0.pkl", accel::detail::pickle_state_dict(d));
  }
  // load_state's error; the run must be as it was.
  std::string refused() {
    Snapshot before(run);
    const std::string message = error_of([&] { run.accelerator.load_state(dir); });
    Snapshot(run).expect_equal(before);
    return message;
  }
};

}  // namespace

// Item 3: bytes of the right size that set_state refuses were found only after
// the model, optimizer, scheduler and custom objects had been applied.
TEST(CheckpointHostile, AnInvalidGeneratorStateIsRefusedBeforeAnythingIsApplied) {
  Saved saved("bad_mt19937");
  saved.edit_random_states([](Dict& d) {
    d.insert_or_assign("torch_manual_seed", at::zeros_like(d.at("torch_manual_seed").toTensor()));  // never seeded
  });
  const std::string message = saved.refused();
  EXPECT_NE(message.find("random_states_0.pkl: \"torch_manual_seed\" is not a valid generator state"),
            std::string::npos)
      << message;
}

// Item 7: a position past the loader's length was taken, and the next pass yielded nothing.
TEST(CheckpointHostile, ALoaderPositionBeyondAPassIsRefused) {
  Saved saved("far_position");
  const int64_t pass = saved.run.loader.num_batches();  // 30 samples in batches of 4: 8
  auto position = [](int64_t batches, std::optional<int64_t> offset = std::nullopt) {
    c10::impl::GenericList inner(c10::AnyType::get()), outer(c10::AnyType::get());
    inner.push_back(int64_t{0});
    inner.push_back(batches);
    if (offset) inner.push_back(*offset);
    outer.push_back(inner);
    return outer;
  };
  saved.edit_random_states([&](Dict& d) { d.insert_or_assign("libaccel_dataloaders", position(1000000000000)); });
  const std::string message = saved.refused();
  EXPECT_NE(message.find("random_states_0.pkl: dataloaders[0]: batches_consumed 1000000000000 exceeds the " +
                         std::to_string(pass) + " batches of a pass"),
            std::string::npos)
      << message;
  // So is an offset past the sampler's batches (a run resumed at another world size).
  saved.edit_random_states([&](Dict& d) { d.insert_or_assign("libaccel_dataloaders", position(0, 9)); });
  const std::string offset = saved.refused();
  EXPECT_NE(offset.find("random_states_0.pkl: dataloaders[0]: sampler_offset 9 exceeds the " + std::to_string(pass) +
                        " batches the dataloader prepared now deals in a pass"),
            std::string::npos)
      << offset;
  // A position at the end of the pass is one a save can record: it loads, and
  // so does one resumed at another world size, whose offset it keeps.
  saved.edit_random_states([&](Dict& d) { d.insert_or_assign("libaccel_dataloaders", position(pass)); });
  saved.run.accelerator.load_state(saved.dir);
  EXPECT_EQ(saved.run.loader.position().batches_consumed, pass);
  saved.edit_random_states([&](Dict& d) { d.insert_or_assign("libaccel_dataloaders", position(2, 3)); });
  saved.run.accelerator.load_state(saved.dir);
  EXPECT_EQ(saved.run.loader.position().batches_consumed, 2);
  EXPECT_EQ(saved.run.loader.position().sampler_offset, 3);
  EXPECT_EQ(saved.run.loader.num_batches(), 5);  // this pass: the 30 - 3 * 4 samples after the offset
}

// Item 7: "xxh3": "" skipped the comparison.
TEST(CheckpointHostile, AnEmptyChecksumIsRefused) {
  Saved saved("empty_xxh3");
  edit_manifest(saved.dir, [](nlohmann::json& m) { m["files"]["optimizer.bin"]["xxh3"] = ""; });
  const std::string message = saved.refused();
  EXPECT_NE(message.find("files[\"optimizer.bin\"]: \"xxh3\" is \"\", not an XXH3-64 checksum"), std::string::npos)
      << message;
}

// Item 7: every file of a checkpoint stays in its directory, as shard indexes do.
TEST(CheckpointHostile, AFileThatIsASymlinkLeadingOutsideIsRefused) {
  Saved saved("symlink_out");
  const std::string outside = saved.dir + "_outside.safetensors";
  fs::copy_file(saved.dir + "/model.safetensors", outside, fs::copy_options::overwrite_existing);
  fs::remove(saved.dir + "/model.safetensors");
  fs::create_symlink(outside, saved.dir + "/model.safetensors");
  const std::string message = saved.refused();
  EXPECT_NE(message.find("model.safetensors is a symlink leading outside the checkpoint directory"), std::string::npos)
      << message;
  // So is it when the directory is read as Accelerate's (no manifest).
  fs::rename(saved.dir + "/manifest.json", saved.dir + "/manifest.json.away");
  const std::string accelerate = saved.refused();
  EXPECT_NE(accelerate.find("model.safetensors is a symlink leading outside the checkpoint directory"),
            std::string::npos)
      << accelerate;
  fs::rename(saved.dir + "/manifest.json.away", saved.dir + "/manifest.json");
  // A symlink within the directory is harmless.
  fs::remove(saved.dir + "/model.safetensors");
  fs::copy_file(outside, saved.dir + "/weights.safetensors");
  fs::create_symlink("weights.safetensors", saved.dir + "/model.safetensors");
  saved.run.accelerator.load_state(saved.dir);
  EXPECT_EQ(saved.run.steps, 3);
}

// Item 7: a manifest of a version this libaccel does not know is refused, naming it.
TEST(CheckpointHostile, AnUnknownManifestVersionIsRefused) {
  Saved saved("unknown_version");
  for (int version : {3, 0, -1}) {
    edit_manifest(saved.dir, [&](nlohmann::json& m) { m["version"] = version; });
    accel::ErrorCode code = accel::ErrorCode::Internal;
    Snapshot before(saved.run);
    try {
      saved.run.accelerator.load_state(saved.dir);
    } catch (const accel::Error& e) {
      code = e.code();
      EXPECT_NE(std::string(e.what()).find("manifest.json has format version " + std::to_string(version)),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(code, accel::ErrorCode::Unsupported);
    Snapshot(saved.run).expect_equal(before);
  }
}

// Item 7: a custom object's refusal names its file.
TEST(CheckpointHostile, ACustomObjectsLoadFailureNamesTheFile) {
  Saved saved("custom_refuses");
  bool refuse = false;
  int64_t value = 5;
  saved.run.accelerator.register_for_checkpointing({[&] { return std::to_string(value); },
                                                    [&](const std::string& bytes) {
                                                      if (refuse)
                                                        accel::fail(accel::ErrorCode::IO,
                                                                    "the object refuses \"" + bytes + "\"");
                                                      value = std::stoll(bytes);
                                                    }});
  saved.run.accelerator.save_state(saved.dir);
  saved.run.train(8);
  refuse = true;
  value = 6;
  const std::string message = saved.refused();
  EXPECT_NE(message.find("custom_checkpoint_1.pkl: the object refuses \"5\""), std::string::npos) << message;
  EXPECT_EQ(value, 6);
}

// Item 7: read as Accelerate's (its manifest gone), libaccel's own custom
// object files gave the objects the archive instead of their bytes.
TEST(CheckpointHostile, WithoutItsManifestCustomObjectsStillGetTheirBytes) {
  Saved saved("no_manifest");
  fs::remove(saved.dir + "/manifest.json");
  saved.run.accelerator.load_state(saved.dir);
  EXPECT_EQ(saved.run.steps, 3);
}

// Item 1: LibTorch's unpickler never reads checkpoint bytes; libaccel's
// reader reads what torch::pickle_save writes (typed lists included).
TEST(CheckpointHostile, LibaccelsOwnPicklesReadWithoutLibTorchsUnpickler) {
  Dict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("ints", c10::List<int64_t>({1, 2, 3}));
  d.insert("doubles", c10::List<double>({0.5}));
  d.insert("bools", c10::List<bool>({true}));
  d.insert("tensors", c10::List<at::Tensor>({at::arange(4, at::kFloat)}));
  d.insert("view", at::arange(12, at::kFloat).reshape({3, 4}).t());
  const c10::IValue back = accel::detail::unpickle_state_dict(accel::detail::pickle_state_dict(d), "test");
  const Dict got = back.toGenericDict();
  EXPECT_EQ(got.at("ints").toListRef().size(), 3u);
  EXPECT_EQ(got.at("ints").toListRef()[2].toInt(), 3);
  EXPECT_EQ(got.at("doubles").toListRef()[0].toDouble(), 0.5);
  EXPECT_TRUE(got.at("bools").toListRef()[0].toBool());
  EXPECT_TRUE(at::equal(got.at("tensors").toListRef()[0].toTensor(), at::arange(4, at::kFloat)));
  EXPECT_TRUE(at::equal(got.at("view").toTensor(), at::arange(12, at::kFloat).reshape({3, 4}).t()));
  // Crashes of LibTorch 1.13's unpickler (SIGSEGV, "free(): invalid pointer"), refused here.
  for (const std::string& pickle : {std::string("\x80\x02R.", 4), std::string("\x80\x02b.", 4),
                                    std::string("\x80\x02Q.", 4), std::string("\x80\x02K\x01\x86.", 6)}) {
    std::string archive;
    caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* p, size_t n) {
      archive.append(static_cast<const char*>(p), n);
      return n;
    });
    writer.writeRecord("data.pkl", pickle.data(), pickle.size());
    writer.writeEndOfFile();
    const std::string message = error_of([&] { accel::detail::unpickle_state_dict(archive, "optimizer.bin"); });
    EXPECT_EQ(message.rfind("optimizer.bin: data.pkl ", 0), 0u) << message;
  }
}

namespace {

// One process with cpu_offload: the sharding strategy takes effect (its
// optimizer steps chunks of its own), as with several processes.
struct Sharded {
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kSpec);
  accel::Optimizer optimizer{model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW)};

  explicit Sharded(accel::ShardingStrategy strategy) : accelerator(options(strategy)) {
    accelerator.prepare(model);
    accelerator.prepare(optimizer);
  }
  static accel::AcceleratorOptions options(accel::ShardingStrategy strategy) {
    accel::AcceleratorOptions o;
    o.cpu = true;
    o.sharding_strategy = strategy;
    o.cpu_offload = true;
    return o;
  }
  void step() {
    at::Tensor x = at::randn({4, 6}), y = at::randint(0, 3, {4}, at::kLong);
    accelerator.backward(accel::compute_loss(accel::LossKind::CrossEntropy, model.forward(x), y));
    optimizer.step();
    optimizer.zero_grad();
  }
  std::vector<at::Tensor> weights() {
    std::vector<at::Tensor> out;
    for (auto& [name, t] : accelerator.get_state_dict(model)) out.push_back(t.clone());
    return out;
  }
};

void expect_same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "tensor " << i;
}

}  // namespace

// Item 4: optimizer chunks laid out by one strategy were applied to another's
// parameters, silently (5.7e-3 off after 5 steps). Refused until resharding exists.
// Sharded state loads under another strategy, cut again for it
// (accelerator/checkpoint_layouts.hpp): the same weights, and the same next
// step (one process: the same sums in the same order, so bitwise). A manifest
// whose layout lies is refused before anything is applied.
TEST(CheckpointHostile, ShardedStateUnderAnotherStrategyIsCutAgainAndALyingLayoutIsRefused) {
  using accel::ShardingStrategy;
  for (ShardingStrategy saved_with : {ShardingStrategy::ShardGradOp, ShardingStrategy::ShardOptimizer}) {
    const std::string dir = fresh_dir(std::string("strategy_") + accel::to_string(saved_with));
    at::manual_seed(2);
    Sharded saving(saved_with);
    saving.step();
    saving.accelerator.save_state(dir);
    const auto saved = saving.weights();

    Sharded loading(ShardingStrategy::FullShard);
    loading.step();
    const auto before = loading.weights();
    edit_manifest(dir, [](nlohmann::json& m) { m["layouts"][0]["params"][0][1] = {4, 6}; });
    std::string message = error_of([&] { loading.accelerator.load_state(dir); });
    EXPECT_NE(message.find("has shape [4, 6], the model's has [16, 6]"), std::string::npos) << message;
    expect_same(loading.weights(), before);
    edit_manifest(dir, [](nlohmann::json& m) { m["layouts"][0]["kind"] = "rows"; });
    message = error_of([&] { loading.accelerator.load_state(dir); });
    EXPECT_NE(message.find("layouts[0]: layout kind \"rows\" is none of whole, flat, units"), std::string::npos)
        << message;
    expect_same(loading.weights(), before);
    // Written before manifests recorded layouts: the strategy's own rule gives it.
    edit_manifest(dir, [](nlohmann::json& m) { m.erase("layouts"); });
    loading.accelerator.load_state(dir);
    expect_same(loading.weights(), saved);
    at::manual_seed(9);
    saving.step();
    at::manual_seed(9);
    loading.step();
    expect_same(loading.weights(), saving.weights());
  }
}

// Item 1: a LibTorch (TorchScript) archive in place of a format-2 optimizer.bin
// would reach LibTorch's own unpickler, which malformed pickles crash; only
// format-1 checkpoints held such archives, so here it is refused unread.
TEST(CheckpointHostile, ATorchScriptArchiveInAFormat2CheckpointIsRefusedUnread) {
  Saved saved("torchscript_optimizer");
  torch::serialize::OutputArchive archive;
  saved.run.optimizer.torch_optimizer().save(archive);
  std::ostringstream out;
  archive.save_to(out);
  ASSERT_TRUE(accel::detail::is_legacy_optimizer_archive(out.str())) << "the archive carries TorchScript code";
  tamper(saved.dir, "optimizer.bin", out.str());
  const std::string message = saved.refused();
  EXPECT_NE(message.find("optimizer.bin is a LibTorch (TorchScript) archive, which only format-1 checkpoints hold"),
            std::string::npos)
      << message;
}
