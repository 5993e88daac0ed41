#include "eltwise/masked_softmax_op.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <algorithm>

#include "eltwise/masked_softmax_kernel.hpp"

namespace accel::detail {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool scores_taken(const at::Tensor& scores) {
  return scores.device().is_cpu() && scores.dim() == 4 && scores.numel() > 0 &&
         (scores.scalar_type() == at::kFloat || scores.scalar_type() == at::kBFloat16);
}

// A one-element CPU tensor that needs no gradient: a floating one (the
// divisor or scale), or one of exactly `dtype`.
bool one_constant(const at::Tensor& t, c10::optional<at::ScalarType> dtype) {
  return t.defined() && t.device().is_cpu() && t.numel() == 1 && !t.requires_grad() &&
         (dtype ? t.scalar_type() == *dtype : t.is_floating_point());
}

// A mask the kernel reads in place: a CPU tensor of `dtype` that broadcasts
// to the scores, whole along the last dimension once expanded.
bool readable_mask(const at::Tensor& mask, at::ScalarType dtype, const at::Tensor& scores) {
  if (!mask.defined() || !mask.device().is_cpu() || mask.scalar_type() != dtype || mask.requires_grad() ||
      !at::is_expandable_to(mask.sizes(), scores.sizes())) {
    return false;
  }
  return mask.expand(scores.sizes()).stride(3) == 1 || scores.size(3) == 1;
}

// What forward and backward share: the rows of a [B, H, T, keys] tensor, the
// factor (a one-element tensor is a scalar to ATen's division and product: its
// float value scales the scores, bfloat16 ones too in LibTorch 2.x) in the
// scores' dtype, and the causal mask expanded, not copied (none when undefined).
masked_softmax::Rows layout(at::IntArrayRef shape, at::ScalarType scores_dtype, const at::Tensor& factor, bool multiply,
                            const at::Tensor& causal) {
  masked_softmax::Rows rows;
  rows.length = shape[3];
  rows.rows = shape[0] * shape[1] * shape[2];
  rows.heads = shape[1];
  rows.queries = shape[2];
  rows.bfloat16 = scores_dtype == at::kBFloat16;
  rows.factor = factor.item<float>();
  rows.multiply = multiply;
  if (causal.defined()) {
    const at::Tensor view = causal.expand(shape);
    rows.causal = view.data_ptr<bool>();
    for (int i = 0; i < 3; ++i) rows.causal_stride[i] = view.stride(i);
  }
  return rows;
}

// The forward's view: the layout, the scores (contiguous), the mask value and
// the additive mask expanded (none when undefined).
masked_softmax::Rows describe(const at::Tensor& scores, const at::Tensor& factor, bool multiply,
                              const at::Tensor& causal, float mask_value, const at::Tensor& additive) {
  masked_softmax::Rows rows = layout(scores.sizes(), scores.scalar_type(), factor, multiply, causal);
  rows.scores = scores.data_ptr();
  rows.mask_value = mask_value;
  if (additive.defined()) {
    const at::Tensor view = additive.expand(scores.sizes());
    rows.additive = view.data_ptr<float>();
    for (int i = 0; i < 3; ++i) rows.additive_stride[i] = view.stride(i);
  }
  return rows;
}

// Rows per task: about 16 K elements, so that a thread's share outweighs waking it.
int64_t grain(const masked_softmax::Rows& rows) { return std::max<int64_t>(1, 16384 / rows.length); }

// Both forms. The masks travel as optionals: autograd reads a device from
// every tensor argument, which an undefined one has not (LibTorch 1.13).
struct AttentionSoftmax : torch::autograd::Function<AttentionSoftmax> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& scores, const at::Tensor& factor, bool multiply,
                            const c10::optional<at::Tensor>& causal, double mask_value,
                            const c10::optional<at::Tensor>& additive) {
    const at::Tensor contiguous = scores.contiguous();
    const at::Tensor causal_mask = causal ? *causal : at::Tensor();
    const masked_softmax::Rows rows = describe(contiguous, factor, multiply, causal_mask,
                                               static_cast<float>(mask_value), additive ? *additive : at::Tensor());
    at::Tensor y = at::empty(scores.sizes(), scores.options().dtype(at::kFloat));
    float* out = y.data_ptr<float>();
    at::parallel_for(0, rows.rows, grain(rows),
                     [&](int64_t begin, int64_t end) { masked_softmax::forward(rows, out, begin, end); });
    ctx->save_for_backward({y, causal_mask, factor});
    ctx->saved_data["dtype"] = static_cast<int64_t>(scores.scalar_type());
    ctx->saved_data["multiply"] = multiply;
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &y = saved[0], &causal = saved[1], &factor = saved[2];
    const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    const bool multiply = ctx->saved_data["multiply"].toBool();
    const at::Tensor dy = grads[0].to(at::kFloat).contiguous();
    at::Tensor grad;
    if (at::GradMode::is_enabled()) {  // a second derivative: ATen's differentiable ops
      at::Tensor d = at::_softmax_backward_data(dy, y, -1, at::kFloat);
      if (causal.defined()) d = at::where(causal, d, at::zeros({}, d.options()));
      grad = multiply ? d.to(dtype) * factor : d.to(dtype) / factor;
    } else {
      grad = at::empty(y.sizes(), y.options().dtype(dtype));
      const masked_softmax::Rows rows = layout(y.sizes(), dtype, factor, multiply, causal);
      const float *dy_data = dy.data_ptr<float>(), *y_data = y.data_ptr<float>();
      void* out = grad.data_ptr();
      at::parallel_for(0, rows.rows, grain(rows), [&](int64_t begin, int64_t end) {
        masked_softmax::backward(rows, dy_data, y_data, out, begin, end);
      });
    }
    return {grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor masked_softmax_chain(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                                const at::Tensor& mask_value, const c10::optional<at::Tensor>& additive) {
  at::Tensor logits = at::where(causal, (scores / divisor).to(at::kFloat), mask_value);
  if (additive && additive->defined()) logits = logits + *additive;
  return at::softmax(logits, -1);
}

at::Tensor scaled_softmax_chain(const at::Tensor& scores, const at::Tensor& scale, const at::Tensor& additive) {
  return at::softmax(scores * scale + additive, -1, at::kFloat);
}

at::Tensor accel_masked_softmax(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                                const at::Tensor& mask_value, const c10::optional<at::Tensor>& additive) {
  const bool with_additive = additive && additive->defined();
  if (!scores_taken(scores) || !one_constant(divisor, c10::nullopt) || !one_constant(mask_value, at::kFloat) ||
      !readable_mask(causal, at::kBool, scores) || (with_additive && !readable_mask(*additive, at::kFloat, scores))) {
    return masked_softmax_chain(scores, divisor, causal, mask_value, additive);
  }
  return AttentionSoftmax::apply(scores, divisor, false, causal, mask_value.item<double>(),
                                 with_additive ? additive : c10::nullopt);
}

at::Tensor accel_scaled_softmax(const at::Tensor& scores, const at::Tensor& scale, const at::Tensor& additive) {
  if (!scores_taken(scores) || !one_constant(scale, c10::nullopt) || !readable_mask(additive, at::kFloat, scores)) {
    return scaled_softmax_chain(scores, scale, additive);
  }
  return AttentionSoftmax::apply(scores, scale, true, c10::nullopt, 0.0, additive);
}

TORCH_LIBRARY_FRAGMENT(libaccel, m) {
  m.def("masked_softmax(Tensor scores, Tensor divisor, Tensor causal, Tensor mask_value, Tensor? additive) -> Tensor",
        &accel_masked_softmax);
  m.def("scaled_softmax(Tensor scores, Tensor scale, Tensor additive) -> Tensor", &accel_scaled_softmax);
}

}  // namespace accel::detail
