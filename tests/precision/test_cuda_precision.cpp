// Mixed precision on CUDA: fp16 with loss scaling and bf16 autocast really
// train. Skipped, with the reason printed, where no GPU is present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>

#include <cstdlib>

#include "accel/accel.hpp"
#include "precision/dtype_recording_model.hpp"

namespace {

// scaler: GradScalerKwargs(enabled=...): off, fp16 trains unscaled (scale 1, no step skipped).
void train_on_cuda(accel::MixedPrecision precision, bool scaler = true) {
  if (!torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU"))
    GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): CUDA mixed-precision tests need a GPU";
  accel::AcceleratorOptions options;
  options.mixed_precision = precision;
  options.scaler_enabled = scaler;
  accel::Accelerator accelerator(options);
  ASSERT_TRUE(accelerator.device().is_cuda());
  at::manual_seed(0);
  torch::nn::Linear linear(8, 2);
  at::ScalarType inside = at::kFloat;
  accel::Model model = accel_test::dtype_recording_model(linear, inside);
  accelerator.prepare(model);
  auto opts = accel::OptimizerOptions::defaults(accel::OptimizerKind::Adam);
  opts.lr = 1e-2;
  accel::Optimizer optimizer(model, opts);
  accelerator.prepare(optimizer);
  at::Tensor x = at::randn({64, 8}).cuda(), y = (x.sum(1) > 0).to(at::kLong);
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    optimizer.zero_grad();
    at::Tensor out = model.forward(x);
    EXPECT_EQ(out.scalar_type(), at::kFloat);
    at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, out, y);
    accelerator.backward(loss);
    optimizer.step();
    if (!scaler) EXPECT_FALSE(optimizer.step_was_skipped());
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_EQ(inside, precision == accel::MixedPrecision::Fp16 ? at::kHalf : at::kBFloat16);
  EXPECT_LT(last, first * 0.7);
  if (precision == accel::MixedPrecision::Fp16 && scaler) EXPECT_GT(accelerator.loss_scale(), 1.0);
  if (!scaler) EXPECT_EQ(accelerator.loss_scale(), 1.0);
}

TEST(CudaPrecision, Fp16WithLossScalingTrains) { train_on_cuda(accel::MixedPrecision::Fp16); }
TEST(CudaPrecision, Bf16AutocastTrains) { train_on_cuda(accel::MixedPrecision::Bf16); }
TEST(CudaPrecision, Fp16WithTheScalerDisabledTrainsUnscaled) { train_on_cuda(accel::MixedPrecision::Fp16, false); }

}  // namespace
