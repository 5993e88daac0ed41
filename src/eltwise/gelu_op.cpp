#include "eltwise/gelu_op.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "eltwise/onednn_gelu.hpp"

namespace accel::detail {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct Gelu : torch::autograd::Function<Gelu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const std::string& approximate) {
    ctx->save_for_backward({x});
    ctx->saved_data["approximate"] = approximate;
    std::optional<at::Tensor> out = onednn::gelu(x, approximate);
    return out ? *out : at::gelu(x, approximate);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    const std::string approximate = ctx->saved_data["approximate"].toStringRef();
    std::optional<at::Tensor> grad;
    if (!at::GradMode::is_enabled()) grad = onednn::gelu_backward(grads[0], x, approximate);
    return {grad ? *grad : at::gelu_backward(grads[0], x, approximate), at::Tensor()};
  }
};

}  // namespace

at::Tensor accel_gelu(const at::Tensor& x, const std::string& approximate) {
  // A tensor oneDNN does not take (and a bad `approximate`, which aten::gelu
  // rejects) runs ATen's op with ATen's autograd.
  if (!onednn::gelu_supported(x, approximate)) return at::gelu(x, approximate);
  return Gelu::apply(x, approximate);
}

TORCH_LIBRARY_FRAGMENT(libaccel, m) { m.def("gelu(Tensor self, str approximate=\"none\") -> Tensor", &accel_gelu); }

}  // namespace accel::detail
