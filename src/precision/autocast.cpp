#include "precision/autocast.hpp"

#include <ATen/autocast_mode.h>

#include "accel/error.hpp"

namespace accel::detail {

void check_precision_supported(MixedPrecision precision, const c10::Device& device) {
  if (precision == MixedPrecision::Fp16 && !device.is_cuda()) {
    fail(ErrorCode::Unsupported,
         "mixed precision \"fp16\" needs a CUDA device (LibTorch's CPU autocast runs bf16 only); use \"bf16\" on " +
             device.str());
  }
  if (precision == MixedPrecision::Fp8) {
    fail(ErrorCode::Unsupported, "mixed precision \"fp8\" is not supported by this libaccel build on " + device.str() +
                                     " (it needs FP8 kernels LibTorch does not provide here); use \"bf16\"");
  }
}

AutocastScope::AutocastScope(MixedPrecision precision, const c10::Device& device, bool enabled) {
  if (precision == MixedPrecision::No) return;
  active_ = true;
  cuda_ = device.is_cuda();
  c10::ScalarType dtype = precision == MixedPrecision::Fp16 ? c10::kHalf : c10::kBFloat16;
  if (cuda_) {
    previous_enabled_ = at::autocast::is_enabled();
    previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    previous_enabled_ = at::autocast::is_cpu_enabled();
    previous_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (cuda_) {
    at::autocast::set_enabled(previous_enabled_);
    at::autocast::set_autocast_gpu_dtype(previous_dtype_);
  } else {
    at::autocast::set_cpu_enabled(previous_enabled_);
    at::autocast::set_autocast_cpu_dtype(previous_dtype_);
  }
}

}  // namespace accel::detail
