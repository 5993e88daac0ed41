#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

#include "capi/handles.hpp"

namespace accel::capi {

at::ScalarType to_scalar_type(int dtype) {
  switch (dtype) {
    case ACCEL_FLOAT32: return at::kFloat;
    case ACCEL_FLOAT64: return at::kDouble;
    case ACCEL_INT32: return at::kInt;
    case ACCEL_INT64: return at::kLong;
    case ACCEL_UINT8: return at::kByte;
    case ACCEL_INT8: return at::kChar;
    case ACCEL_INT16: return at::kShort;
    case ACCEL_BOOL: return at::kBool;
    case ACCEL_FLOAT16: return at::kHalf;
    case ACCEL_BFLOAT16: return at::kBFloat16;
  }
  fail(ErrorCode::InvalidArgument, "unknown accel_dtype " + std::to_string(dtype));
}

accel_dtype to_accel_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return ACCEL_FLOAT32;
    case at::kDouble: return ACCEL_FLOAT64;
    case at::kInt: return ACCEL_INT32;
    case at::kLong: return ACCEL_INT64;
    case at::kByte: return ACCEL_UINT8;
    case at::kChar: return ACCEL_INT8;
    case at::kShort: return ACCEL_INT16;
    case at::kBool: return ACCEL_BOOL;
    case at::kHalf: return ACCEL_FLOAT16;
    case at::kBFloat16: return ACCEL_BFLOAT16;
    default: break;
  }
  fail(ErrorCode::Unsupported, std::string("tensor dtype ") + c10::toString(type) + " has no accel_dtype");
}

void publish_tensor(at::Tensor tensor, accel_tensor** out) {
  publish(std::make_unique<accel_tensor>(accel_tensor{std::move(tensor)}), out);
}

}  // namespace accel::capi

using namespace accel::capi;

namespace {
// Bounds what a huge ndim makes us read from shape; LibTorch kernels
// themselves stop at 25 dimensions.
constexpr size_t kMaxDims = 64;
}  // namespace

extern "C" {

ACCEL_API size_t accel_dtype_size(accel_dtype dtype) {
  try {
    return c10::elementSize(to_scalar_type(enum_value(dtype)));
  } catch (...) {
    return 0;
  }
}

ACCEL_API accel_status accel_tensor_from_buffer(const void* data, size_t nbytes, accel_dtype dtype,
                                                const int64_t* shape, size_t ndim, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    at::ScalarType type = to_scalar_type(enum_value(dtype));
    accel::require_arg(ndim == 0 || shape != nullptr, "shape is NULL but ndim is " + std::to_string(ndim));
    accel::require_arg(ndim <= kMaxDims,
                       "ndim is " + std::to_string(ndim) + ", more than " + std::to_string(kMaxDims) + " dimensions");
    std::vector<int64_t> sizes(shape, shape + ndim);
    for (size_t d = 0; d < ndim; ++d) {
      accel::require_arg(sizes[d] >= 0, "shape[" + std::to_string(d) + "] is negative: " + std::to_string(sizes[d]));
    }
    // Checked products: a shape such as {2^62, 4} must be refused, not wrap
    // into a small count that a short buffer then matches. A zero anywhere
    // makes an empty tensor whatever the other sizes are.
    const bool empty = std::find(sizes.begin(), sizes.end(), 0) != sizes.end();
    uint64_t expected = empty ? 0 : c10::elementSize(type);
    for (size_t d = 0; d < ndim && !empty; ++d) {
      if (__builtin_mul_overflow(expected, static_cast<uint64_t>(sizes[d]), &expected) ||
          expected > static_cast<uint64_t>(INT64_MAX)) {
        accel::fail(accel::ErrorCode::InvalidArgument,
                    "shape[" + std::to_string(d) + "] is " + std::to_string(sizes[d]) + ": shape " +
                        c10::str(at::IntArrayRef(sizes)) + " of " + c10::toString(type) +
                        " needs more bytes than fit in 63 bits");
      }
    }
    accel::require_arg(nbytes == expected, "nbytes is " + std::to_string(nbytes) + " but shape " +
                                               c10::str(at::IntArrayRef(sizes)) + " of " + c10::toString(type) +
                                               " needs " + std::to_string(expected));
    accel::require_arg(data != nullptr || nbytes == 0, "data is NULL");
    at::Tensor tensor = at::empty(sizes, at::TensorOptions().dtype(type));
    if (nbytes > 0) std::memcpy(tensor.data_ptr(), data, nbytes);
    publish_tensor(std::move(tensor), &result);
  });
}

ACCEL_API accel_status accel_tensor_copy_to(const accel_tensor* tensor, void* data, size_t nbytes) {
  return guarded([&] {
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    size_t expected = static_cast<size_t>(t.numel()) * t.element_size();
    accel::require_arg(nbytes == expected, "nbytes is " + std::to_string(nbytes) + " but the tensor " +
                                               c10::str(t.sizes()) + " of " + c10::toString(t.scalar_type()) +
                                               " holds " + std::to_string(expected));
    accel::require_arg(data != nullptr || nbytes == 0, "data is NULL");
    at::Tensor host = t.to(at::kCPU).contiguous();
    if (nbytes > 0) std::memcpy(data, host.data_ptr(), nbytes);
  });
}

ACCEL_API accel_status accel_tensor_ndim(const accel_tensor* tensor, size_t* out) {
  return guarded([&] { out_param(out, "out") = static_cast<size_t>(deref(tensor, "tensor").tensor.dim()); });
}

ACCEL_API accel_status accel_tensor_shape(const accel_tensor* tensor, int64_t* dims, size_t capacity) {
  return guarded([&] {
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    accel::require_arg(dims != nullptr || capacity == 0, "dims is NULL but capacity is " + std::to_string(capacity));
    for (size_t d = 0; d < std::min(capacity, static_cast<size_t>(t.dim())); ++d)
      dims[d] = t.size(static_cast<int64_t>(d));
  });
}

ACCEL_API accel_status accel_tensor_dtype(const accel_tensor* tensor, accel_dtype* out) {
  return guarded([&] {
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    out_param(out, "out") = to_accel_dtype(t.scalar_type());
  });
}

ACCEL_API accel_status accel_tensor_numel(const accel_tensor* tensor, int64_t* out) {
  return guarded([&] { out_param(out, "out") = deref(tensor, "tensor").tensor.numel(); });
}

ACCEL_API accel_status accel_tensor_argmax(const accel_tensor* tensor, int64_t dim, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    accel::require_arg(t.dim() > 0 && dim >= -t.dim() && dim < t.dim(),
                       "dim " + std::to_string(dim) + " is out of range for a tensor of shape " + c10::str(t.sizes()));
    accel::require_arg(t.numel() > 0, "argmax of an empty tensor of shape " + c10::str(t.sizes()));
    publish_tensor(t.argmax(dim), &result);
  });
}

ACCEL_API accel_status accel_tensor_eq(const accel_tensor* a, const accel_tensor* b, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& x = deref(a, "a").tensor;
    at::Tensor y = deref(b, "b").tensor;
    if (y.device() != x.device()) y = y.to(x.device());
    std::vector<int64_t> broadcast;
    try {
      broadcast = at::infer_size(x.sizes(), y.sizes());
    } catch (const c10::Error&) {
      accel::fail(accel::ErrorCode::InvalidArgument,
                  "eq: shapes " + c10::str(x.sizes()) + " and " + c10::str(y.sizes()) + " do not broadcast");
    }
    publish_tensor(at::eq(x, y), &result);
  });
}

ACCEL_API accel_status accel_tensor_sum(const accel_tensor* tensor, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    publish_tensor(deref(tensor, "tensor").tensor.sum(), &result);
  });
}

ACCEL_API accel_status accel_tensor_item(const accel_tensor* tensor, double* out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const at::Tensor& t = deref(tensor, "tensor").tensor;
    accel::require_arg(t.numel() == 1, "item: the tensor has " + std::to_string(t.numel()) + " elements (shape " +
                                           c10::str(t.sizes()) + "), not one");
    result = t.item<double>();
  });
}

ACCEL_API void accel_tensor_free(accel_tensor* tensor) { release(tensor); }

}  // extern "C"
