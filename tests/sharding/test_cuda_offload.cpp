// CPU offload on a GPU (one process: the strategy over a world of one).
// A model whose fp32 weights and Adam state exceed the GPU memory the process
// may use (set_per_process_memory_fraction) trains under FULL_SHARD with
// offload, and the same model replicated runs out of that memory; ZeRO-2 and
// FULL_SHARD with offload train as the replicated model does. Skipped, with
// the reason printed, where no GPU is present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/optim/optimizer.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "support/cuda_memory.hpp"

namespace {

using accel::ShardingStrategy;

bool no_gpu() { return !torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU") != nullptr; }

std::string mlp_spec(int64_t width, int layers) {
  std::string spec = "[";
  for (int i = 0; i < layers; ++i) {
    spec += std::string(i ? ", " : "") + R"({"type": "Linear", "in_features": )" + std::to_string(width) +
            R"(, "out_features": )" + std::to_string(width) + "}, " + R"({"type": "Tanh"})";
  }
  return spec + "]";
}

struct Training {
  accel::Accelerator accelerator;
  accel::Model model;
  accel::Optimizer optimizer;
  int64_t width;

  Training(std::optional<ShardingStrategy> strategy, int64_t width, int layers)
      : accelerator(options(strategy)), model(make_model(width, layers)), optimizer(model, adamw()), width(width) {
    accelerator.prepare(model);
    accelerator.prepare(optimizer);
  }
  static accel::AcceleratorOptions options(std::optional<ShardingStrategy> strategy) {
    accel::AcceleratorOptions options;
    options.sharding_strategy = strategy.value_or(ShardingStrategy::NoShard);
    options.cpu_offload = strategy.has_value();
    options.fsdp_min_num_params = 0;  // FULL_SHARD: one unit per layer
    return options;
  }
  static accel::Model make_model(int64_t width, int layers) {
    at::manual_seed(6);
    return accel::Model::from_json(mlp_spec(width, layers));
  }
  static accel::OptimizerOptions adamw() {
    auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
    options.lr = 1e-3;
    return options;
  }
  double step(int64_t seed) {
    at::manual_seed(100 + seed);
    at::Tensor x = at::randn({16, width}).cuda(), y = at::randn({16, width}).cuda();
    at::Tensor loss = accel::compute_loss(accel::LossKind::Mse, model.forward(x), y);
    accelerator.backward(loss);
    optimizer.step();
    optimizer.zero_grad();
    return loss.item<double>();
  }
};

TEST(CudaOffload, ShardsTrainAsTheReplicatedModel) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): CPU offload from a GPU needs one";
  for (ShardingStrategy strategy : {ShardingStrategy::ShardGradOp, ShardingStrategy::FullShard}) {
    Training replicated(std::nullopt, 64, 3), offloaded(strategy, 64, 3);
    const at::Tensor& chunk = offloaded.optimizer.torch_optimizer().param_groups().at(0).params().at(0);
    EXPECT_TRUE(chunk.device().is_cpu()) << accel::to_string(strategy);
    EXPECT_TRUE(chunk.is_pinned()) << accel::to_string(strategy);
    EXPECT_TRUE(chunk.grad().device().is_cpu()) << accel::to_string(strategy);
    double worst = 0;
    for (int64_t s = 0; s < 20; ++s) worst = std::max(worst, std::abs(replicated.step(s) - offloaded.step(s)));
    auto want = replicated.accelerator.get_state_dict(replicated.model);
    auto got = offloaded.accelerator.get_state_dict(offloaded.model);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      // The optimizer steps on the CPU here and on the GPU there: equal to rounding.
      EXPECT_TRUE(at::allclose(got[i].second, want[i].second, 1e-5, 1e-6))
          << accel::to_string(strategy) << " " << got[i].first;
    }
    EXPECT_LT(worst, 1e-5) << accel::to_string(strategy);
  }
}

#if defined(ACCEL_WITH_CUDA)
TEST(CudaOffload, FullShardTrainsAModelWhoseWeightsAndAdamStateExceedTheGpu) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): CPU offload from a GPU needs one";
  // 8 layers of 2048 x 2048: 33.6M parameters, 134 MB of fp32 weights and
  // 268 MB of Adam state, against 256 MiB of GPU memory for the process.
  constexpr int64_t kWidth = 2048, kCap = 256LL << 20;
  constexpr int kLayers = 8;
  const int64_t weights = kLayers * (kWidth * kWidth + kWidth) * 4;
  ASSERT_GT(3 * weights, kCap);
  cuda_memory::Cap cap(kCap);
  {
    Training offloaded(ShardingStrategy::FullShard, kWidth, kLayers);
    // prepare held the whole model on the GPU once (it moves the model there,
    // then shards it); training holds a unit or two.
    const int64_t prepare_peak = cuda_memory::peak();
    cuda_memory::reset_peak();
    double first = offloaded.step(0), last = first;
    for (int64_t s = 1; s < 8; ++s) last = offloaded.step(s % 2);  // two batches, seen again and again
    const int64_t peak = cuda_memory::peak();
    std::printf(
        "FULL_SHARD + CPU offload: %lld MB of weights, %lld MB of Adam state; GPU peak %.1f MB at prepare, "
        "%.1f MB training, of %lld MB allowed; loss %.5f -> %.5f\n",
        static_cast<long long>(weights >> 20), static_cast<long long>((2 * weights) >> 20),
        static_cast<double>(prepare_peak) / (1 << 20), static_cast<double>(peak) / (1 << 20),
        static_cast<long long>(kCap >> 20), first, last);
    EXPECT_LT(peak, kCap);
    EXPECT_LT(last, first);
    const auto held = offloaded.accelerator.held_bytes(offloaded.model, &offloaded.optimizer);
    EXPECT_EQ(held.optimizer_state, 2 * weights);  // all of it in host memory
  }
  // The same model replicated does not fit.
  bool out_of_memory = false;
  try {
    Training replicated(std::nullopt, kWidth, kLayers);
    for (int64_t s = 0; s < 2; ++s) replicated.step(s);
  } catch (const std::exception& e) {
    out_of_memory = std::string(e.what()).find("out of memory") != std::string::npos;
    std::printf("replicated: %s\n", std::string(e.what()).substr(0, 160).c_str());
  }
  EXPECT_TRUE(out_of_memory) << "the replicated model fits in the cap, so the test proves nothing";
}
#else
TEST(CudaOffload, FullShardTrainsAModelWhoseWeightsAndAdamStateExceedTheGpu) {
  GTEST_SKIP() << "built against a CPU LibTorch: capping GPU memory needs CUDA's allocator";
}
#endif

}  // namespace
