// Big-model dispatch onto a GPU: a map spreading a model over cuda:0, the CPU
// and the disk gives the CPU model's logits and tokens, each layer's weights
// where the map says, and a split node is refused before anything changes.
// Skipped, with the reason printed, where no GPU is present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <string>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/dispatch_fixture.hpp"

namespace {

using dispatch_fixture::generate;
using dispatch_fixture::gpt_spec;
using dispatch_fixture::save;
using dispatch_fixture::temp_dir;

#define SKIP_WITHOUT_GPU()                                               \
  if (!torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU")) \
  GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): GPU dispatch needs a GPU"

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
  spread.train(false);
  full.train(false);
  at::Tensor ids = at::arange(16, at::kLong).unsqueeze(0);
  at::Tensor got = spread.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
  at::Tensor want = full.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
  EXPECT_TRUE(got.device().is_cpu()) << "outputs come back where the inputs were";
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4)) << (got - want).abs().max().item<double>();
  EXPECT_EQ(generate(spread), generate(full));
  // Inputs already on the GPU get their outputs there.
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
