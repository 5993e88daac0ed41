#include "matmul/matmul_ops.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <initializer_list>
#include <vector>

#include "matmul/onednn_matmul.hpp"
#include "precision/autocast.hpp"

namespace accel::detail {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A backward's a @ b: through oneDNN, else ATen. When the backward itself is
// recorded (create_graph), ATen's op, so the gradient is differentiable again.
at::Tensor product(const at::Tensor& a, const at::Tensor& b) {
  if (!at::GradMode::is_enabled()) {
    if (auto out = onednn::matmul(a, b)) return *out;
  }
  return at::matmul(a, b);
}

// How the operands reach the oneDNN path, if they do.
enum class Path {
  Aten,            // ATen's op, with its own autograd and autocast
  Onednn,          // float32 operands as they are
  OnednnAutocast,  // CPU autocast to bfloat16 is on: the operands cast as autocast casts them, then oneDNN
};

Path path_for(std::initializer_list<const at::Tensor*> tensors) {
  if (!onednn::available()) return Path::Aten;
  const bool autocast = autocast_enabled(c10::kCPU);
  if (autocast && autocast_dtype(c10::kCPU) != at::kBFloat16) return Path::Aten;
  for (const at::Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (!t->device().is_cpu()) return Path::Aten;
    const auto type = t->scalar_type();
    if (!(type == at::kFloat || (autocast && type == at::kBFloat16))) return Path::Aten;
  }
  return autocast ? Path::OnednnAutocast : Path::Onednn;
}

// ATen's autocast lowers a product's floating operands to bfloat16 before the
// op runs; the oneDNN path does the same cast (autocast's own, with its cache
// for weights), so the product it computes and the graph it records are ATen's
// (the cast's backward returns float32 gradients to float32 weights). What it
// saves is ATen's copies around the bfloat16 product: the bias broadcast into
// the output before the GEMM, and permuted attention heads made contiguous.
at::Tensor operand(const at::Tensor& t, Path path) {
  return path == Path::OnednnAutocast && t.defined() ? autocast_operand(t, c10::kCPU) : t;
}

struct Addmm : torch::autograd::Function<Addmm> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& bias, const at::Tensor& mat1,
                            const at::Tensor& mat2) {
    auto out = onednn::matmul(mat1, mat2, bias);
    ctx->save_for_backward({mat1, mat2});
    return out ? *out : at::addmm(bias, mat1, mat2);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = grads[0];
    at::Tensor grad_bias, grad_mat1, grad_mat2;
    if (ctx->needs_input_grad(0)) grad_bias = g.sum(0);
    if (ctx->needs_input_grad(1)) grad_mat1 = product(g, saved[1].t());
    if (ctx->needs_input_grad(2)) grad_mat2 = product(saved[0].t(), g);
    return {grad_bias, grad_mat1, grad_mat2};
  }
};

// input [..., K] is used as [M, K]; weight is [N, K]. LibTorch 1.13's Function
// takes no undefined input, hence one Function with a bias and one without.
at::Tensor linear_forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                          const at::Tensor& bias) {
  const at::Tensor rows = input.reshape({-1, input.size(-1)});
  auto out = onednn::matmul(rows, weight.t(), bias);
  ctx->save_for_backward({rows, weight});
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end());
  sizes.back() = weight.size(0);
  return (out ? *out : at::linear(rows, weight, bias)).view(sizes);
}

variable_list linear_backward(AutogradContext* ctx, const variable_list& grads, bool has_bias) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& rows = saved[0];
  const at::Tensor& weight = saved[1];
  const at::Tensor g = grads[0].reshape({-1, weight.size(0)});
  variable_list result(has_bias ? 3 : 2);
  if (ctx->needs_input_grad(0)) {
    std::vector<int64_t> sizes(grads[0].sizes().begin(), grads[0].sizes().end());
    sizes.back() = weight.size(1);
    result[0] = product(g, weight).view(sizes);
  }
  if (ctx->needs_input_grad(1)) result[1] = product(g.t(), rows);
  if (has_bias && ctx->needs_input_grad(2)) result[2] = g.sum(0);
  return result;
}

struct Linear : torch::autograd::Function<Linear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    return linear_forward(ctx, input, weight, bias);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) { return linear_backward(ctx, grads, true); }
};

struct LinearNoBias : torch::autograd::Function<LinearNoBias> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight) {
    return linear_forward(ctx, input, weight, at::Tensor());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return linear_backward(ctx, grads, false);
  }
};

struct Matmul : torch::autograd::Function<Matmul> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    auto out = onednn::matmul(a, b);
    ctx->save_for_backward({a, b});
    return out ? *out : at::matmul(a, b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = grads[0];
    at::Tensor grad_a, grad_b;
    if (ctx->needs_input_grad(0)) grad_a = product(g, saved[1].transpose(-1, -2));
    if (ctx->needs_input_grad(1)) grad_b = product(saved[0].transpose(-1, -2), g);
    return {grad_a, grad_b};
  }
};

bool plain_2d(const at::Tensor& t) { return t.dim() == 2; }

}  // namespace

at::Tensor accel_addmm(const at::Tensor& bias, const at::Tensor& mat1, const at::Tensor& mat2) {
  const Path path = path_for({&bias, &mat1, &mat2});
  const bool fits = path != Path::Aten && plain_2d(mat1) && plain_2d(mat2) && bias.dim() == 1 &&
                    mat1.size(1) == mat2.size(0) && bias.size(0) == mat2.size(1);
  if (!fits) return at::addmm(bias, mat1, mat2);
  return Addmm::apply(operand(bias, path), operand(mat1, path), operand(mat2, path));
}

at::Tensor accel_linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  const Path path = path_for({&input, &weight, &bias});
  const bool fits = path != Path::Aten && input.dim() >= 1 && plain_2d(weight) && input.size(-1) == weight.size(1) &&
                    input.numel() > 0 && (!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)));
  if (!fits) return at::linear(input, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
  if (!bias.defined()) return LinearNoBias::apply(operand(input, path), operand(weight, path));
  return Linear::apply(operand(input, path), operand(weight, path), operand(bias, path));
}

at::Tensor accel_matmul(const at::Tensor& a, const at::Tensor& b) {
  const int64_t n = a.dim();
  const Path path = path_for({&a, &b});
  const bool fits = path != Path::Aten && n >= 2 && b.dim() == n && a.size(n - 1) == b.size(n - 2) &&
                    a.sizes().slice(0, n - 2) == b.sizes().slice(0, n - 2);
  if (!fits) return at::matmul(a, b);
  return Matmul::apply(operand(a, path), operand(b, path));
}

namespace {

at::Tensor linear_op(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  return accel_linear(input, weight, bias.has_value() ? *bias : at::Tensor());
}

}  // namespace

// The dispatcher runs these for every backend and builds no autograd of its
// own around them (CompositeImplicitAutograd): the Functions above, or the
// ATen ops they fall back to, record the graph.
TORCH_LIBRARY(libaccel, m) {
  m.def("addmm(Tensor bias, Tensor mat1, Tensor mat2) -> Tensor", &accel_addmm);
  m.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", &linear_op);
  m.def("matmul(Tensor self, Tensor other) -> Tensor", &accel_matmul);
}

}  // namespace accel::detail
