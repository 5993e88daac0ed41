// Big-model dispatch onto a GPU: a map spreading a model over cuda:0, the CPU
// and the disk gives the CPU model's logits and tokens, each layer's weights
// where the map says, and a split node is refused before anything changes.
// Skipped, with the reason printed, where no GPU is present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/dispatch_fixture.hpp"
#include "support/cuda_memory.hpp"

namespace {

using dispatch_fixture::generate;
using dispatch_fixture::gpt_spec;
using dispatch_fixture::save;
using dispatch_fixture::temp_dir;

#define SKIP_WITHOUT_GPU()                                               \
  if (!torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU")) \
  GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): GPU dispatch needs a GPU"

// The placed model's logits for 16 CPU ids are the CPU model's (to 1e-4: GPU
// and CPU kernels sum in other orders), and come back on the CPU.
void expect_the_cpu_models_logits(accel::Model& placed, accel::Model& full) {
  placed.train(false);
  full.train(false);
  at::Tensor ids = at::arange(16, at::kLong).unsqueeze(0);
  at::Tensor got = placed.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
  at::Tensor want = full.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
  EXPECT_TRUE(got.device().is_cpu()) << "outputs come back where the inputs were";
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4)) << (got - want).abs().max().item<double>();
}

TEST(CudaDispatch, GpuCpuAndDiskMapMatchesTheCpuModel) {
  SKIP_WITHOUT_GPU();
  const std::string dir = temp_dir("cuda_mixed");
  auto full = accel::Model::from_json(gpt_spec(3, 64, 256));
  const std::string checkpoint = save(full, dir + "/model.safetensors");
  auto spread = accel::model_from_json_empty(gpt_spec(3, 64, 256));
  const accel::DeviceMap map = {{"wte", "cuda:0"}, {"wpe", "cuda:0"},  {"h0", "cuda:0"},  {"h1", "cpu"},
                                {"h2", "disk"},    {"ln_f", "cuda:0"}, {"logits", "disk"}};
  accel::load_checkpoint_and_dispatch(spread, checkpoint, map, dir + "/offload");
  for (const auto& [name, p] : spread.named_parameters()) {
    const std::string node = name.substr(0, name.find('.'));
    if (node == "h1")
      EXPECT_TRUE(p.device().is_cpu()) << name;
    else if (node == "h2" || node == "logits")
      EXPECT_TRUE(p.is_meta()) << name;  // brought in per forward
    else
      EXPECT_TRUE(p.device().is_cuda()) << name;
  }
  expect_the_cpu_models_logits(spread, full);
  EXPECT_EQ(generate(spread), generate(full));
  // Inputs already on the GPU get their outputs there.
  at::Tensor ids = at::arange(16, at::kLong).unsqueeze(0);
  at::Tensor on_gpu = spread.forward(accel::Model::NamedTensors{{"input_ids", ids.cuda()}})[0].second;
  EXPECT_TRUE(on_gpu.device().is_cuda());
  for (const auto& [name, p] : spread.named_parameters()) {
    if (name.rfind("h2.", 0) == 0) EXPECT_TRUE(p.is_meta()) << name << " is released after its forward";
  }
}

TEST(CudaDispatch, AWholeModelOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const std::string dir = temp_dir("cuda_whole");
  auto full = accel::Model::from_json(gpt_spec(2, 64, 256));
  const std::string checkpoint = save(full, dir + "/model.safetensors");
  auto moved = accel::model_from_json_empty(gpt_spec(2, 64, 256));
  accel::load_checkpoint_and_dispatch(moved, checkpoint, {{"", "cuda:0"}}, "");
  for (const auto& [name, p] : moved.named_parameters()) EXPECT_TRUE(p.device().is_cuda()) << name;
  EXPECT_EQ(generate(moved), generate(full));
}

// Accelerate's disk_offload onto a GPU: every node is read from the folder
// onto cuda:0 just before it runs; the logits and tokens are the CPU model's.
TEST(CudaDispatch, DiskOffloadOntoTheGpu) {
  SKIP_WITHOUT_GPU();
  const std::string dir = temp_dir("cuda_disk_offload");
  auto full = accel::Model::from_json(gpt_spec(3, 64, 256));
  auto offloaded = accel::Model::from_json(gpt_spec(3, 64, 256));  // the same seed: the same weights
  accel::disk_offload(offloaded, dir, "cuda:0");
  for (const auto& [name, p] : offloaded.named_parameters()) EXPECT_TRUE(p.is_meta()) << name;
  expect_the_cpu_models_logits(offloaded, full);
  at::Tensor ids = at::arange(16, at::kLong).unsqueeze(0);
  at::Tensor on_gpu = offloaded.forward(accel::Model::NamedTensors{{"input_ids", ids.cuda()}})[0].second;
  EXPECT_TRUE(on_gpu.device().is_cuda());
  EXPECT_EQ(generate(offloaded), generate(full));
}

// Accelerate's dispatch_model: a loaded model spread over cuda:0, the CPU and
// the disk computes the CPU model's logits and tokens.
TEST(CudaDispatch, DispatchModelOfALoadedModelMatchesTheCpuModel) {
  SKIP_WITHOUT_GPU();
  const std::string dir = temp_dir("cuda_dispatch_model");
  auto full = accel::Model::from_json(gpt_spec(3, 64, 256));
  auto spread = accel::Model::from_json(gpt_spec(3, 64, 256));  // the same seed: the same weights
  const accel::DeviceMap map = {{"wte", "cuda:0"}, {"wpe", "cuda:0"},  {"h0", "cuda:0"}, {"h1", "cpu"},
                                {"h2", "disk"},    {"ln_f", "cuda:0"}, {"logits", "cpu"}};
  accel::dispatch_model(spread, map, dir + "/offload");
  for (const auto& [name, p] : spread.named_parameters()) {
    const std::string node = name.substr(0, name.find('.'));
    if (node == "h1" || node == "logits")
      EXPECT_TRUE(p.device().is_cpu()) << name;
    else if (node == "h2")
      EXPECT_TRUE(p.is_meta()) << name;
    else
      EXPECT_TRUE(p.device().is_cuda()) << name;
  }
  expect_the_cpu_models_logits(spread, full);
  EXPECT_EQ(generate(spread), generate(full));
}

// Accelerate's cpu_offload: the weights stay in pinned host memory and each
// node's come onto the GPU only while it runs; the logits and greedy tokens
// are the CPU model's.
TEST(CudaDispatch, CpuOffloadRunsOnTheGpuFromHostMemory) {
  SKIP_WITHOUT_GPU();
  // 6 blocks of width 128: each block is about a seventh of the 5.3 MB of weights.
  auto full = accel::Model::from_json(gpt_spec(6, 128, 512));
  auto offloaded = accel::Model::from_json(gpt_spec(6, 128, 512));  // the same seed: the same weights
  int64_t weight_bytes = 0;
  for (const auto& [name, p] : full.named_parameters()) weight_bytes += p.numel() * p.element_size();
  accel::cpu_offload(offloaded, "cuda:0");
  for (const auto& [name, p] : offloaded.named_parameters()) {
    EXPECT_TRUE(p.device().is_cpu()) << name;
    EXPECT_TRUE(p.is_pinned()) << name << ": host memory the GPU copies from without staging";
  }
  offloaded.train(false);
  full.train(false);
  at::NoGradGuard no_grad;
  at::Tensor ids = at::arange(16, at::kLong).unsqueeze(0);
#if defined(ACCEL_WITH_CUDA)
  cuda_memory::reset_peak();
  const int64_t before = cuda_memory::current();
#endif
  at::Tensor got = offloaded.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
#if defined(ACCEL_WITH_CUDA)
  // One block's weights and the activations of 16 tokens, never the model.
  const int64_t peak = cuda_memory::peak() - before;
  std::printf("cpu_offload: %.2f MB of weights, GPU peak %.2f MB during a forward\n",
              static_cast<double>(weight_bytes) / 1e6, static_cast<double>(peak) / 1e6);
  EXPECT_GT(peak, 0) << "nothing ran on the GPU";
  EXPECT_LT(peak, weight_bytes / 3);
#endif
  at::Tensor want = full.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
  EXPECT_TRUE(got.device().is_cpu()) << "outputs come back where the inputs were";
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4)) << (got - want).abs().max().item<double>();
  for (const auto& [name, p] : offloaded.named_parameters()) EXPECT_TRUE(p.device().is_cpu()) << name << " went back";
  at::Tensor on_gpu = offloaded.forward(accel::Model::NamedTensors{{"input_ids", ids.cuda()}})[0].second;
  EXPECT_TRUE(on_gpu.device().is_cuda());
  EXPECT_EQ(generate(offloaded), generate(full));
}

// Without an execution device, the device the weights were on (Accelerate's default).
TEST(CudaDispatch, CpuOffloadOfAGpuModelRunsWhereItWas) {
  SKIP_WITHOUT_GPU();
  const std::string dir = temp_dir("cuda_cpu_offload");
  auto full = accel::Model::from_json(gpt_spec(2, 64, 256));
  const std::string checkpoint = save(full, dir + "/model.safetensors");
  auto model = accel::model_from_json_empty(gpt_spec(2, 64, 256));
  accel::load_checkpoint_and_dispatch(model, checkpoint, {{"", "cuda:0"}}, "");
  accel::cpu_offload(model);
  for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.device().is_cpu()) << name;
  at::Tensor ids = at::arange(8, at::kLong).unsqueeze(0).cuda();
  at::Tensor got = model.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
  EXPECT_TRUE(got.device().is_cuda());
  EXPECT_EQ(generate(model), generate(full));
  try {
    accel::cpu_offload(model, "cuda:" + std::to_string(torch::cuda::device_count()));
    ADD_FAILURE() << "a GPU this machine lacks was accepted";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("GPU(s)"), std::string::npos) << e.what();
  }
}

TEST(CudaDispatch, ANodeSplitAcrossDevicesIsRefusedBeforeAnythingLoads) {
  SKIP_WITHOUT_GPU();
  const std::string dir = temp_dir("cuda_split");
  auto full = accel::Model::from_json(gpt_spec(2, 64, 256));
  const std::string checkpoint = save(full, dir + "/model.safetensors");
  auto empty = accel::model_from_json_empty(gpt_spec(2, 64, 256));
  // h0's attention and first linear on the GPU, the rest of h0 on the CPU.
  const accel::DeviceMap map = {{"wte", "cuda:0"},        {"wpe", "cuda:0"},     {"h0.self_attn", "cuda:0"},
                                {"h0.linear1", "cuda:0"}, {"h0.linear2", "cpu"}, {"h0.norm1", "cpu"},
                                {"h0.norm2", "cpu"},      {"h1", "cpu"},         {"ln_f", "cpu"},
                                {"logits", "cpu"}};
  try {
    accel::load_checkpoint_and_dispatch(empty, checkpoint, map, "");
    ADD_FAILURE() << "a node on two devices was accepted";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("node \"h0\""), std::string::npos) << e.what();
  }
  for (const auto& [name, p] : empty.named_parameters()) EXPECT_TRUE(p.is_meta()) << name << " changed";
}

}  // namespace
