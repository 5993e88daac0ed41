#include "precision/autocast.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "accel/error.hpp"

namespace accel::detail {

// LibTorch 2.x's CPU autocast casts to float16 as well as bfloat16 (its CPU
// kernels cover half); 1.13's refuses any CPU dtype but bfloat16.
constexpr bool kCpuAutocastRunsFp16 = TORCH_VERSION_MAJOR >= 2;

void check_precision_supported(MixedPrecision precision, const c10::Device& device) {
  if (precision == MixedPrecision::Fp16 && !device.is_cuda() && !kCpuAutocastRunsFp16) {
    fail(ErrorCode::Unsupported, "mixed precision \"fp16\" on " + device.str() +
                                     " needs LibTorch 2.x (this build's LibTorch " + TORCH_VERSION +
                                     " autocasts to bf16 only on the CPU); use \"bf16\", or a CUDA device");
  }
  if (precision == MixedPrecision::Fp8) {
    fail(ErrorCode::Unsupported, "mixed precision \"fp8\" is not supported by this libaccel build on " + device.str() +
                                     " (it needs FP8 kernels LibTorch does not provide here); use \"bf16\"");
  }
}

// LibTorch 2.4 replaced the per-device autocast calls (set_enabled for CUDA,
// set_cpu_enabled, ...) with calls that take the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(c10::DeviceType type) { return at::autocast::is_autocast_enabled(type); }

c10::ScalarType autocast_dtype(c10::DeviceType type) { return at::autocast::get_autocast_dtype(type); }

namespace {

void set_autocast(c10::DeviceType type, bool enabled, c10::ScalarType dtype) {
  at::autocast::set_autocast_enabled(type, enabled);
  at::autocast::set_autocast_dtype(type, dtype);
}
#else
bool autocast_enabled(c10::DeviceType type) {
  return type == c10::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}

c10::ScalarType autocast_dtype(c10::DeviceType type) {
  return type == c10::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}

namespace {

void set_autocast(c10::DeviceType type, bool enabled, c10::ScalarType dtype) {
  if (type == c10::kCUDA) {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}
#endif

}  // namespace

at::Tensor autocast_operand(const at::Tensor& operand, c10::DeviceType type) {
  return at::autocast::cached_cast(autocast_dtype(type), operand, type);
}

AutocastScope::AutocastScope(MixedPrecision precision, const c10::Device& device, bool enabled,
                             std::optional<bool> cache_enabled) {
  if (precision == MixedPrecision::No) return;
  active_ = true;
  device_type_ = device.is_cuda() ? c10::kCUDA : c10::kCPU;
  previous_enabled_ = autocast_enabled(device_type_);
  previous_dtype_ = autocast_dtype(device_type_);
  if (cache_enabled) {
    previous_cache_enabled_ = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(*cache_enabled);
  }
  set_autocast(device_type_, enabled, precision == MixedPrecision::Fp16 ? c10::kHalf : c10::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(device_type_, previous_enabled_, previous_dtype_);
  if (previous_cache_enabled_) at::autocast::set_autocast_cache_enabled(*previous_cache_enabled_);
}

}  // namespace accel::detail
