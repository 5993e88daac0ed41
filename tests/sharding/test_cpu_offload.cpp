// CPU offload in one process: the option and the launcher's variables, and a
// strategy applied over a world of one, which must train, save and load
// exactly as the replicated model does. (Two and three processes:
// tests/dist, the `offload` runs; on a GPU: tests/cuda.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <torch/optim/optimizer.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "core/remove_tree.hpp"
#include "accelerator/resolved_options.hpp"
#include "sharding/strategy.hpp"

namespace {

using accel::ShardingStrategy;
using accel::detail::resolve_cpu_offload;

const char* const kVariables[] = {"ACCELERATE_USE_FSDP",
                                  "FSDP_OFFLOAD_PARAMS",
                                  "ACCELERATE_USE_DEEPSPEED",
                                  "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE",
                                  "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE",
                                  "FSDP_SHARDING_STRATEGY",
                                  "ACCELERATE_DEEPSPEED_ZERO_STAGE"};

class CpuOffloadTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : kVariables) unsetenv(name);
  }
};

std::string error_of(const std::optional<bool>& option, ShardingStrategy strategy, accel::ErrorCode code) {
  try {
    resolve_cpu_offload(option, strategy);
  } catch (const accel::Error& error) {
    EXPECT_EQ(error.code(), code) << error.what();
    return error.what();
  }
  return "no error";
}

TEST_F(CpuOffloadTest, ResolvesTheOptionThenAccelerateLauncherVariables) {
  EXPECT_FALSE(resolve_cpu_offload(std::nullopt, ShardingStrategy::FullShard));
  EXPECT_TRUE(resolve_cpu_offload(true, ShardingStrategy::ShardOptimizer));
  setenv("FSDP_OFFLOAD_PARAMS", "true", 1);  // without ACCELERATE_USE_FSDP: not FSDP
  EXPECT_FALSE(resolve_cpu_offload(std::nullopt, ShardingStrategy::FullShard));
  setenv("ACCELERATE_USE_FSDP", "true", 1);
  EXPECT_TRUE(resolve_cpu_offload(std::nullopt, ShardingStrategy::FullShard));
  EXPECT_FALSE(resolve_cpu_offload(false, ShardingStrategy::FullShard));  // the option wins
  clear();
  setenv("ACCELERATE_USE_DEEPSPEED", "true", 1);
  setenv("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "none", 1);
  EXPECT_FALSE(resolve_cpu_offload(std::nullopt, ShardingStrategy::ShardGradOp));
  setenv("ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", "cpu", 1);
  EXPECT_TRUE(resolve_cpu_offload(std::nullopt, ShardingStrategy::FullShard));
  setenv("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "nvme", 1);
  EXPECT_NE(error_of(std::nullopt, ShardingStrategy::FullShard, accel::ErrorCode::Unsupported)
                .find("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE=\"nvme\": offload to NVMe is not supported"),
            std::string::npos);
  setenv("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "gpu", 1);
  EXPECT_NE(error_of(std::nullopt, ShardingStrategy::FullShard, accel::ErrorCode::InvalidArgument)
                .find("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE=\"gpu\" is not none, cpu or nvme"),
            std::string::npos);
}

TEST_F(CpuOffloadTest, NoShardHasNothingToOffload) {
  EXPECT_NE(error_of(true, ShardingStrategy::NoShard, accel::ErrorCode::Unsupported)
                .find("cpu_offload: CPU offload moves a sharded model's master weights, gradients and optimizer "
                      "state, but the sharding_strategy is NO_SHARD"),
            std::string::npos);
  setenv("ACCELERATE_USE_FSDP", "true", 1);
  setenv("FSDP_OFFLOAD_PARAMS", "true", 1);
  EXPECT_NE(
      error_of(std::nullopt, ShardingStrategy::NoShard, accel::ErrorCode::Unsupported).find("FSDP_OFFLOAD_PARAMS:"),
      std::string::npos);
  accel::AcceleratorOptions options;
  options.sharding_strategy = ShardingStrategy::NoShard;
  options.cpu_offload = true;
  EXPECT_THROW(accel::Accelerator{options}, accel::Error);
}

const char* kSpec = R"([{"type": "Linear", "in_features": 6, "out_features": 8}, {"type": "Tanh"},
                        {"type": "Linear", "in_features": 8, "out_features": 3}, {"type": "ReLU"},
                        {"type": "Linear", "in_features": 3, "out_features": 1}])";

// A model and its optimizer prepared by one accelerator.
struct Training {
  accel::Accelerator accelerator;
  accel::Model model;
  accel::Optimizer optimizer;

  Training(std::optional<ShardingStrategy> strategy, accel::OptimizerKind kind,
           std::optional<std::vector<std::string>> wrap_classes = std::nullopt)
      : accelerator(options(strategy, wrap_classes)), model(make_model()), optimizer(model, hyper(kind)) {
    accelerator.prepare(model);
    accelerator.prepare(optimizer);
  }
  static accel::AcceleratorOptions options(std::optional<ShardingStrategy> strategy,
                                           std::optional<std::vector<std::string>> wrap_classes) {
    accel::AcceleratorOptions options;
    options.fsdp_transformer_layer_cls_to_wrap = std::move(wrap_classes);
    options.cpu = true;
    options.sharding_strategy = strategy.value_or(ShardingStrategy::NoShard);
    if (strategy) options.cpu_offload = true;
    return options;
  }
  static accel::Model make_model() {
    at::manual_seed(6);
    return accel::Model::from_json(kSpec);
  }
  static accel::OptimizerOptions hyper(accel::OptimizerKind kind) {
    auto options = accel::OptimizerOptions::defaults(kind);
    options.lr = 0.01;
    return options;
  }
  void step(int64_t seed) {
    at::manual_seed(100 + seed);
    at::Tensor x = at::randn({4, 6}), y = at::randn({4, 1});
    accelerator.backward(accel::compute_loss(accel::LossKind::Mse, model.forward(x), y));
    accelerator.clip_grad_norm(model, 0.5);
    optimizer.step();
    optimizer.zero_grad();
  }
  std::vector<at::Tensor> weights() {
    std::vector<at::Tensor> out;
    for (auto& [name, t] : accelerator.get_state_dict(model)) out.push_back(t.clone());
    return out;
  }
};

// Equal to rounding: the sharded clip_grad_norm sums the squares of one flat
// chunk in double, torch's sums per-tensor norms (bitwise the same with
// LibTorch 1.13, a last-bit apart with 2.x's foreach norms). A stale or
// misplaced host copy is off by far more.
void expect_equal(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0, share = 0;  // printed: the margin of a passing run
  for (size_t i = 0; i < got.size(); ++i) {
    const at::Tensor error = (got[i] - want[i]).abs().to(at::kDouble);
    worst = std::max(worst, error.max().item<double>());
    share = std::max(share, (error / (1e-7 + 1e-6 * want[i].abs().to(at::kDouble))).max().item<double>());
  }
  std::printf("%s: worst error %g, %.3g of the tolerance\n", what.c_str(), worst, share);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(at::allclose(got[i], want[i], /*rtol=*/1e-6, /*atol=*/1e-7))
        << what << ": tensor " << i << " differs by " << (got[i] - want[i]).abs().max().item<double>();
  }
}

void expect_bitwise(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], want[i])) << what << ": tensor " << i;
}

class OneProcessOffload : public ::testing::TestWithParam<ShardingStrategy> {};

TEST_P(OneProcessOffload, TrainsExactlyAsTheReplicatedModel) {
  Training replicated(std::nullopt, accel::OptimizerKind::AdamW), offloaded(GetParam(), accel::OptimizerKind::AdamW);
  EXPECT_TRUE(offloaded.accelerator.cpu_offload());
  EXPECT_FALSE(replicated.accelerator.cpu_offload());
  // The strategy took effect with one process: the optimizer steps a host
  // chunk of its own, and FULL_SHARD's parameters are empty between steps.
  const at::Tensor& chunk = offloaded.optimizer.torch_optimizer().param_groups().at(0).params().at(0);
  EXPECT_EQ(chunk.dim(), 1);
  EXPECT_FALSE(chunk.storage().is_alias_of(offloaded.model.parameters().at(0).storage()));
  if (GetParam() == ShardingStrategy::FullShard) EXPECT_EQ(offloaded.model.parameters().at(0).numel(), 0);
  for (int64_t s = 0; s < 10; ++s) {
    replicated.step(s);
    offloaded.step(s);
  }
  expect_equal(offloaded.weights(), replicated.weights(), "after 10 AdamW steps with clipping");
}

TEST_P(OneProcessOffload, ResumesBitwiseAndStepsFromLoadedWeights) {
  const std::string dir = ::testing::TempDir() + "cpu_offload_" + accel::to_string(GetParam());
  accel::detail::remove_tree(dir);
  Training run(GetParam(), accel::OptimizerKind::AdamW);
  for (int64_t s = 0; s < 3; ++s) run.step(s);
  run.accelerator.save_state(dir);
  for (int64_t s = 3; s < 6; ++s) run.step(s);
  const auto uninterrupted = run.weights();
  run.accelerator.load_state(dir);
  for (int64_t s = 3; s < 6; ++s) run.step(s);
  expect_bitwise(run.weights(), uninterrupted, "resumed");

  // Weights written from outside reach the host copy the optimizer steps:
  // after load_state_dict, one SGD step equals the replicated model's step
  // from the same weights (a stale copy would step the old ones).
  Training sgd(GetParam(), accel::OptimizerKind::Sgd), reference(std::nullopt, accel::OptimizerKind::Sgd);
  accel::Model::NamedTensors loaded;
  auto names = reference.model.named_parameters();
  const auto values = run.weights();
  for (size_t i = 0; i < names.size(); ++i) loaded.emplace_back(names[i].first, values[i]);
  sgd.model.load_state_dict(loaded, true);
  reference.model.load_state_dict(loaded, true);
  sgd.step(9);
  reference.step(9);
  expect_equal(sgd.weights(), reference.weights(), "one SGD step after load_state_dict");
  accel::detail::remove_tree(dir);
}

// TRANSFORMER_BASED_WRAP on a JSON spec: layers by "type" or by index are
// units of their own (tests/dist runs the JSON GPT's TransformerEncoderLayer
// blocks); a class the model lacks is refused naming the types it has.
TEST(OneProcessOffloadWrap, JsonLayersByTypeOrIndex) {
  Training replicated(std::nullopt, accel::OptimizerKind::AdamW);
  Training by_index(ShardingStrategy::FullShard, accel::OptimizerKind::AdamW, std::vector<std::string>{"2", "Tanh"});
  for (int64_t s = 0; s < 5; ++s) {
    replicated.step(s);
    by_index.step(s);
  }
  expect_equal(by_index.weights(), replicated.weights(), "wrapped by index");
  try {
    Training refused(ShardingStrategy::FullShard, accel::OptimizerKind::AdamW, std::vector<std::string>{"Conv1d"});
    ADD_FAILURE() << "a wrap class matching no layer was accepted";
  } catch (const accel::Error& error) {
    EXPECT_EQ(error.code(), accel::ErrorCode::InvalidArgument);
    const std::string message = error.what();
    EXPECT_NE(message.find("fsdp_transformer_layer_cls_to_wrap: \"Conv1d\" matches no layer of the model (its layer "
                           "types: Linear, ReLU, Tanh)"),
              std::string::npos)
        << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, OneProcessOffload,
                         ::testing::Values(ShardingStrategy::ShardOptimizer, ShardingStrategy::ShardGradOp,
                                           ShardingStrategy::FullShard),
                         [](const auto& info) { return std::string(accel::to_string(info.param)); });

}  // namespace
