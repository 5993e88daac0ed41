// Checkpoints of a model trained on a GPU (one process). The writers stream
// each tensor to the file from its own memory, copying a GPU tensor to the
// host alone while it is written (src/formats/tensor_io.*, torch_archive.*);
// the readers map the file and copy onto the model's device. Here a run saves
// mid-way, a fresh accelerator loads it and must go on exactly as the first
// did, for the replicated model, ZeRO-2 and FULL_SHARD with and without CPU
// offload, in both state-dict types; save_model's safetensors from the GPU
// reads back bit for bit. Skipped, with the reason printed, where no GPU is
// present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "core/remove_tree.hpp"

namespace {

using accel::ShardingStrategy;

bool no_gpu() { return !torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU") != nullptr; }

struct RunSetup {
  std::optional<ShardingStrategy> strategy;  // nullopt: replicated (NO_SHARD)
  bool offload = false;
  std::string state_dict_type = "FULL_STATE_DICT";
  std::string name() const {
    return (strategy ? accel::to_string(*strategy) : std::string("NO_SHARD")) + (offload ? "+offload " : " ") +
           state_dict_type;
  }
};

class ScratchDir {
 public:
  ScratchDir() {
    char pattern[] = "/tmp/accel_cuda_checkpoint_XXXXXX";
    const char* made = ::mkdtemp(pattern);
    path_ = made ? made : "";
  }
  ~ScratchDir() { accel::detail::remove_tree(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr int64_t kWidth = 48;

struct Training {
  accel::Accelerator accelerator;
  accel::Model model;
  accel::Optimizer optimizer;

  explicit Training(const RunSetup& setup)
      : accelerator(options(setup)), model(make_model()), optimizer(model, adamw()) {
    accelerator.prepare(model);
    accelerator.prepare(optimizer);
  }
  static accel::AcceleratorOptions options(const RunSetup& setup) {
    accel::AcceleratorOptions options;
    options.sharding_strategy = setup.strategy.value_or(ShardingStrategy::NoShard);
    options.cpu_offload = setup.offload;
    options.fsdp_min_num_params = 0;  // FULL_SHARD: one unit per layer
    if (setup.strategy) options.fsdp_state_dict_type = setup.state_dict_type;
    return options;
  }
  static accel::Model make_model() {
    at::manual_seed(11);
    std::string spec = "[";
    for (int i = 0; i < 3; ++i) {
      spec += std::string(i ? ", " : "") + R"({"type": "Linear", "in_features": 48, "out_features": 48}, )" +
              R"({"type": "Tanh"})";
    }
    return accel::Model::from_json(spec + "]");
  }
  static accel::OptimizerOptions adamw() {
    auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
    options.lr = 1e-2;
    return options;
  }
  double step(int64_t seed) {
    at::manual_seed(200 + seed);
    at::Tensor x = at::randn({8, kWidth}).cuda(), y = at::randn({8, kWidth}).cuda();
    at::Tensor loss = accel::compute_loss(accel::LossKind::Mse, model.forward(x), y);
    accelerator.backward(loss);
    optimizer.step();
    optimizer.zero_grad();
    return loss.item<double>();
  }
};

void expect_same_parameters(const accel::TensorDict& got, const accel::TensorDict& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << what;
    EXPECT_TRUE(at::equal(got[i].second.cpu(), want[i].second.cpu())) << what << " " << got[i].first;
  }
}

TEST(CudaCheckpoint, ResumeOnTheGpuGoesOnAsTheRunThatSaved) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): a GPU checkpoint needs one";
  const std::vector<RunSetup> setups = {
      {std::nullopt, false, "FULL_STATE_DICT"},
      {ShardingStrategy::ShardGradOp, true, "FULL_STATE_DICT"},
      {ShardingStrategy::FullShard, false, "FULL_STATE_DICT"},
      {ShardingStrategy::FullShard, true, "FULL_STATE_DICT"},
      {ShardingStrategy::FullShard, false, "SHARDED_STATE_DICT"},
  };
  for (const RunSetup& setup : setups) {
    ScratchDir dir;
    ASSERT_FALSE(dir.path().empty());
    Training first(setup);
    for (int64_t s = 0; s < 4; ++s) first.step(s);
    first.accelerator.save_state(dir.path());
    std::vector<double> want;
    for (int64_t s = 4; s < 8; ++s) want.push_back(first.step(s));

    Training resumed(setup);
    resumed.step(100);  // a different state first, so that a load that skips something shows
    resumed.accelerator.load_state(dir.path());
    std::vector<double> got;
    for (int64_t s = 4; s < 8; ++s) got.push_back(resumed.step(s));
    // The load restores the saved bits (parameters, Adam moments, step count)
    // on the same device, and the same kernels run on the same inputs: the
    // losses and the parameters after them are bitwise those of the first run.
    EXPECT_EQ(got, want) << setup.name();
    expect_same_parameters(resumed.accelerator.get_state_dict(resumed.model),
                           first.accelerator.get_state_dict(first.model), setup.name());
  }
}

TEST(CudaCheckpoint, SaveModelFromTheGpuReadsBackBitForBit) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): a GPU checkpoint needs one";
  for (const RunSetup& setup : {RunSetup{std::nullopt}, RunSetup{ShardingStrategy::FullShard}}) {
    ScratchDir dir;
    Training trained(setup);
    for (int64_t s = 0; s < 3; ++s) trained.step(s);
    // 10 KB shards: several files, so the GPU tensors stream into more than one.
    trained.accelerator.save_model(trained.model, dir.path(), "10KB");
    Training fresh(RunSetup{});
    fresh.accelerator.load_checkpoint_in_model(fresh.model, dir.path() + "/model.safetensors.index.json", true);
    expect_same_parameters(fresh.accelerator.get_state_dict(fresh.model),
                           trained.accelerator.get_state_dict(trained.model), setup.name());
  }
}

}  // namespace
