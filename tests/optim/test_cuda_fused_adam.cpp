// On CUDA the Adam/AdamW step runs LibTorch's fused multi-tensor kernels
// (optim/multi_tensor_adam.hpp): the same trajectory as LibTorch's own
// per-parameter step (to float rounding), the same host state (step count and
// moments, so checkpoints are unchanged), a loaded state picked up mid-run, and
// LibTorch's path where the parameters are not all on the GPU. Skipped, with the
// reason printed, where no GPU is present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/serialize.h>

#include <cstdlib>
#include <sstream>
#include <vector>

#include "optim/fused_adam.hpp"
#include "optim/state_key.hpp"

namespace {

bool no_gpu() { return !torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU") != nullptr; }

std::vector<at::Tensor> make_params(int seed, bool all_on_gpu = true) {
  at::manual_seed(seed);
  std::vector<at::Tensor> params{at::randn({37, 11}), at::randn({100003}), at::randn({5})};
  for (size_t i = 0; i < params.size(); ++i) {
    if (all_on_gpu || i != 2) params[i] = params[i].cuda();
    params[i].requires_grad_();
  }
  return params;
}

void set_grads(std::vector<at::Tensor>& a, std::vector<at::Tensor>& b, int step) {
  at::manual_seed(100 + step);
  for (size_t i = 0; i < a.size(); ++i) {
    at::Tensor g = at::randn(a[i].sizes()).to(a[i].device());
    a[i].mutable_grad() = g.clone();
    b[i].mutable_grad() = g.clone();
  }
}

double max_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i].detach().cpu() - b[i].detach().cpu()).abs().max().item<double>());
  }
  return worst;
}

template <class Fused, class Reference, class Options>
void expect_same_trajectory(const Options& options, bool all_on_gpu = true) {
  auto fused_params = make_params(1, all_on_gpu), reference_params = make_params(1, all_on_gpu);
  Fused fused(fused_params, options);
  Reference reference(reference_params, options);
  for (int step = 0; step < 8; ++step) {
    set_grads(fused_params, reference_params, step);
    fused.step();
    reference.step();
  }
  EXPECT_LT(max_difference(fused_params, reference_params), 2e-6);
}

TEST(CudaFusedAdam, AdamWMatchesLibTorch) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set)";
  ASSERT_TRUE(accel::detail::MultiTensorAdam::available()) << "a CUDA LibTorch is 2.x, which has the fused kernels";
  expect_same_trajectory<accel::detail::FusedAdamW, torch::optim::AdamW>(
      torch::optim::AdamWOptions(3e-3).weight_decay(0.05).betas({0.8, 0.95}).eps(1e-6));
}

TEST(CudaFusedAdam, AdamWithL2DecayMatchesLibTorch) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set)";
  expect_same_trajectory<accel::detail::FusedAdam, torch::optim::Adam>(
      torch::optim::AdamOptions(2e-3).weight_decay(0.1));
}

TEST(CudaFusedAdam, ParametersOnCpuAndGpuTakeLibTorchsPath) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set)";
  expect_same_trajectory<accel::detail::FusedAdamW, torch::optim::AdamW>(torch::optim::AdamWOptions(1e-3),
                                                                         /*all_on_gpu=*/false);
}

TEST(CudaFusedAdam, HostStateStaysLibTorchsAndALoadedStateIsPickedUp) {
  if (no_gpu()) GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set)";
  const auto options = torch::optim::AdamWOptions(3e-3).weight_decay(0.01);
  auto fused_params = make_params(1), reference_params = make_params(1);
  accel::detail::FusedAdamW fused(fused_params, options);
  torch::optim::AdamW reference(reference_params, options);
  // The fused optimizer runs 2 steps of its own, the reference 4; then the
  // reference's state and weights are loaded into the fused one, whose device
  // step counts (at 2) must follow the loaded host count (4).
  for (int step = 0; step < 4; ++step) {
    set_grads(fused_params, reference_params, step);
    if (step < 2) fused.step();
    reference.step();
  }
  std::stringstream saved;
  torch::save(reference, saved);
  torch::load(fused, saved);
  {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < fused_params.size(); ++i) fused_params[i].copy_(reference_params[i]);
  }
  for (int step = 4; step < 8; ++step) {
    set_grads(fused_params, reference_params, step);
    fused.step();
    reference.step();
  }
  EXPECT_LT(max_difference(fused_params, reference_params), 2e-6);
  auto& state = static_cast<torch::optim::AdamWParamState&>(
      *fused.state().at(accel::detail::optimizer_state_key(fused_params[0])));
  auto& want = static_cast<torch::optim::AdamWParamState&>(
      *reference.state().at(accel::detail::optimizer_state_key(reference_params[0])));
  EXPECT_EQ(state.step(), 8);
  EXPECT_TRUE(state.exp_avg().is_cuda());
  EXPECT_TRUE(at::allclose(state.exp_avg(), want.exp_avg(), 1e-5, 1e-7));
  // The kernels take 1 - beta2 in float (0.00099998713 for 0.999): 1.3e-5 relative.
  EXPECT_TRUE(at::allclose(state.exp_avg_sq(), want.exp_avg_sq(), 1e-4, 1e-9));
}

}  // namespace
