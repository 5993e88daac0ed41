// The fused multi-tensor Adam/AdamW adapter (optim/multi_tensor_adam.hpp) on the
// CPU, so CI compiles and runs it in both LibTorch configurations: LibTorch 2.x's
// _fused_adam_/_fused_adamw_ have CPU kernels too (libaccel sends only CUDA
// parameters there, where they pay; see MultiTensorAdam::fits), and on 1.13 the
// adapter must say it is unavailable and change nothing.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include <cmath>
#include <vector>

#include "optim/multi_tensor_adam.hpp"

namespace {

using accel::detail::MultiTensorAdam;
using accel::detail::MultiTensorAdamGroup;

constexpr int kSteps = 8;

MultiTensorAdamGroup make_group(bool decoupled) {
  MultiTensorAdamGroup group;
  group.lr = 3e-3, group.beta1 = 0.8, group.beta2 = 0.95, group.eps = 1e-6, group.weight_decay = 0.05;
  group.decoupled = decoupled;
  at::manual_seed(1);
  for (auto sizes : {std::vector<int64_t>{37, 11}, std::vector<int64_t>{1001}, std::vector<int64_t>{5}}) {
    group.params.push_back(at::randn(sizes));
    group.grads.push_back(at::zeros(sizes));
    group.exp_avgs.push_back(at::zeros(sizes));
    group.exp_avg_sqs.push_back(at::zeros(sizes));
    group.steps.push_back(0);
  }
  return group;
}

// Adam (L2 decay added to the gradient) or AdamW (decay applied to the
// parameter) as PyTorch documents them, in float64.
void reference_step(std::vector<at::Tensor>& p, std::vector<at::Tensor>& m, std::vector<at::Tensor>& v,
                    const std::vector<at::Tensor>& grads, const MultiTensorAdamGroup& h, int64_t step) {
  const double correction1 = 1 - std::pow(h.beta1, step), correction2 = 1 - std::pow(h.beta2, step);
  for (size_t i = 0; i < p.size(); ++i) {
    at::Tensor g = grads[i].to(at::kDouble);
    if (h.decoupled) {
      p[i] = p[i] * (1 - h.lr * h.weight_decay);
    } else {
      g = g + h.weight_decay * p[i];
    }
    m[i] = h.beta1 * m[i] + (1 - h.beta1) * g;
    v[i] = h.beta2 * v[i] + (1 - h.beta2) * g * g;
    p[i] = p[i] - (h.lr / correction1) * m[i] / ((v[i] / correction2).sqrt() + h.eps);
  }
}

void expect_fused_step_matches_reference(bool decoupled) {
  MultiTensorAdamGroup group = make_group(decoupled);
  std::vector<at::Tensor> p, m, v;
  double largest = 0;
  for (const at::Tensor& param : group.params) {
    p.push_back(param.to(at::kDouble));
    m.push_back(at::zeros_like(p.back()));
    v.push_back(at::zeros_like(p.back()));
    largest = std::max(largest, param.abs().max().item<double>());
  }
  MultiTensorAdam fused;
  for (int64_t step = 1; step <= kSteps; ++step) {
    at::manual_seed(100 + step);
    for (at::Tensor& grad : group.grads) grad.copy_(at::randn(grad.sizes()));
    for (int64_t& count : group.steps) count = step;
    fused.step(group);
    reference_step(p, m, v, group.grads, group, step);
  }
  double worst = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    worst = std::max(worst, (group.params[i].to(at::kDouble) - p[i]).abs().max().item<double>());
  }
  // Each float32 step rounds the parameter at most twice (AdamW's decay, then the
  // update), half an ulp each: 2u|p| with u = 2^-24. The update itself,
  // lr * m / (sqrt(v) + eps), is at most about lr / sqrt(1 - beta2) = 0.013 here
  // and carries a few ulps of its own (~10u * 0.013 < u|p| for |p| > 0.13), and
  // the moments' rounding moves it by less. So after kSteps the float32
  // parameters lie within kSteps * 4u * max(|p|, 1) of the float64 reference,
  // whatever kernels or vector width the CPU picks.
  const double tolerance = kSteps * 4 * std::ldexp(1.0, -24) * std::max(largest, 1.0);
  EXPECT_LT(worst, tolerance) << "fused step vs float64 reference after " << kSteps << " steps";
  // The moments are LibTorch's state, updated in place.
  EXPECT_GT(group.exp_avgs[0].abs().sum().item<double>(), 0);
}

TEST(MultiTensorAdam, AvailableExactlyOnLibTorch2) {
  EXPECT_EQ(MultiTensorAdam::available(), TORCH_VERSION_MAJOR >= 2);
}

TEST(MultiTensorAdam, AdamWStepEqualsTheFloat64Formula) {
  if (!MultiTensorAdam::available()) GTEST_SKIP() << "LibTorch 1.13 has no fused Adam kernels";
  expect_fused_step_matches_reference(/*decoupled=*/true);
}

TEST(MultiTensorAdam, AdamStepWithL2DecayEqualsTheFloat64Formula) {
  if (!MultiTensorAdam::available()) GTEST_SKIP() << "LibTorch 1.13 has no fused Adam kernels";
  expect_fused_step_matches_reference(/*decoupled=*/false);
}

TEST(MultiTensorAdam, UnavailableStepChangesNothing) {
  if (MultiTensorAdam::available()) GTEST_SKIP() << "this LibTorch has the fused kernels (tested above)";
  MultiTensorAdamGroup group = make_group(true);
  const at::Tensor before = group.params[0].clone();
  for (int64_t& count : group.steps) count = 1;
  MultiTensorAdam().step(group);
  EXPECT_TRUE(group.params[0].equal(before));
}

}  // namespace
