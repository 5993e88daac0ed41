// The tensor operations metrics need (softmax, top-k, mean, reshape, narrow,
// comparisons). Each checks its arguments first so that a bad dim or shape is
// an INVALID_ARGUMENT naming it, not a LibTorch message about internals.
#include <ATen/ATen.h>
#include <ATen/InferSize.h>

#include <string>

#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

std::string shape_of(const at::Tensor& t) { return c10::str(t.sizes()); }

// dim, counted from the end when negative, must name one of t's dimensions.
void check_dim(const char* op, const at::Tensor& t, int64_t dim) {
  accel::require_arg(
      t.dim() > 0 && dim >= -t.dim() && dim < t.dim(),
      std::string(op) + ": dim " + std::to_string(dim) + " is out of range for a tensor of shape " + shape_of(t));
}

// Integers and bools average as float32: a bool mean is an accuracy.
at::Tensor averageable(const at::Tensor& t) { return at::isFloatingType(t.scalar_type()) ? t : t.to(at::kFloat); }

}  // namespace

extern "C" {

ACCEL_API accel_status accel_tensor_softmax(const accel_tensor* tensor, int64_t dim, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    check_dim("softmax", t, dim);
    accel::require_arg(at::isFloatingType(t.scalar_type()), "softmax: the tensor must be floating point, got " +
                                                                std::string(c10::toString(t.scalar_type())));
    publish_tensor(at::softmax(t, dim), &result);
  });
}

ACCEL_API accel_status accel_tensor_topk(const accel_tensor* tensor, int64_t k, int64_t dim, accel_tensor** values,
                                         accel_tensor** indices) {
  return guarded([&] {
    auto& values_out = out_param(values, "values");
    auto& indices_out = out_param(indices, "indices");
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    check_dim("topk", t, dim);
    accel::require_arg(k >= 0 && k <= t.size(dim), "topk: k is " + std::to_string(k) + " but dim " +
                                                       std::to_string(dim) + " of shape " + shape_of(t) + " has " +
                                                       std::to_string(t.size(dim)) + " entries");
    auto [v, i] = at::topk(t, k, dim);
    // Both handles are made before either is published: no half-filled out-params.
    auto v_handle = std::make_unique<accel_tensor>(accel_tensor{v});
    auto i_handle = std::make_unique<accel_tensor>(accel_tensor{i});
    publish(std::move(v_handle), &values_out);
    publish(std::move(i_handle), &indices_out);
  });
}

ACCEL_API accel_status accel_tensor_mean(const accel_tensor* tensor, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    accel::require_arg(t.numel() > 0, "mean: the tensor of shape " + shape_of(t) + " is empty");
    publish_tensor(averageable(t).mean(), &result);
  });
}

ACCEL_API accel_status accel_tensor_mean_dim(const accel_tensor* tensor, int64_t dim, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    check_dim("mean", t, dim);
    publish_tensor(averageable(t).mean(dim), &result);
  });
}

ACCEL_API accel_status accel_tensor_reshape(const accel_tensor* tensor, const int64_t* shape, size_t ndim,
                                            accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    accel::require_arg(ndim == 0 || shape != nullptr, "reshape: shape is NULL but ndim is " + std::to_string(ndim));
    accel::require_arg(ndim <= 64, "reshape: ndim is " + std::to_string(ndim) + ", more than 64 dimensions");
    std::vector<int64_t> sizes(shape, shape + ndim);
    const std::string refused = "reshape: a tensor of shape " + shape_of(t) + " (" + std::to_string(t.numel()) +
                                " elements) cannot take shape " + c10::str(at::IntArrayRef(sizes));
    // LibTorch multiplies the sizes unchecked: a product that overflows could
    // wrap onto the element count.
    int64_t product = 1;
    for (int64_t size : sizes) {
      accel::require_arg(size == -1 || (size >= 0 && !__builtin_mul_overflow(product, size, &product)), refused);
    }
    try {
      // InferSize.h's, not the broadcasting infer_size: throws (runtime_error
      // or c10::Error) for a second -1, a negative size or a count mismatch.
      at::infer_size_dv(sizes, t.numel());
    } catch (const std::exception&) {
      accel::fail(accel::ErrorCode::InvalidArgument, refused);
    }
    publish_tensor(t.reshape(sizes), &result);
  });
}

ACCEL_API accel_status accel_tensor_narrow(const accel_tensor* tensor, int64_t dim, int64_t start, int64_t length,
                                           accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    check_dim("narrow", t, dim);
    const int64_t size = t.size(dim);
    // Checked without start + length, which could overflow.
    accel::require_arg(start >= 0 && length >= 0 && start <= size && length <= size - start,
                       "narrow: start " + std::to_string(start) + " and length " + std::to_string(length) +
                           " do not fit dim " + std::to_string(dim) + " of shape " + shape_of(t) + " (size " +
                           std::to_string(size) + ")");
    publish_tensor(t.narrow(dim, start, length), &result);
  });
}

ACCEL_API accel_status accel_tensor_compare(const accel_tensor* a, const accel_tensor* b, accel_compare_op op,
                                            accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& x = deref(a, "a").tensor;
    at::Tensor y = deref(b, "b").tensor;
    const int code = enum_value(op);
    accel::require_arg(code >= ACCEL_COMPARE_EQ && code <= ACCEL_COMPARE_GE,
                       "op " + std::to_string(code) + " is not an accel_compare_op");
    if (y.device() != x.device()) y = y.to(x.device());
    try {
      at::infer_size(x.sizes(), y.sizes());
    } catch (const c10::Error&) {
      accel::fail(accel::ErrorCode::InvalidArgument,
                  "compare: shapes " + shape_of(x) + " and " + shape_of(y) + " do not broadcast");
    }
    switch (code) {
      case ACCEL_COMPARE_EQ: return publish_tensor(at::eq(x, y), &result);
      case ACCEL_COMPARE_NE: return publish_tensor(at::ne(x, y), &result);
      case ACCEL_COMPARE_LT: return publish_tensor(at::lt(x, y), &result);
      case ACCEL_COMPARE_LE: return publish_tensor(at::le(x, y), &result);
      case ACCEL_COMPARE_GT: return publish_tensor(at::gt(x, y), &result);
      default: return publish_tensor(at::ge(x, y), &result);
    }
  });
}

}  // extern "C"
