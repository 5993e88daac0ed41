// libaccel::gelu: oneDNN's GELU against ATen's, values and gradients within a
// bound derived from the arithmetic, in float32 and bfloat16, for both of
// aten::gelu's forms; everything oneDNN does not take is ATen's op exactly;
// a second derivative still works; the load-time rewrite points aten::gelu at it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/jit/api/module.h>

#include <cstdio>
#include <string>

#include "eltwise/gelu_op.hpp"
#include "eltwise/onednn_gelu.hpp"
#include "matmul/onednn_matmul.hpp"
#include "model/script_rewrites.hpp"
#include "support/within_bound.hpp"

namespace {

using accel::detail::accel_gelu;

constexpr double kU = 0x1p-24;  // float32 unit roundoff

// Two float32 evaluations of GELU (oneDNN's vectorised tanh/erf against
// ATen's, on any CPU) differ by at most 10 u |x| in value and 2 (10 + 6 |x|
// z'(x)) u in slope, z'(x) = sqrt(2/pi) (1 + 3 * 0.044715 x^2): the derivation
// is the tanh form's, written out beside gelu_value_bound in
// tests/model/test_script_rewrites.cpp. The erf form has no cubic term to
// amplify an error: erf and the exp of its density each carry a few u, so the
// same bounds hold with room. A gradient is the slope times the incoming
// gradient g, which the bound multiplies by |g| (g itself is exact).
at::Tensor value_bound(const at::Tensor& x) { return 10 * kU * x.to(at::kDouble).abs(); }
at::Tensor slope_bound(const at::Tensor& x) {
  const at::Tensor a = x.to(at::kDouble).abs();
  return 2 * kU * (10 + 6 * a * 0.7978845608028654 * (1 + 3 * 0.044715 * a * a));
}

using accel_test::within;

class GeluOp : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!accel::detail::onednn::available()) GTEST_SKIP() << "built without oneDNN: libaccel::gelu is ATen's";
    at::manual_seed(5);
  }
};

TEST_P(GeluOp, Float32ValuesAndGradientsMatchATens) {
  const std::string approximate = GetParam();
  // GPT-2's MLP activation shape, values over GELU's whole curved range.
  const at::Tensor x = (at::randn({8, 128, 64}) * 3).requires_grad_(true);
  const at::Tensor g = at::randn({8, 128, 64});
  ASSERT_TRUE(accel::detail::onednn::gelu_supported(x, approximate));
  const at::Tensor y = accel_gelu(x, approximate), want = at::gelu(x, approximate);
  EXPECT_TRUE(within(y, want, value_bound(x)));
  const at::Tensor grad = torch::autograd::grad({y}, {x}, {g})[0];
  const at::Tensor want_grad = torch::autograd::grad({want}, {x}, {g})[0];
  EXPECT_TRUE(within(grad, want_grad, slope_bound(x) * g.abs().to(at::kDouble)));
}

// oneDNN's bf16 kernels convert in, compute in float32 and round once, so
// against the exact GELU of the same bfloat16 inputs (float64 here) a result
// is within half a bfloat16 spacing of the float32 result f (2^-8 |f|, round
// to nearest) plus f's own error e (the bounds above, a gradient's times |g|):
// 2^-8 (|exact| + e) + e, written 2^-8 |exact| + 1.004 e.
// ATen 1.13's bfloat16 tanh-GELU is not compared: it rounds to bfloat16 after
// every step of the formula, so 1 + tanh(z) cancels to nothing for x near -3
// (its error is printed, for the record).
at::Tensor exact_gelu(const at::Tensor& x, const std::string& approximate) {
  return at::gelu(x.detach().to(at::kDouble), approximate);
}

TEST_P(GeluOp, Bfloat16ValuesAndGradientsAreOneRoundingFromExact) {
  const std::string approximate = GetParam();
  const at::Tensor x = (at::randn({8, 128, 64}) * 3).to(at::kBFloat16).requires_grad_(true);
  const at::Tensor g = at::randn({8, 128, 64}).to(at::kBFloat16);
  const at::Tensor y = accel_gelu(x, approximate);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  const at::Tensor exact = exact_gelu(x, approximate);
  EXPECT_TRUE(within(y, exact, 0x1p-8 * exact.abs() + 1.004 * value_bound(x) + 1e-30));
  const at::Tensor grad = torch::autograd::grad({y}, {x}, {g})[0];
  EXPECT_EQ(grad.scalar_type(), at::kBFloat16);
  const at::Tensor x64 = x.detach().to(at::kDouble).requires_grad_(true);
  const at::Tensor exact_grad = torch::autograd::grad({at::gelu(x64, approximate)}, {x64}, {g.to(at::kDouble)})[0];
  const at::Tensor g64 = g.to(at::kDouble).abs();
  EXPECT_TRUE(within(grad, exact_grad, 0x1p-8 * exact_grad.abs() + 1.004 * slope_bound(x) * g64 + 1e-30));
  std::printf("ATen's bfloat16 GELU for comparison: ");
  (void)within(at::gelu(x, approximate), exact, 0x1p-8 * exact.abs() + value_bound(x) + 1e-30);
}

// create_graph records the backward with ATen's differentiable gelu_backward:
// the second derivative is ATen's.
TEST_P(GeluOp, SecondDerivativeIsATens) {
  const std::string approximate = GetParam();
  const at::Tensor x = (at::randn({64}) * 2).requires_grad_(true);
  const at::Tensor slope = torch::autograd::grad({accel_gelu(x, approximate).sum()}, {x}, {}, true, true)[0];
  const at::Tensor curvature = torch::autograd::grad({slope.sum()}, {x})[0];
  const at::Tensor want_slope = torch::autograd::grad({at::gelu(x, approximate).sum()}, {x}, {}, true, true)[0];
  const at::Tensor want_curvature = torch::autograd::grad({want_slope.sum()}, {x})[0];
  EXPECT_TRUE(within(slope, want_slope, slope_bound(x)));
  EXPECT_TRUE(at::equal(curvature, want_curvature));
}

INSTANTIATE_TEST_SUITE_P(BothForms, GeluOp, ::testing::Values("tanh", "none"));

// What oneDNN does not take is aten::gelu itself: float64, a view, an empty tensor.
TEST(GeluOpFallback, OtherDtypesAreATensOpBitForBit) {
  const at::Tensor x = at::randn({5, 7}, at::kDouble).requires_grad_(true);
  EXPECT_FALSE(accel::detail::onednn::gelu_supported(x, "tanh"));
  const at::Tensor y = accel_gelu(x, "tanh");
  EXPECT_TRUE(at::equal(y, at::gelu(x, "tanh")));
  EXPECT_EQ(y.grad_fn()->name(), at::gelu(x, "tanh").grad_fn()->name());
  EXPECT_EQ(accel_gelu(at::empty({0, 3}), "none").numel(), 0);
  EXPECT_THROW(accel_gelu(at::randn({3}), "sigmoid"), c10::Error);  // ATen names the bad value
}

TEST(GeluOpFallback, NonContiguousInputsKeepTheirShape) {
  const at::Tensor x = at::randn({6, 4}).t();
  const at::Tensor y = accel_gelu(x, "none");
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_TRUE(within(y, at::gelu(x, "none"), value_bound(x) + 1e-30));
}

TEST(GeluOpRewrite, EveryGeluOfAGraphBecomesLibaccels) {
  if (!accel::detail::onednn::available()) GTEST_SKIP() << "built without oneDNN";
  torch::jit::Module module("Gelus");
  module.define(R"(
def forward(self, x):
    return torch.gelu(x) + torch.gelu(x, approximate="tanh")
)");
  EXPECT_EQ(accel::detail::onednn_ops(module), 2u);
  const at::Tensor x = at::randn({3, 5});
  const at::Tensor y = module.forward({x}).toTensor();
  EXPECT_TRUE(within(y, at::gelu(x) + at::gelu(x, "tanh"), 3 * value_bound(x) + 1e-30));
  size_t ours = 0;
  for (const torch::jit::Node* node : module.get_method("forward").graph()->nodes())
    ours += node->kind().toQualString() == std::string("libaccel::gelu");
  EXPECT_EQ(ours, 2u);
}

}  // namespace
