#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include "accel/error.hpp"
#include "accel/loss.hpp"
#include "accel/optimizer.hpp"

namespace {

double train_loss_after(accel::OptimizerKind kind, int steps) {
  at::manual_seed(0);
  torch::nn::Linear linear(2, 1);
  accel::Model model = accel::Model::from_module(linear);
  auto options = accel::OptimizerOptions::defaults(kind);
  options.lr = 0.05;
  accel::Optimizer optimizer(model, options);
  at::Tensor x = at::randn({32, 2});
  at::Tensor y = x.matmul(at::tensor({1.5f, -2.0f})).unsqueeze(1);
  double loss_value = 0;
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    at::Tensor loss = accel::compute_loss(accel::LossKind::Mse, model.forward(x), y);
    loss.backward();
    optimizer.step();
    loss_value = loss.item<double>();
  }
  return loss_value;
}

TEST(Optimizer, EveryKindReducesTheLoss) {
  for (auto kind : {accel::OptimizerKind::Sgd, accel::OptimizerKind::Adam, accel::OptimizerKind::AdamW,
                    accel::OptimizerKind::RmsProp, accel::OptimizerKind::Adagrad}) {
    EXPECT_LT(train_loss_after(kind, 60), 0.5 * train_loss_after(kind, 1)) << static_cast<int>(kind);
  }
}

TEST(Optimizer, ZeroGradKeepsGradientStorage) {
  torch::nn::Linear linear(2, 1);
  accel::Model model = accel::Model::from_module(linear);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd));
  model.forward(at::ones({1, 2})).sum().backward();
  void* storage = linear->weight.grad().data_ptr();
  optimizer.zero_grad();
  EXPECT_EQ(linear->weight.grad().data_ptr(), storage);
  EXPECT_EQ(linear->weight.grad().abs().sum().item<float>(), 0.0f);
}

TEST(Optimizer, LearningRateAndValidation) {
  torch::nn::Linear linear(2, 1);
  accel::Model model = accel::Model::from_module(linear);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  EXPECT_DOUBLE_EQ(optimizer.lr(), 1e-3);
  optimizer.set_lr(0.25);
  EXPECT_DOUBLE_EQ(optimizer.lr(), 0.25);
  auto bad = accel::OptimizerOptions::defaults(accel::OptimizerKind::Adam);
  bad.eps = -1;
  EXPECT_THROW(accel::Optimizer(model, bad), accel::Error);
}

}  // namespace
