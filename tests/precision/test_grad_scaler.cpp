// The fp16 loss scaler's algorithm, with injected inf gradients (no GPU needed).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "accel/optimizer.hpp"
#include "precision/grad_scaler.hpp"

namespace {

TEST(GradScaler, SkipsBacksOffAndGrows) {
  accel::GradScalerOptions options;
  options.growth_interval = 3;
  accel::detail::GradScaler scaler(options);
  EXPECT_EQ(scaler.scale(), 65536.0);

  at::Tensor p = at::zeros({2}).requires_grad_(true);
  p.mutable_grad() = at::tensor({65536.0f, std::numeric_limits<float>::infinity()});
  EXPECT_FALSE(scaler.should_step({p}));  // inf found: skip
  scaler.update();
  EXPECT_EQ(scaler.scale(), 32768.0);  // backoff 0.5

  for (int i = 0; i < 3; ++i) {
    p.mutable_grad() = at::tensor({32768.0f * 2, 32768.0f * 4}) * (scaler.scale() / 32768.0f);
    EXPECT_TRUE(scaler.should_step({p}));
    EXPECT_FLOAT_EQ(p.grad()[0].item<float>(), 2.0f);  // unscaled
    scaler.update();
  }
  EXPECT_EQ(scaler.scale(), 65536.0);  // grew x2 after 3 clean steps
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(GradScaler, OptimizerSkipsTheStepOnOverflow) {
  torch::nn::Linear linear(2, 1);
  accel::Model model = accel::Model::from_module(linear);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd));
  auto scaler = std::make_shared<accel::detail::GradScaler>(accel::GradScalerOptions{});
  optimizer.bind(std::make_shared<accel::GradientState>(), scaler);
  at::Tensor before = linear->weight.detach().clone();
  model.forward(at::ones({1, 2})).sum().backward();
  linear->weight.mutable_grad()[0][0] = std::numeric_limits<float>::quiet_NaN();
  optimizer.step();
  EXPECT_TRUE(optimizer.step_was_skipped());
  EXPECT_TRUE(at::equal(linear->weight, before));
  EXPECT_EQ(scaler->scale(), 32768.0);

  optimizer.zero_grad();

  at::Tensor loss = scaler->scale_loss(model.forward(at::ones({1, 2})).sum());
  loss.backward();
  optimizer.step();
  EXPECT_FALSE(optimizer.step_was_skipped());
  EXPECT_FALSE(at::equal(linear->weight, before));
  // The step used unscaled gradients: SGD lr 1e-3 times the true gradient (1).
  EXPECT_NEAR((before - linear->weight).abs().max().item<float>(), 1e-3, 1e-6);
}

TEST(GradScaler, RejectsBadOptions) {
  accel::GradScalerOptions bad;
  bad.backoff_factor = 1.5;
  EXPECT_THROW(accel::detail::GradScaler{bad}, accel::Error);
}

}  // namespace
