#include "eltwise/onednn_gelu.hpp"

#include <ATen/ATen.h>

#if defined(ACCEL_WITH_ONEDNN)
#include "matmul/onednn_runtime.hpp"
#endif

namespace accel::detail::onednn {

#if defined(ACCEL_WITH_ONEDNN)

namespace {

bool fits(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16) &&
         t.layout() == at::kStrided && t.numel() > 0;
}

std::optional<dnnl::algorithm> algorithm_of(const std::string& approximate) {
  if (approximate == "tanh") return dnnl::algorithm::eltwise_gelu_tanh;
  if (approximate == "none") return dnnl::algorithm::eltwise_gelu_erf;
  return std::nullopt;
}

// The tensor as one flat run of elements: GELU is elementwise, so its shape is
// irrelevant once it is contiguous.
dnnl::memory::desc flat_desc(const at::Tensor& t) {
  using dt = dnnl::memory::data_type;
  return dnnl::memory::desc({t.numel()}, t.scalar_type() == at::kFloat ? dt::f32 : dt::bf16,
                            dnnl::memory::format_tag::a);
}

// Descriptors are made per call: oneDNN's own primitive cache keeps the
// compiled kernels, so a repeated shape costs a lookup (a few microseconds
// against the milliseconds of the pass).
dnnl::eltwise_forward::primitive_desc forward_pd(const dnnl::memory::desc& desc, dnnl::algorithm algorithm) {
  return dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, algorithm, desc, 0.f, 0.f), cpu_engine());
}

}  // namespace

bool gelu_supported(const at::Tensor& x, const std::string& approximate) {
  return algorithm_of(approximate) && fits(x);
}

std::optional<at::Tensor> gelu(const at::Tensor& x, const std::string& approximate) {
  const auto algorithm = algorithm_of(approximate);
  if (!algorithm || !fits(x)) return std::nullopt;
  const at::Tensor src = x.contiguous();
  at::Tensor out = at::empty_like(src);
  try {
    const dnnl::memory::desc desc = flat_desc(src);
    dnnl::eltwise_forward primitive(forward_pd(desc, *algorithm));
    dnnl::stream& stream = cpu_stream();
    primitive.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(desc, cpu_engine(), src.data_ptr())},
                               {DNNL_ARG_DST, dnnl::memory(desc, cpu_engine(), out.data_ptr())}});
    stream.wait();
  } catch (const dnnl::error&) {
    return std::nullopt;  // an ISA oneDNN has no kernel for (bf16 below AVX-512): ATen computes it
  }
  return out;
}

std::optional<at::Tensor> gelu_backward(const at::Tensor& grad, const at::Tensor& x, const std::string& approximate) {
  const auto algorithm = algorithm_of(approximate);
  if (!algorithm || !fits(x) || !fits(grad) || grad.sizes() != x.sizes() || grad.scalar_type() != x.scalar_type()) {
    return std::nullopt;
  }
  const at::Tensor src = x.contiguous(), diff_dst = grad.contiguous();
  at::Tensor diff_src = at::empty_like(src);
  try {
    const dnnl::memory::desc desc = flat_desc(src);
    dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(*algorithm, desc, desc, 0.f, 0.f),
                                              cpu_engine(), forward_pd(desc, *algorithm));
    dnnl::eltwise_backward primitive(pd);
    dnnl::stream& stream = cpu_stream();
    primitive.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(desc, cpu_engine(), src.data_ptr())},
                               {DNNL_ARG_DIFF_DST, dnnl::memory(desc, cpu_engine(), diff_dst.data_ptr())},
                               {DNNL_ARG_DIFF_SRC, dnnl::memory(desc, cpu_engine(), diff_src.data_ptr())}});
    stream.wait();
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
  return diff_src;
}

#else

bool gelu_supported(const at::Tensor&, const std::string&) { return false; }
std::optional<at::Tensor> gelu(const at::Tensor&, const std::string&) { return std::nullopt; }
std::optional<at::Tensor> gelu_backward(const at::Tensor&, const at::Tensor&, const std::string&) {
  return std::nullopt;
}

#endif

}  // namespace accel::detail::onednn
