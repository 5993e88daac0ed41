// libaccel's matrix products (matmul/matmul_ops.hpp): through oneDNN they give
// ATen's values and gradients to float rounding, for the layouts a transformer
// hands them (transposed weights, permuted attention heads, 3-D inputs); what
// oneDNN does not take is ATen's own op, bit for bit; and they run under
// inference mode and autocast as ATen's ops do (in bfloat16, on oneDNN too).
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <optional>
#include <string>
#include <vector>

#include "matmul/matmul_ops.hpp"
#include "matmul/onednn_matmul.hpp"
#include "precision/autocast.hpp"

namespace {

using accel::detail::accel_addmm;
using accel::detail::accel_linear;
using accel::detail::accel_matmul;

at::Tensor leaf(at::Tensor t) { return t.detach().requires_grad_(true); }

// oneDNN and ATen (OpenBLAS) sum a product's K terms in orders of their own,
// which depend on the CPU's kernels (AVX2, AVX-512, AMX blocking, FMA or not).
// Whatever the order, |fl(a.b) - a.b| <= gamma_K |a|.|b| with gamma_K =
// K u / (1 - K u), u = 2^-24 (Higham, Accuracy and Stability of Numerical
// Algorithms, 3.1), so two kernels differ by at most 2 gamma_K |a|.|b| per
// element. These bounds hold on any CPU; a wrong layout, stride or operand
// misses them by orders of magnitude.
constexpr double kUnitRoundoff = 5.960464477539063e-8;  // float32: 2^-24
double product_bound(int64_t depth) { return 2 * depth * kUnitRoundoff / (1 - depth * kUnitRoundoff); }

// Under CPU autocast to bf16 both paths cast the operands to bfloat16 the same
// way (autocast's own cast), so they multiply the same bfloat16 values; each
// sums in float32 in its own order (2 gamma_K |a|.|b| apart, as above, |a| and
// |b| now the bfloat16 values) and rounds its sum once to bfloat16 (relative
// error at most 2^-8 each, and a sum is at most |a|.|b|). Gradients: the
// incoming gradient is the same bfloat16 tensor, the backward products are
// bounded the same way, and the casts' backward turns them into float32 exactly.
constexpr double kBfloat16UnitRoundoff = 1.0 / 256;  // 2^-8
double bfloat16_product_bound(int64_t depth) { return product_bound(depth) + 2 * kBfloat16UnitRoundoff; }

// The largest |got - want| / (|a|.|b|) over the elements (where |a|.|b| > 0).
double worst_relative(const at::Tensor& got, const at::Tensor& want, const at::Tensor& magnitude) {
  at::Tensor scale = magnitude.to(at::kDouble);
  at::Tensor error = (got.to(at::kDouble) - want.to(at::kDouble)).abs();
  return (error / scale.clamp_min(1e-30)).max().item<double>();
}

// Runs `op` on copies of `inputs` and `reference` on others, backpropagates the
// same random gradient through both and compares outputs and input gradients
// per element against 2 gamma_depth |a|.|b|, where depth is the longest sum
// an element of the output or of a gradient goes through (a product's inner
// size, one more with a bias). The op must be a sum of products of its inputs
// (linear, addmm, matmul): then `reference` on |inputs| in float64, with |g|
// backpropagated, gives exactly the |a|.|b| of every output and gradient.
// With `bfloat16_autocast` both run under CPU autocast to bf16 (bounds above,
// |a| and |b| the operands rounded to bfloat16), outputs are bfloat16 and the
// float32 inputs' gradients float32.
template <class Op, class Reference>
void expect_same_values_and_gradients(const std::vector<at::Tensor>& inputs, Op op, Reference reference, int64_t depth,
                                      bool bfloat16_autocast = false) {
  std::vector<at::Tensor> ours, theirs, magnitudes;
  for (const auto& t : inputs) {
    ours.push_back(leaf(t.clone()));
    theirs.push_back(leaf(t.clone()));
    magnitudes.push_back(leaf((bfloat16_autocast ? t.to(at::kBFloat16) : t).abs().to(at::kDouble)));
  }
  at::Tensor y, want;
  {
    std::optional<accel::detail::AutocastScope> autocast;
    if (bfloat16_autocast) autocast.emplace(accel::MixedPrecision::Bf16, c10::Device(c10::kCPU));
    y = op(ours);
    want = reference(theirs);
  }
  const at::Tensor size = reference(magnitudes);
  ASSERT_EQ(y.sizes(), want.sizes());
  const auto output_dtype = bfloat16_autocast ? at::kBFloat16 : at::kFloat;
  ASSERT_EQ(y.scalar_type(), output_dtype);
  ASSERT_EQ(want.scalar_type(), output_dtype);
  const double bound = bfloat16_autocast ? bfloat16_product_bound(depth) : product_bound(depth);
  EXPECT_LT(worst_relative(y, want, size), bound) << "output";
  at::Tensor g = at::randn(want.sizes()).to(output_dtype);
  auto grads = torch::autograd::grad({y}, ours, {g});
  auto want_grads = torch::autograd::grad({want}, theirs, {g});
  auto sizes = torch::autograd::grad({size}, magnitudes, {g.abs().to(at::kDouble)});
  for (size_t i = 0; i < grads.size(); ++i) {
    EXPECT_EQ(grads[i].scalar_type(), at::kFloat) << "input " << i << ": float32 leaves get float32 gradients";
    EXPECT_LT(worst_relative(grads[i], want_grads[i], sizes[i]), bound) << "input " << i;
  }
}

class MatmulOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!accel::detail::onednn::available()) GTEST_SKIP() << "built without oneDNN: the ops are ATen's";
    at::manual_seed(3);
  }
};

// The layouts above reach oneDNN itself (not ATen's fallback), with no copy.
TEST_F(MatmulOps, OneDnnTakesTheLayoutsATransformerHandsIt) {
  namespace onednn = accel::detail::onednn;
  at::Tensor x = at::randn({64, 48}), w = at::randn({96, 48}), bias = at::randn({96});
  EXPECT_TRUE(onednn::matmul(x, w.t(), bias).has_value()) << "x @ w^T + bias";
  EXPECT_TRUE(onednn::matmul(x.t(), at::randn({64, 8})).has_value()) << "x^T @ g";
  at::Tensor qkv = at::randn({2, 16, 96});
  auto heads = [&](int i) { return qkv.narrow(2, 32 * i, 32).view({2, 16, 4, 8}).permute({0, 2, 1, 3}); };
  auto scores = onednn::matmul(heads(0), heads(1).transpose(-1, -2));
  ASSERT_TRUE(scores.has_value()) << "permuted heads";
  EXPECT_LT(worst_relative(*scores, at::matmul(heads(0), heads(1).transpose(-1, -2)),
                           at::matmul(heads(0).abs(), heads(1).abs().transpose(-1, -2))),
            product_bound(8));
  EXPECT_FALSE(onednn::matmul(x.to(at::kDouble), w.t().to(at::kDouble)).has_value()) << "float64 is ATen's";
  EXPECT_FALSE(onednn::matmul(at::randn({2, 3, 4}), at::randn({4, 5})).has_value()) << "broadcasting is ATen's";
}

// Variable-length batches: more shapes than the plans kept (512), each still
// computed right after the oldest plans were dropped.
TEST_F(MatmulOps, ManyShapesOutliveThePlanCache) {
  at::Tensor w = at::randn({16, 8});
  for (int64_t rows = 1; rows <= 600; ++rows) {
    at::Tensor x = at::randn({rows, 16});
    auto out = accel::detail::onednn::matmul(x, w);
    ASSERT_TRUE(out.has_value()) << rows;
    ASSERT_LT(worst_relative(*out, at::mm(x, w), at::mm(x.abs(), w.abs())), product_bound(16)) << rows;
  }
  at::Tensor x = at::randn({3, 16});
  EXPECT_LT(worst_relative(*accel::detail::onednn::matmul(x, w), at::mm(x, w), at::mm(x.abs(), w.abs())),
            product_bound(16))
      << "a dropped shape, planned again";
}

TEST_F(MatmulOps, AddmmAsTransformersConv1dCallsIt) {
  expect_same_values_and_gradients(
      {at::randn({96}), at::randn({64, 48}), at::randn({48, 96})},
      [](auto& t) { return accel_addmm(t[0], t[1], t[2]); }, [](auto& t) { return at::addmm(t[0], t[1], t[2]); },
      /*depth: grad_x sums over 96 columns*/ 96);
}

TEST_F(MatmulOps, LinearOnThreeDimensionalAndTransposedInputs) {
  expect_same_values_and_gradients(
      {at::randn({4, 16, 32}), at::randn({24, 32}), at::randn({24})},
      [](auto& t) { return accel_linear(t[0], t[1], t[2]); }, [](auto& t) { return at::linear(t[0], t[1], t[2]); },
      /*depth: grad_w and grad_bias sum over 4 * 16 rows*/ 64);
  expect_same_values_and_gradients(  // no bias (GPT-2's tied head); an input that is a transposed view
      {at::randn({32, 40}), at::randn({24, 32})}, [](auto& t) { return accel_linear(t[0].t(), t[1], at::Tensor()); },
      [](auto& t) { return at::linear(t[0].t(), t[1]); }, /*depth: grad_w sums over 40 rows*/ 40);
}

// q, k, v as GPT-2 makes them: one [B, T, 3C] projection split and permuted to [B, H, T, C/H].
at::Tensor head(const at::Tensor& qkv, int i) {
  return qkv.narrow(2, 32 * i, 32).view({2, 16, 4, 8}).permute({0, 2, 1, 3});
}

// Both products of attention, each checked on its own so that each is a sum
// of products (the softmax between them is ATen's either way).
TEST_F(MatmulOps, MatmulOnPermutedAttentionHeads) {
  expect_same_values_and_gradients(  // scores = q k^T
      {at::randn({2, 16, 3 * 32})},
      [](auto& t) { return accel_matmul(head(t[0], 0), head(t[0], 1).transpose(-1, -2)); },
      [](auto& t) { return at::matmul(head(t[0], 0), head(t[0], 1).transpose(-1, -2)); },
      /*depth: the gradients sum over 16 positions*/ 16);
  expect_same_values_and_gradients(  // weights v, the weights' rows summing to 1
      {at::randn({2, 4, 16, 16}).softmax(-1), at::randn({2, 16, 3 * 32})},
      [](auto& t) { return accel_matmul(t[0], head(t[1], 2)); },
      [](auto& t) { return at::matmul(t[0], head(t[1], 2)); }, /*depth: 16 positions*/ 16);
}

TEST_F(MatmulOps, WhatOneDnnDoesNotTakeIsAtensOwnOpBitForBit) {
  at::Tensor a = at::randn({3, 5, 4}, at::kDouble), b = at::randn({4, 6}, at::kDouble);
  EXPECT_TRUE(at::equal(accel_matmul(a, b), at::matmul(a, b))) << "float64";
  at::Tensor af = a.to(at::kFloat), bf = b.to(at::kFloat);
  EXPECT_TRUE(at::equal(accel_matmul(af, bf), at::matmul(af, bf))) << "broadcast [3,5,4] @ [4,6]";
  at::Tensor v = at::randn({4});
  EXPECT_TRUE(at::equal(accel_matmul(af, v.to(at::kFloat)), at::matmul(af, v.to(at::kFloat)))) << "matrix @ vector";
  at::Tensor bias = at::randn({1, 6}), x = at::randn({5, 4}), w = at::randn({4, 6});
  EXPECT_TRUE(at::equal(accel_addmm(bias, x, w), at::addmm(bias, x, w))) << "a 2-D bias";
  // A mismatch is ATen's error, raised by ATen.
  EXPECT_ANY_THROW(accel_matmul(at::randn({2, 3}), at::randn({4, 5})));
}

// A gradient taken with create_graph is differentiable again, as ATen's is.
TEST_F(MatmulOps, SecondDerivativesAreAtens) {
  at::Tensor x0 = at::randn({6, 8}), w0 = at::randn({5, 8});
  auto second = [&](bool ours, const at::Tensor& x_value, const at::Tensor& w_value) {
    at::Tensor x = leaf(x_value.clone()), w = leaf(w_value.clone());
    at::Tensor y = ours ? accel_linear(x, w, at::Tensor()) : at::linear(x, w);
    at::Tensor gx = torch::autograd::grad({y.pow(2).sum()}, {x}, {}, true, true)[0];
    return torch::autograd::grad({gx.pow(2).sum()}, {w})[0];
  };
  // Only products and sums: the same on |x|, |w| in float64 bounds every term.
  // Depth: the roundings on the longest chain, a product adding its factors':
  // y (8) -> dy = 2y (1) -> gx = dy w (5) -> 2 gx (1) -> back through both
  // uses of w (5 + 6) and their sum (1): 27; 48 leaves room for how autograd
  // groups them.
  at::Tensor size = second(false, x0.abs().to(at::kDouble), w0.abs().to(at::kDouble));
  EXPECT_LT(worst_relative(second(true, x0, w0), second(false, x0, w0), size), product_bound(48));
}

TEST_F(MatmulOps, InferenceModeAndAutocast) {
  at::Tensor x = at::randn({8, 16}), w = at::randn({12, 16}), b = at::randn({12});
  {
    c10::InferenceMode inference;
    at::Tensor y = accel_linear(x, w, b);
    EXPECT_LT(worst_relative(y, at::linear(x, w, b), at::linear(x.abs(), w.abs(), b.abs())), product_bound(17));
  }
  {
    // Under CPU autocast the op computes in bf16, as autocast makes aten::linear do.
    at::Tensor y, want;
    {
      accel::detail::AutocastScope autocast(accel::MixedPrecision::Bf16, c10::Device(c10::kCPU));
      y = accel_linear(x, w, b);
      want = at::linear(x, w, b);
    }
    EXPECT_EQ(y.scalar_type(), at::kBFloat16);
    EXPECT_EQ(y.scalar_type(), want.scalar_type());
  }
}

TEST_F(MatmulOps, Bfloat16AutocastGivesAtensValuesAndGradients) {
  expect_same_values_and_gradients(
      {at::randn({96}), at::randn({64, 48}), at::randn({48, 96})},
      [](auto& t) { return accel_addmm(t[0], t[1], t[2]); }, [](auto& t) { return at::addmm(t[0], t[1], t[2]); },
      /*depth: grad_x sums over 96 columns*/ 96, /*bfloat16_autocast=*/true);
  expect_same_values_and_gradients(
      {at::randn({4, 16, 32}), at::randn({24, 32}), at::randn({24})},
      [](auto& t) { return accel_linear(t[0], t[1], t[2]); }, [](auto& t) { return at::linear(t[0], t[1], t[2]); },
      /*depth: grad_w and grad_bias sum over 4 * 16 rows*/ 64, /*bfloat16_autocast=*/true);
  expect_same_values_and_gradients(  // attention's weights @ v, v a permuted view
      {at::randn({2, 4, 16, 16}).softmax(-1), at::randn({2, 16, 3 * 32})},
      [](auto& t) { return accel_matmul(t[0], head(t[1], 2)); },
      [](auto& t) { return at::matmul(t[0], head(t[1], 2)); }, /*depth: 16 positions*/ 16, /*bfloat16_autocast=*/true);
}

// oneDNN's bfloat16 kernels need AVX-512 (AVX512_CORE); where the CPU has it,
// the bfloat16 products and the permuted heads reach them (no reference loop,
// no copy), else onednn::matmul declines and ATen computes.
TEST_F(MatmulOps, OneDnnTakesBfloat16ProductsOnCpusWithAvx512) {
  namespace onednn = accel::detail::onednn;
  at::Tensor x = at::randn({64, 48}).to(at::kBFloat16), w = at::randn({96, 48}).to(at::kBFloat16);
  at::Tensor qkv = at::randn({2, 16, 96}).to(at::kBFloat16);
  auto taken = onednn::matmul(x, w.t(), at::randn({96}));
  auto heads = onednn::matmul(head(qkv, 0), head(qkv, 1).transpose(-1, -2));
  EXPECT_FALSE(onednn::matmul(x, w.t().to(at::kFloat)).has_value()) << "mixed bfloat16 @ float32 is ATen's";
  __builtin_cpu_init();
  const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!avx512_core) GTEST_SKIP() << "no AVX-512 here: oneDNN's bfloat16 products decline";
  ASSERT_TRUE(taken.has_value()) << "x @ w^T + a float32 bias";
  EXPECT_EQ(taken->scalar_type(), at::kBFloat16);
  ASSERT_TRUE(heads.has_value()) << "permuted bfloat16 heads";
  {  // and under autocast libaccel's op records its own backward (ATen's would be AddmmBackward0)
    accel::detail::AutocastScope autocast(accel::MixedPrecision::Bf16, c10::Device(c10::kCPU));
    at::Tensor y = accel_addmm(leaf(at::randn({96})), leaf(at::randn({64, 48})), leaf(at::randn({48, 96})));
    ASSERT_NE(y.grad_fn(), nullptr);
    EXPECT_NE(y.grad_fn()->name().find("accel::"), std::string::npos) << y.grad_fn()->name();
  }
  at::Tensor q = head(qkv, 0).to(at::kDouble), k = head(qkv, 1).to(at::kDouble);
  EXPECT_LT(worst_relative(*heads, at::matmul(q, k.transpose(-1, -2)), at::matmul(q.abs(), k.abs().transpose(-1, -2))),
            bfloat16_product_bound(8) / 2);
}

}  // namespace
