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

bool one_constant(const at::Tensor& t, at::ScalarType dtype) {
  return t.defined() && t.device().is_cpu() && t.numel() == 1 && t.scalar_type() == dtype && !t.requires_grad();
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

bool kernel_takes(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                  const at::Tensor& mask_value, const at::Tensor& additive) {
  const bool scores_ok = scores.device().is_cpu() && scores.dim() == 4 && scores.numel() > 0 &&
                         (scores.scalar_type() == at::kFloat || scores.scalar_type() == at::kBFloat16);
  const bool divisor_ok = divisor.defined() && divisor.device().is_cpu() && divisor.numel() == 1 &&
                          divisor.is_floating_point() && !divisor.requires_grad();
  return scores_ok && divisor_ok && one_constant(mask_value, at::kFloat) && readable_mask(causal, at::kBool, scores) &&
         (!additive.defined() || readable_mask(additive, at::kFloat, scores));
}

// The kernel's view of the tensors (contiguous scores; masks expanded, not copied).
masked_softmax::Rows describe(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                              const at::Tensor& mask_value, const at::Tensor& additive) {
  masked_softmax::Rows rows;
  rows.length = scores.size(3);
  rows.rows = scores.numel() / rows.length;
  rows.heads = scores.size(1);
  rows.queries = scores.size(2);
  rows.scores = scores.data_ptr();
  rows.bfloat16 = scores.scalar_type() == at::kBFloat16;
  // A one-element divisor is a scalar to ATen's division: its float value
  // divides the scores (LibTorch 2.x's kernel for bfloat16 scores too).
  rows.divisor = divisor.item<float>();
  rows.mask_value = mask_value.item<float>();
  const at::Tensor causal_view = causal.expand(scores.sizes());
  rows.causal = causal_view.data_ptr<bool>();
  for (int i = 0; i < 3; ++i) rows.causal_stride[i] = causal_view.stride(i);
  if (additive.defined()) {
    const at::Tensor additive_view = additive.expand(scores.sizes());
    rows.additive = additive_view.data_ptr<float>();
    for (int i = 0; i < 3; ++i) rows.additive_stride[i] = additive_view.stride(i);
  }
  return rows;
}

// Rows per task: about 16 K elements, so that a thread's share outweighs waking it.
int64_t grain(const masked_softmax::Rows& rows) { return std::max<int64_t>(1, 16384 / rows.length); }

struct MaskedSoftmax : torch::autograd::Function<MaskedSoftmax> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& scores, const at::Tensor& divisor,
                            const at::Tensor& causal, const at::Tensor& mask_value,
                            const c10::optional<at::Tensor>& additive) {
    // The additive mask travels as an optional: autograd reads a device from
    // every tensor argument, which an undefined one has not (LibTorch 1.13).
    const at::Tensor contiguous = scores.contiguous();
    const masked_softmax::Rows rows =
        describe(contiguous, divisor, causal, mask_value, additive ? *additive : at::Tensor());
    at::Tensor y = at::empty(scores.sizes(), scores.options().dtype(at::kFloat));
    float* out = y.data_ptr<float>();
    at::parallel_for(0, rows.rows, grain(rows),
                     [&](int64_t begin, int64_t end) { masked_softmax::forward(rows, out, begin, end); });
    ctx->save_for_backward({y, causal, divisor});
    ctx->saved_data["dtype"] = static_cast<int64_t>(scores.scalar_type());
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &y = saved[0], &causal = saved[1], &divisor = saved[2];
    const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    const at::Tensor dy = grads[0].to(at::kFloat).contiguous();
    at::Tensor grad;
    if (at::GradMode::is_enabled()) {  // a second derivative: ATen's differentiable ops
      const at::Tensor d = at::_softmax_backward_data(dy, y, -1, at::kFloat);
      grad = at::where(causal, d, at::zeros({}, d.options())).to(dtype) / divisor;
    } else {
      grad = at::empty(y.sizes(), y.options().dtype(dtype));
      masked_softmax::Rows rows = describe(y, divisor, causal, at::zeros({}, y.options()), at::Tensor());
      rows.bfloat16 = dtype == at::kBFloat16;
      const float *dy_data = dy.data_ptr<float>(), *y_data = y.data_ptr<float>();
      void* out = grad.data_ptr();
      at::parallel_for(0, rows.rows, grain(rows), [&](int64_t begin, int64_t end) {
        masked_softmax::backward(rows, dy_data, y_data, out, begin, end);
      });
    }
    return {grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor masked_softmax_chain(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                                const at::Tensor& mask_value, const c10::optional<at::Tensor>& additive) {
  at::Tensor logits = at::where(causal, (scores / divisor).to(at::kFloat), mask_value);
  if (additive && additive->defined()) logits = logits + *additive;
  return at::softmax(logits, -1);
}

at::Tensor accel_masked_softmax(const at::Tensor& scores, const at::Tensor& divisor, const at::Tensor& causal,
                                const at::Tensor& mask_value, const c10::optional<at::Tensor>& additive) {
  const at::Tensor additive_tensor = additive ? *additive : at::Tensor();
  if (!kernel_takes(scores, divisor, causal, mask_value, additive_tensor)) {
    return masked_softmax_chain(scores, divisor, causal, mask_value, additive);
  }
  return MaskedSoftmax::apply(scores, divisor, causal, mask_value, additive_tensor.defined() ? additive : c10::nullopt);
}

TORCH_LIBRARY_FRAGMENT(libaccel, m) {
  m.def("masked_softmax(Tensor scores, Tensor divisor, Tensor causal, Tensor mask_value, Tensor? additive) -> Tensor",
        &accel_masked_softmax);
}

}  // namespace accel::detail
