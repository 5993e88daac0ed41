// The load-time rewrite of GPT-2's elementwise tanh-GELU into aten::gelu: it
// replaces exactly the chain with exactly its constants, keeps the values and
// gradients, and leaves a near miss alone.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/error.hpp"
#include "accel/model.hpp"
#include "model/script_rewrites.hpp"
#include "support/within_bound.hpp"

namespace {

// A scripted module whose forward is `body` (x is the input), with one
// submodule doing the same, so both the root and a child method are visited.
torch::jit::Module module_with(const std::string& body) {
  torch::jit::Module child("Child");
  child.define("def forward(self, x):\n    return " + body + "\n");
  torch::jit::Module root("Root");
  root.register_module("act", child);
  root.define("def forward(self, x):\n    return self.act.forward(" + body + ")\n");
  return root;
}

// transformers' NewGELUActivation as the trace records it (0.5*x first, then
// the cubic term scaled by 0.044715, then sqrt(2/pi)).
const std::string kNewGelu = "x * 0.5 * (torch.tanh((x + torch.pow(x, 3.0) * 0.044715) * 0.7978845608028654) + 1.0)";

constexpr double kU = 0x1p-24;  // float32 unit roundoff

using accel_test::within;

// How far two float32 evaluations of the tanh GELU 0.5 x (1 + tanh(z)),
// z = c (x + 0.044715 x^3), may be apart (the traced chain against
// aten::gelu's kernel; either may run another vectorised tanh on another
// CPU). Per side: z carries ~7 u relative (pow, two float32 constants, three
// roundings), which moves tanh by |z| (1 - t^2) 7 u <= 3.2 u (|z| sech^2 z <=
// 0.45); tanh adds 2 u, 1 + t rounds (2 u: it cancels for x < 0, so the error
// is absolute, not relative to y) and the product u |y| <= u |x|:
// |error| <= 0.5 |x| 7.2 u + u |x| < 5 u |x|, so 10 u |x| between two sides.
// The gradient 0.5 (1 + t) + 0.5 x (1 - t^2) z'(x), z'(x) = c (1 + 3 0.044715
// x^2): t's ~5.2 u absolute error moves 1 - t^2 by ~11 u (absolute, it cancels
// as t saturates), multiplied by 0.5 |x| z'(x), plus ~10 u for the rest:
// per side (10 + 6 |x| z'(x)) u. A wrong constant or the erf GELU differs by
// 1e-4 to 1e-3 where these bounds are 1e-6.
at::Tensor gelu_value_bound(const at::Tensor& x) { return 10 * kU * x.to(at::kDouble).abs(); }
at::Tensor gelu_gradient_bound(const at::Tensor& x) {
  const at::Tensor a = x.to(at::kDouble).abs();
  const at::Tensor dz = 0.7978845608028654 * (1 + 3 * 0.044715 * a * a);
  return 2 * kU * (10 + 6 * a * dz);
}

// Two float32 evaluations of tanh_gelu_mlp.pt (proj(G(fc(x))), 4 -> 16 -> 4)
// by other kernels (oneDNN or ATen products, aten::gelu or the chain, fused
// or not): each product over K terms plus the bias is within
// 2 (K + 1) u (|a|.|b| + |bias|) between two sides, the GELU adds its own
// bound and passes on the product's with slope <= 1.13, and proj passes on
// the GELU's through |W2|.
at::Tensor mlp_bound(const torch::jit::Module& mlp, const at::Tensor& x) {
  auto param = [&](const char* layer, const char* name) {
    return mlp.attr(layer).toModule().attr(name).toTensor().detach().to(at::kDouble);
  };
  const at::Tensor w1 = param("fc", "weight"), b1 = param("fc", "bias");
  const at::Tensor w2 = param("proj", "weight"), b2 = param("proj", "bias");
  const at::Tensor x64 = x.to(at::kDouble);
  const at::Tensor h = at::addmm(b1, x64, w1.t());
  const at::Tensor bound_h = 2 * (w1.size(1) + 1) * kU * at::addmm(b1.abs(), x64.abs(), w1.abs().t());
  const at::Tensor g = at::gelu(h);  // float64 (erf GELU: within 1e-3 of the tanh one), as a magnitude
  const at::Tensor bound_g = 1.13 * bound_h + gelu_value_bound(h);
  return at::mm(bound_g, w2.abs().t()) + 2 * (w2.size(1) + 1) * kU * at::addmm(b2.abs(), g.abs(), w2.abs().t());
}

std::size_t count(const torch::jit::Module& module, const char* kind) {
  std::size_t n = 0;
  for (const torch::jit::Module& sub : module.modules()) {
    for (const torch::jit::Method& method : sub.get_methods()) {
      for (const torch::jit::Node* node : method.graph()->nodes())
        n += node->kind().toQualString() == std::string(kind);
    }
  }
  return n;
}

TEST(ScriptRewrites, TanhGeluChainBecomesOneGeluWithTheSameValuesAndGradients) {
  torch::jit::Module original = module_with(kNewGelu);
  torch::jit::Module rewritten = original.clone();
  EXPECT_EQ(accel::detail::fuse_tanh_gelu(rewritten), 2u);  // root and child
  EXPECT_EQ(count(rewritten, "aten::tanh"), 0u);
  EXPECT_EQ(count(rewritten, "aten::gelu"), 2u);
  EXPECT_EQ(count(original, "aten::gelu"), 0u);  // clone() gave the copy its own graphs

  at::manual_seed(0);
  at::Tensor x = at::randn({4, 64}, at::kFloat).mul_(3).set_requires_grad(true);
  at::Tensor y_original = original.forward({x}).toTensor();
  at::Tensor grad_original = torch::autograd::grad({y_original.sum()}, {x})[0];
  at::Tensor y_rewritten = rewritten.forward({x}).toTensor();
  at::Tensor grad_rewritten = torch::autograd::grad({y_rewritten.sum()}, {x})[0];
  // The module is G(G(x)) (the root's chain, then the child's): the outer G
  // also carries the inner one's error, with slope G' <= 1.13 and G'' <= 0.8,
  // so values differ by <= 1.13 Bv(x) + Bv(G(x)), and the gradient
  // G'(G(x)) G'(x) by <= 1.13 (Bg(x) + Bg(G(x)) + 0.8 Bv(x)).
  at::Tensor inner;
  {
    at::NoGradGuard no_grad;
    inner = original.attr("act").toModule().forward({x.detach()}).toTensor();
  }
  EXPECT_TRUE(within(y_rewritten, y_original, 1.13 * gelu_value_bound(x) + gelu_value_bound(inner)));
  EXPECT_TRUE(within(grad_rewritten, grad_original,
                     1.13 * (gelu_gradient_bound(x) + gelu_gradient_bound(inner) + 0.8 * gelu_value_bound(x))));
}

TEST(ScriptRewrites, AChainWithOtherConstantsIsLeftAlone) {
  for (const std::string& near_miss : {
           std::string("x * 0.5 * (torch.tanh((x + torch.pow(x, 3.0) * 0.045) * 0.7978845608028654) + 1.0)"),
           std::string("x * 0.5 * (torch.tanh((x + torch.pow(x, 2.0) * 0.044715) * 0.7978845608028654) + 1.0)"),
           std::string("x * 0.5 * (torch.tanh((x + torch.pow(x, 3.0) * 0.044715) * 0.8) + 1.0)"),
           std::string("x * 0.25 * (torch.tanh((x + torch.pow(x, 3.0) * 0.044715) * 0.7978845608028654) + 1.0)"),
       }) {
    torch::jit::Module module = module_with(near_miss);
    EXPECT_EQ(accel::detail::fuse_tanh_gelu(module), 0u) << near_miss;
    EXPECT_EQ(count(module, "aten::tanh"), 2u) << near_miss;
  }
}

// The plain products of a graph become libaccel's (oneDNN on float32 CPU
// tensors): an addmm with beta = alpha = 1, a linear with and without bias and
// a matmul; an addmm that scales is left alone. Values and gradients stay.
TEST(ScriptRewrites, PlainProductsBecomeLibaccelsWithTheSameValuesAndGradients) {
  torch::jit::Module original("Products");
  original.define(R"(
def forward(self, x, w, b, v):
    y = torch.addmm(b, x, w)
    y = torch.linear(y, v, b) + torch.linear(y, v)
    y = torch.addmm(b, y, w.t(), beta=2.0)
    return torch.matmul(y.view(2, 3, 4), w.view(1, 4, 4).expand(2, 4, 4))
)");
  torch::jit::Module rewritten = original.clone();
  EXPECT_EQ(accel::detail::onednn_ops(rewritten), 4u);
  EXPECT_EQ(count(rewritten, "aten::addmm"), 1u) << "beta = 2 stays ATen's";
  EXPECT_EQ(count(rewritten, "libaccel::addmm"), 1u);
  EXPECT_EQ(count(rewritten, "libaccel::linear"), 2u);
  EXPECT_EQ(count(rewritten, "libaccel::matmul"), 1u);

  at::manual_seed(1);
  std::vector<at::Tensor> inputs{at::randn({6, 4}), at::randn({4, 4}), at::randn({4}), at::randn({4, 4})};
  auto run = [&](torch::jit::Module& module, bool magnitudes) {
    std::vector<at::Tensor> leaves;
    std::vector<c10::IValue> args;
    for (const auto& t : inputs) {
      leaves.push_back((magnitudes ? t.abs().to(at::kDouble) : t.clone()).requires_grad_(true));
      args.emplace_back(leaves.back());
    }
    at::Tensor y = module.forward(args).toTensor();
    auto grads = torch::autograd::grad({y.pow(2).sum()}, leaves);
    grads.insert(grads.begin(), y);
    return grads;
  };
  // The values and gradients are straight-line programs of + and x (constant
  // factors 1 and 2): each computed value is within gamma_n P(|inputs|) of
  // exact, where P(|inputs|) is the same program on the inputs' absolute
  // values (computed here in float64: the original module on |inputs|) and n
  // the longest chain of roundings (4 products of K = 4 with their biases and
  // sums, forward and back, and the square: under 64). Two float32 sides
  // (ATen's kernels and oneDNN's, in any order) are within 2 * 64 u P.
  auto want = run(original, false), got = run(rewritten, false), magnitude = run(original, true);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(within(got[i], want[i], 2 * 64 * kU * magnitude[i])) << i;
  }
}

// A traced module (tanh_gelu_mlp.pt, make_torchscript_fixture.py): the trace
// stores 0.5, 0.044715 and 1 as tensor constants. Loading it through
// Model::from_torchscript rewrites the chain, and the model computes what the
// exported graph computes (ACCEL_TORCHSCRIPT_REWRITES=0 loads it unchanged).
TEST(ScriptRewrites, ATracedModelIsRewrittenAtLoadAndComputesTheSame) {
  const std::string path = std::string(ACCEL_TEST_FILES) + "/model/files/tanh_gelu_mlp.pt";
  torch::jit::Module exported = torch::jit::load(path);
  ASSERT_EQ(count(exported, "aten::tanh"), 1u);
  torch::jit::Module rewritten = torch::jit::load(path);
  EXPECT_EQ(accel::detail::fuse_tanh_gelu(rewritten), 1u);
  EXPECT_EQ(count(rewritten, "aten::tanh"), 0u);

  accel::Model model = accel::Model::from_torchscript(path);
  at::Tensor x = at::linspace(-4, 4, 24).reshape({6, 4});
  at::Tensor expected = exported.forward({x}).toTensor();
  at::Tensor actual = model.forward(x);
  EXPECT_TRUE(within(actual, expected, mlp_bound(exported, x)));
}

// A trace made on the CPU holds "cpu" as a Device constant (arange's device=)
// and the tensor it built as a constant; after retargeting, both follow the
// module to another device (here meta, the CPU suite's stand-in for a GPU;
// tests/big_model/test_cuda_dispatch.cpp and bench/lm_gpu.sh run it on CUDA).
TEST(ScriptRewrites, TraceConstantsFollowTheModulesDevice) {
  const std::string path = std::string(ACCEL_TEST_FILES) + "/model/files/traced_on_cpu.pt";
  torch::jit::Module traced = torch::jit::load(path);
  EXPECT_EQ(accel::detail::retarget_constants(traced, c10::Device(c10::kCPU)), 0u) << "traced there";
  at::Tensor on_cpu = traced.forward({at::ones({2, 3})}).toTensor();
  EXPECT_TRUE(at::allclose(on_cpu, at::tensor({1.5f, 3.5f, 5.5f}).expand({2, 3})));
  // Before its first forward there (the graph executor keeps the plan it made).
  torch::jit::Module moved = torch::jit::load(path);
  const at::Tensor on_meta_input = at::ones({2, 3}, at::TensorOptions().device(c10::kMeta));
  EXPECT_EQ(accel::detail::retarget_constants(moved, c10::Device(c10::kMeta)), 2u);
  at::Tensor on_meta = moved.forward({on_meta_input}).toTensor();
  EXPECT_TRUE(on_meta.is_meta());
  EXPECT_EQ(on_meta.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(accel::detail::retarget_constants(moved, c10::Device(c10::kMeta)), 0u) << "already there";
  // Without it, the trace's "cpu" meets the meta input.
  torch::jit::Module unmoved = torch::jit::load(path);
  EXPECT_ANY_THROW(unmoved.forward({on_meta_input}));
}

// ACCEL_TORCHSCRIPT_OPTIMIZE=1 runs the graph executor's optimisations (off by
// default): the same values, and a bad value is named when the model loads.
TEST(ScriptRewrites, GraphExecutorOptimisationIsAnOptInWithTheSameResults) {
  const std::string path = std::string(ACCEL_TEST_FILES) + "/model/files/tanh_gelu_mlp.pt";
  at::Tensor x = at::linspace(-4, 4, 24).reshape({6, 4});
  accel::Model plain = accel::Model::from_torchscript(path);
  const at::Tensor bound = mlp_bound(torch::jit::load(path), x);  // the executor may fuse: other kernels
  setenv("ACCEL_TORCHSCRIPT_OPTIMIZE", "1", 1);
  accel::Model optimized = accel::Model::from_torchscript(path);
  for (int run = 0; run < 3; ++run) {  // the profiling executor changes plans after its first runs
    EXPECT_TRUE(within(optimized.forward(x), plain.forward(x), bound)) << "run " << run;
  }
  setenv("ACCEL_TORCHSCRIPT_OPTIMIZE", "sometimes", 1);
  try {
    accel::Model::from_torchscript(path);
    ADD_FAILURE() << "a bad ACCEL_TORCHSCRIPT_OPTIMIZE was accepted";
  } catch (const accel::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ACCEL_TORCHSCRIPT_OPTIMIZE=\"sometimes\""), std::string::npos) << e.what();
  }
  unsetenv("ACCEL_TORCHSCRIPT_OPTIMIZE");
}

}  // namespace
