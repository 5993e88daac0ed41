// fp16 on the CPU: with LibTorch 2.x, CPU autocast casts to float16 and the loss
// scaler runs as on CUDA, so a skipped optimizer step is observable on a CPU as in
// Accelerate (torch.amp.GradScaler("cpu")); LibTorch 1.13 refuses it by name.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/linear.h>
#include <torch/version.h>

#include "accel/accel.hpp"
#include "precision/dtype_recording_model.hpp"

namespace {

accel::AcceleratorOptions fp16_on_cpu() {
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.mixed_precision = accel::MixedPrecision::Fp16;
  return options;
}

#if TORCH_VERSION_MAJOR >= 2

// The first step overflows and is skipped, the scale backs off once, the next step
// is taken. The arithmetic: x = 0, so the output is the bias b, |b| <= 1/sqrt(100) = 0.1
// (Linear's init); the target is 0.75, so |b - y| is in [0.65, 0.85]. MSE over one
// element gives d loss / d out = 2 (b - y), times the scale, computed in float32 and
// cast to half for the half output of the autocast linear (mse_loss runs in float32):
//   scale 65536: |g| >= 2 * 0.65 * 65536 = 85196 > 65504 (half's largest): inf, skipped;
//   scale 32768: |g| <= 2 * 0.85 * 32768 = 55706 < 65504: finite, and the weight's
//   gradient g * x is 0. So exactly one skip, and the scale is then 32768 (backoff 0.5;
//   growth only after 2000 good steps), as torch.amp.GradScaler's defaults give.
TEST(CpuFp16, AutocastsToHalfAndSkipsTheOverflowingStep) {
  accel::Accelerator accelerator(fp16_on_cpu());
  ASSERT_EQ(accelerator.mixed_precision(), accel::MixedPrecision::Fp16);
  at::manual_seed(0);
  torch::nn::Linear linear(100, 1);
  at::ScalarType inside = at::kFloat;
  accel::Model model = accel_test::dtype_recording_model(linear, inside);
  accelerator.prepare(model);
  auto opts = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  opts.lr = 0.1;
  accel::Optimizer optimizer(model, opts);
  accelerator.prepare(optimizer);
  EXPECT_EQ(accelerator.loss_scale(), 65536.0);

  at::Tensor x = at::zeros({1, 100}), y = at::full({1, 1}, 0.75);
  at::Tensor bias_before = linear->bias.detach().clone();
  auto step = [&] {
    optimizer.zero_grad();
    at::Tensor out = model.forward(x);
    at::Tensor loss = accel::compute_loss(accel::LossKind::Mse, out, y);
    accelerator.backward(loss);
    optimizer.step();
  };
  step();
  EXPECT_EQ(inside, at::kHalf);
  EXPECT_TRUE(optimizer.step_was_skipped());
  EXPECT_TRUE(at::equal(linear->bias.detach(), bias_before)) << "a skipped step changed the bias";
  EXPECT_EQ(accelerator.loss_scale(), 32768.0);

  step();
  EXPECT_FALSE(optimizer.step_was_skipped());
  EXPECT_EQ(accelerator.loss_scale(), 32768.0);
  // SGD moved the bias toward the target: b - lr * 2 (b - y), within half's rounding of
  // the scaled gradient (2^-11 relative) and float32's of the update.
  double b = bias_before.item<double>(), expected = b - 0.1 * 2 * (b - 0.75);
  EXPECT_NEAR(linear->bias.item<double>(), expected, 2 * 0.1 * 0.85 * std::ldexp(1.0, -11) + 1e-6);
}

// GradScalerKwargs(enabled=False): the same step is not scaled, so it overflows
// nowhere and is taken; the scale stays 1.
TEST(CpuFp16, WithTheScalerDisabledNothingIsSkipped) {
  auto options = fp16_on_cpu();
  options.scaler_enabled = false;
  accel::Accelerator accelerator(options);
  torch::nn::Linear linear(100, 1);
  accel::Model model = accel::Model::from_module(linear);
  accelerator.prepare(model);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd));
  accelerator.prepare(optimizer);
  at::Tensor loss =
      accel::compute_loss(accel::LossKind::Mse, model.forward(at::zeros({1, 100})), at::full({1, 1}, 0.75));
  accelerator.backward(loss);
  optimizer.step();
  EXPECT_FALSE(optimizer.step_was_skipped());
  EXPECT_EQ(accelerator.loss_scale(), 1.0);
}

#else

TEST(CpuFp16, RefusedWithLibTorch1NamingTheReason) {
  try {
    accel::Accelerator accelerator(fp16_on_cpu());
    FAIL() << "fp16 on the CPU was accepted by LibTorch " << TORCH_VERSION;
  } catch (const accel::Error& error) {
    EXPECT_EQ(error.code(), accel::ErrorCode::Unsupported);
    EXPECT_NE(std::string(error.what()).find("needs LibTorch 2.x"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find(TORCH_VERSION), std::string::npos) << error.what();
  }
}

#endif

}  // namespace
