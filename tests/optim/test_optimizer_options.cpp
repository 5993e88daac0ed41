#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include "accel/error.hpp"
#include "accel/optimizer.hpp"

namespace {

using ::testing::HasSubstr;

std::string error_of(const accel::OptimizerOptions& options) {
  torch::nn::Linear linear(2, 1);
  accel::Model model = accel::Model::from_module(linear);
  try {
    accel::Optimizer optimizer(model, options);
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    return e.what();
  }
  return "no error";
}

// PyTorch's AdamW(momentum=0.9) is a TypeError; here an option the kind lacks
// is refused by name rather than silently ignored.
TEST(OptimizerOptions, AnOptionTheKindLacksIsRefusedByName) {
  auto adamw = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
  adamw.momentum = 0.9;
  EXPECT_THAT(error_of(adamw),
              HasSubstr("AdamW has no option momentum (got 0.9); momentum applies to SGD and RMSprop"));
  auto sgd = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  sgd.beta2 = 0.95;
  EXPECT_THAT(error_of(sgd), HasSubstr("SGD has no option betas (got (0.9, 0.95))"));
  sgd = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  sgd.eps = 1e-6;
  EXPECT_THAT(error_of(sgd), HasSubstr("SGD has no option eps"));
  auto adagrad = accel::OptimizerOptions::defaults(accel::OptimizerKind::Adagrad);
  adagrad.centered = true;
  EXPECT_THAT(error_of(adagrad), HasSubstr("Adagrad has no option centered (got true)"));
  auto rmsprop = accel::OptimizerOptions::defaults(accel::OptimizerKind::RmsProp);
  rmsprop.initial_accumulator_value = 0.1;
  EXPECT_THAT(error_of(rmsprop), HasSubstr("RMSprop has no option initial_accumulator_value"));
}

TEST(OptimizerOptions, EveryKindTakesItsOwnOptions) {
  auto sgd = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  sgd.momentum = 0.9, sgd.dampening = 0, sgd.nesterov = true, sgd.weight_decay = 0.1;
  auto adam = accel::OptimizerOptions::defaults(accel::OptimizerKind::Adam);
  adam.beta1 = 0.8, adam.eps = 1e-6, adam.amsgrad = true;
  auto rmsprop = accel::OptimizerOptions::defaults(accel::OptimizerKind::RmsProp);
  rmsprop.alpha = 0.9, rmsprop.momentum = 0.5, rmsprop.centered = true, rmsprop.eps = 1e-6;
  auto adagrad = accel::OptimizerOptions::defaults(accel::OptimizerKind::Adagrad);
  adagrad.lr_decay = 0.01, adagrad.initial_accumulator_value = 0.1, adagrad.eps = 1e-8;
  for (const auto& options : {sgd, adam, rmsprop, adagrad}) EXPECT_EQ(error_of(options), "no error");
}

}  // namespace
