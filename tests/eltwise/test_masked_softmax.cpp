// libaccel::masked_softmax and scaled_softmax against the ATen chains they
// replace, GPT-2's softmax(where(causal, (scores / d).to(float32), mask_value)
// + mask, -1) and Llama's softmax(scores * scale + mask, -1, dtype=float32):
// probabilities and gradients within bounds derived from the arithmetic, in
// float32 and bfloat16, with and without the additive mask; what the kernel
// does not take is the chain exactly; a second derivative still works; the
// load-time rewrite finds the chain in a graph and leaves near misses alone.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/api/module.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "eltwise/masked_softmax_op.hpp"
#include "model/script_rewrites.hpp"
#include "support/within_bound.hpp"

namespace {

using accel::detail::accel_masked_softmax;
using accel::detail::masked_softmax_chain;

constexpr double kU = 0x1p-24;   // float32 unit roundoff
constexpr int64_t kLength = 37;  // keys: two whole vectors of 16 and a tail of 5

// GPT-2's inputs: 2 sequences, 3 heads, the last 5 of 37 positions as queries;
// the causal mask a slice of a [1, 1, 40, 40] lower triangle (as transformers
// slices its bias buffer), the second sequence padded in its last 7 keys by
// the additive mask (float32's lowest, as transformers writes it).
struct Inputs {
  at::Tensor scores, divisor, causal, mask_value, additive;
};

Inputs gpt2_inputs(at::ScalarType dtype, double divisor) {
  at::manual_seed(3);
  Inputs in;
  in.scores = (at::randn({2, 3, 5, kLength}) * 8).to(dtype).requires_grad_(true);
  in.divisor = at::full({}, divisor);
  in.causal =
      at::ones({40, 40}, at::kBool).tril().view({1, 1, 40, 40}).slice(2, kLength - 5, kLength).slice(3, 0, kLength);
  in.mask_value = at::full({}, std::numeric_limits<float>::lowest());
  in.additive = at::zeros({2, 1, 1, kLength});
  in.additive[1].narrow(-1, kLength - 7, 7).fill_(std::numeric_limits<float>::lowest());
  return in;
}

using accel_test::within;

// Two float32 softmaxes of the same float32 logits (both sides compute them
// alike, the same operations in the same order, so they are equal): each
// subtracts the same maximum (equal again), then takes exp within 2 u
// relative (ATen's Sleef exp: 1 ulp; libaccel's: Cephes' expansion, measured
// below against float64), sums n terms in its own order ((n - 1) u of the
// sum), takes 1 / sum and multiplies (u each). Per side y (n + 3) u, between
// two sides 2 (n + 3) u relative to y. An exp that underflows to a subnormal
// on one side and to 0 on the other adds at most float32's smallest normal
// over the sum (>= 1): 1.2e-38 absolute.
double softmax_relative_bound(int64_t n) { return 2.0 * static_cast<double>(n + 3) * kU; }
at::Tensor probability_bound(const at::Tensor& y, int64_t n) {
  return softmax_relative_bound(n) * y.to(at::kDouble) + 1.2e-38;
}

// The scores' gradient c (y (dy - D)) / d, D = sum_k dy_k y_k, between two
// sides whose y differ by beta y (above): y (dy - D) moves by beta y |dy - D|
// through y, by y |dD| through D, where |dD| <= beta P + 2 n u P (P = sum
// |dy_k| y_k: y's error, and each side's summation), and by 4 u y (|dy| + |D|)
// from rounding the difference and the product on both sides; the division
// adds u of the result per side.
at::Tensor gradient_bound(const at::Tensor& y, const at::Tensor& dy, const at::Tensor& causal, double divisor,
                          const at::Tensor& reference) {
  const double beta = softmax_relative_bound(y.size(-1));
  const at::Tensor yd = y.to(at::kDouble), g = dy.to(at::kDouble);
  const at::Tensor dot = (g * yd).sum(-1, true), p = (g.abs() * yd).sum(-1, true);
  const at::Tensor bound = yd * ((beta + 4 * kU) * (g.abs() + dot.abs()) + (beta + 2 * y.size(-1) * kU) * p) / divisor;
  return bound * causal.to(at::kDouble) + 2 * kU * reference.to(at::kDouble).abs() + 1e-37;
}

TEST(MaskedSoftmax, Float32ProbabilitiesAndGradientsMatchTheChain) {
  for (bool with_additive : {true, false}) {
    SCOPED_TRACE(with_additive ? "with the padding mask" : "causal only");
    const Inputs in = gpt2_inputs(at::kFloat, std::sqrt(static_cast<double>(kLength)));
    const c10::optional<at::Tensor> additive = with_additive ? c10::optional<at::Tensor>(in.additive) : c10::nullopt;
    const at::Tensor want = masked_softmax_chain(in.scores, in.divisor, in.causal, in.mask_value, additive);
    const at::Tensor got = accel_masked_softmax(in.scores, in.divisor, in.causal, in.mask_value, additive);
    EXPECT_EQ(got.scalar_type(), at::kFloat);
    EXPECT_TRUE(within(got, want, probability_bound(want, kLength)));
    // Masked keys get exactly 0, as the chain gives them.
    const at::Tensor masked = got.masked_select(~in.causal.expand_as(got));
    EXPECT_EQ(masked.numel(), 6 * (4 + 3 + 2 + 1));
    EXPECT_TRUE(at::equal(masked, at::zeros_like(masked)));

    const at::Tensor dy = at::randn(got.sizes());
    const at::Tensor grad_want = torch::autograd::grad({want}, {in.scores}, {dy})[0];
    const at::Tensor grad_got = torch::autograd::grad({got}, {in.scores}, {dy})[0];
    EXPECT_EQ(grad_got.scalar_type(), at::kFloat);
    EXPECT_TRUE(
        within(grad_got, grad_want,
               gradient_bound(want.detach(), dy, in.causal.expand_as(dy), in.divisor.item<double>(), grad_want)));
  }
}

// The exp inside: against float64's softmax of the same float32 logits, each
// probability within (2 + (n - 1) + 2) u of the exact value (its own exp within 2 u).
TEST(MaskedSoftmax, ProbabilitiesAreWithinTheirRoundingOfTheExactSoftmax) {
  at::manual_seed(4);
  const at::Tensor scores = at::rand({4, 2, 3, kLength}) * 170 - 150;  // logits over exp's whole float32 range
  const at::Tensor causal = at::ones({1, 1, 3, kLength}, at::kBool);
  const at::Tensor one = at::ones({}), lowest = at::full({}, std::numeric_limits<float>::lowest());
  const at::Tensor got = accel_masked_softmax(scores, one, causal, lowest, c10::nullopt);
  const at::Tensor exact = at::softmax(scores.to(at::kDouble), -1);
  EXPECT_TRUE(within(got, exact, (kLength + 3) * kU * exact + 1.2e-38));
}

// bfloat16 scores (under autocast the attention's product arrives in
// bfloat16): the quotient rounds to bfloat16 before the cast to float32, in
// both, so the logits are equal and the probabilities keep the float32 bound.
// The gradient rounds to bfloat16 twice (the cast's backward, then the
// division's): where the float32 values before a rounding differ, it may
// land one bfloat16 ulp (2^-7 relative) apart, twice.
TEST(MaskedSoftmax, Bfloat16ScoresKeepTheChainsRoundings) {
  const Inputs in = gpt2_inputs(at::kBFloat16, 8.0);  // GPT-2's sqrt(64)
  const at::Tensor want = masked_softmax_chain(in.scores, in.divisor, in.causal, in.mask_value, in.additive);
  const at::Tensor got = accel_masked_softmax(in.scores, in.divisor, in.causal, in.mask_value, in.additive);
  EXPECT_EQ(got.scalar_type(), at::kFloat);
  EXPECT_TRUE(within(got, want, probability_bound(want, kLength)));

  const at::Tensor dy = at::randn(got.sizes());
  const at::Tensor grad_want = torch::autograd::grad({want}, {in.scores}, {dy})[0];
  const at::Tensor grad_got = torch::autograd::grad({got}, {in.scores}, {dy})[0];
  EXPECT_EQ(grad_got.scalar_type(), at::kBFloat16);
  const at::Tensor bound = gradient_bound(want.detach(), dy, in.causal.expand_as(dy), 8.0, grad_want) +
                           0x1p-6 * grad_want.to(at::kDouble).abs();
  EXPECT_TRUE(within(grad_got, grad_want, bound));
}

// Llama's form, softmax(scores * scale + mask, -1, dtype=float32), its mask
// one float32 tensor [b, 1, t, keys] holding both the causal and the padding
// part (float32's lowest where masked, as transformers builds it): the same
// bounds, with the gradient multiplied by the scale where GPT-2's is divided.
// In bfloat16 the product rounds to bfloat16 before the mask is added, in both.
TEST(MaskedSoftmax, ScaledFormMatchesLlamasChainInFloat32AndBfloat16) {
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const Inputs in = gpt2_inputs(dtype, 8.0);
    const double factor = dtype == at::kFloat ? 1 / std::sqrt(37.0) : 0.125;  // bfloat16: Llama's 64^-0.5
    const at::Tensor scale = at::full({}, factor);
    const at::Tensor mask = at::where(in.causal, at::zeros({}), in.mask_value).expand({2, 1, 5, kLength}) +
                            in.additive.where(in.additive == 0, in.mask_value);
    const at::Tensor want = accel::detail::scaled_softmax_chain(in.scores, scale, mask);
    const at::Tensor got = accel::detail::accel_scaled_softmax(in.scores, scale, mask);
    EXPECT_EQ(got.scalar_type(), at::kFloat);
    EXPECT_TRUE(within(got, want, probability_bound(want, kLength)));
    const at::Tensor dy = at::randn(got.sizes());
    const at::Tensor grad_want = torch::autograd::grad({want}, {in.scores}, {dy})[0];
    const at::Tensor grad_got = torch::autograd::grad({got}, {in.scores}, {dy})[0];
    EXPECT_EQ(grad_got.scalar_type(), dtype);
    at::Tensor bound = gradient_bound(want.detach(), dy, at::ones(dy.sizes(), at::kBool), 1 / factor, grad_want);
    if (dtype == at::kBFloat16) bound = bound + 0x1p-6 * grad_want.to(at::kDouble).abs();
    EXPECT_TRUE(within(grad_got, grad_want, bound));
  }
  // A scale that is not one element is the chain exactly.
  const Inputs in = gpt2_inputs(at::kFloat, 8.0);
  const at::Tensor per_key = at::rand({kLength});
  EXPECT_TRUE(at::equal(accel::detail::accel_scaled_softmax(in.scores, per_key, in.additive),
                        accel::detail::scaled_softmax_chain(in.scores, per_key, in.additive)));
}

// What the kernel does not take runs the chain itself: float64 scores, a mask
// that requires grad (which then gets its gradient), a causal mask whose keys
// are not contiguous.
TEST(MaskedSoftmax, WhatTheKernelDoesNotTakeIsTheChainExactly) {
  Inputs in = gpt2_inputs(at::kDouble, 8.0);
  EXPECT_TRUE(at::equal(accel_masked_softmax(in.scores, in.divisor, in.causal, in.mask_value, in.additive),
                        masked_softmax_chain(in.scores, in.divisor, in.causal, in.mask_value, in.additive)));

  in = gpt2_inputs(at::kFloat, 8.0);
  const at::Tensor learned = in.additive.clone().requires_grad_(true);
  const at::Tensor got = accel_masked_softmax(in.scores, in.divisor, in.causal, in.mask_value, learned);
  EXPECT_TRUE(at::equal(got, masked_softmax_chain(in.scores, in.divisor, in.causal, in.mask_value, learned)));
  EXPECT_TRUE(torch::autograd::grad({got.sum()}, {learned})[0].defined());

  const at::Tensor strided = in.causal.transpose(2, 3).contiguous().transpose(2, 3);
  ASSERT_NE(strided.stride(3), 1);
  EXPECT_TRUE(at::equal(accel_masked_softmax(in.scores, in.divisor, strided, in.mask_value, in.additive),
                        masked_softmax_chain(in.scores, in.divisor, strided, in.mask_value, in.additive)));
}

// create_graph: the backward is then ATen's differentiable ops, so a second
// derivative exists and is the chain's to float32 rounding (loosely: 1e-4 of
// the largest entry, where a missing term would be of the size of the entries).
TEST(MaskedSoftmax, ASecondDerivativeIsTheChains) {
  const Inputs in = gpt2_inputs(at::kFloat, 8.0);
  const at::Tensor dy = at::randn({2, 3, 5, kLength});
  auto second = [&](bool fused) {
    const at::Tensor y = fused ? accel_masked_softmax(in.scores, in.divisor, in.causal, in.mask_value, in.additive)
                               : masked_softmax_chain(in.scores, in.divisor, in.causal, in.mask_value, in.additive);
    const at::Tensor g = torch::autograd::grad({y}, {in.scores}, {dy}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    return torch::autograd::grad({(g * g).sum()}, {in.scores})[0];
  };
  const at::Tensor want = second(false), got = second(true);
  EXPECT_TRUE(within(got, want, at::full(want.sizes(), 1e-4 * want.abs().max().item<double>(), at::kDouble)));
}

std::size_t count(const torch::jit::Module& module, const char* kind) {
  std::size_t n = 0;
  const c10::Symbol symbol = c10::Symbol::fromQualString(kind);
  for (const torch::jit::Method& method : module.get_methods()) {
    for (const torch::jit::Node* node : method.graph()->nodes()) n += node->kind() == symbol ? 1 : 0;
  }
  return n;
}

torch::jit::Module scripted(const std::string& expression) {
  torch::jit::Module module("Attention");
  module.define(
      "def forward(self, s, causal, am):\n"
      "    d = torch.full([], 8.0)\n"
      "    mv = torch.full([], -3.4028234663852886e+38)\n"
      "    return " +
      expression + "\n");
  return module;
}

// The chain as a graph holds it (the trace records the same ops), with and
// without the padding mask, becomes the operator and computes the same; a
// softmax over another dimension, a cast to float64 or a scaled mask stay.
TEST(MaskedSoftmax, TheRewriteFindsTheChainAndLeavesNearMissesAlone) {
  const Inputs in = gpt2_inputs(at::kFloat, 8.0);
  const at::Tensor scores = in.scores.detach();
  for (const std::string& chain : {std::string("torch.softmax(torch.where(causal, (s / d).float(), mv) + am, -1)"),
                                   std::string("torch.softmax(torch.where(causal, (s / d).float(), mv), -1)")}) {
    torch::jit::Module original = scripted(chain);
    torch::jit::Module module = original.clone();
    EXPECT_EQ(accel::detail::fuse_attention_softmax(module), 1u) << chain;
    EXPECT_EQ(count(module, "libaccel::masked_softmax"), 1u);
    EXPECT_EQ(count(module, "aten::softmax"), 0u);
    const at::Tensor want = original.forward({scores, in.causal, in.additive}).toTensor();
    const at::Tensor got = module.forward({scores, in.causal, in.additive}).toTensor();
    EXPECT_TRUE(within(got, want, probability_bound(want, kLength)));
  }
  // Llama's form, with its scale a tensor as the trace records it (dtype 6: float32).
  torch::jit::Module original = scripted("torch.softmax(s * torch.full([], 0.125) + am, -1, dtype=6)");
  torch::jit::Module module = original.clone();
  EXPECT_EQ(accel::detail::fuse_attention_softmax(module), 1u);
  EXPECT_EQ(count(module, "libaccel::scaled_softmax"), 1u);
  const at::Tensor want = original.forward({scores, in.causal, in.additive}).toTensor();
  EXPECT_TRUE(
      within(module.forward({scores, in.causal, in.additive}).toTensor(), want, probability_bound(want, kLength)));
  for (const std::string& near_miss :
       {std::string("torch.softmax(s * 0.125 + am, -1, dtype=6)"),         // a Scalar scale
        std::string("torch.softmax(s * torch.full([], 0.125) + am, -1)"),  // no float32 softmax
        std::string("torch.softmax(torch.where(causal, (s / d).float(), mv) + am, 2)"),
        std::string("torch.softmax(torch.where(causal, (s / d).double(), mv) + am, -1)"),
        std::string("torch.softmax(torch.where(causal, (s / d).float(), mv).add(am, alpha=2), -1)")}) {
    torch::jit::Module module = scripted(near_miss);
    EXPECT_EQ(accel::detail::fuse_attention_softmax(module), 0u) << near_miss;
    EXPECT_EQ(count(module, "aten::softmax"), 1u) << near_miss;
  }
}

}  // namespace
