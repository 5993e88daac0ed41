// Mixed precision: which modes a device can run, and the autocast scope the
// prepared model's forward runs under.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <optional>

#include "accel/options.hpp"

namespace accel::detail {

// Throws Unsupported when `device` cannot run `precision` with this LibTorch
// (fp16 on the CPU with LibTorch 1.13, fp8 anywhere): a clear error at creation,
// never a silent fallback.
void check_precision_supported(MixedPrecision precision, const c10::Device& device);

// Whether LibTorch autocast is on for `type` on this thread.
bool autocast_enabled(c10::DeviceType type);

// The dtype autocast lowers `type`'s products to (bfloat16 or float16).
c10::ScalarType autocast_dtype(c10::DeviceType type);

// `operand` as autocast hands it to one of `type`'s lower-precision ops (a
// product): a floating tensor on that device cast to autocast_dtype(type),
// through autocast's cache (a weight is cast once per outermost scope), as a
// recorded cast, so its gradient flows back in the operand's own dtype.
// Anything else is returned as it is.
at::Tensor autocast_operand(const at::Tensor& operand, c10::DeviceType type);

// Enables LibTorch autocast for `device` in bf16 or fp16 while alive; does
// nothing for MixedPrecision::No. Scopes nest; the outermost one clears the cast cache.
class AutocastScope {
 public:
  // enabled=false turns autocast off for the scope (nested inside an enabled
  // one); cache_enabled, when set, switches LibTorch's cast cache for it.
  AutocastScope(MixedPrecision precision, const c10::Device& device, bool enabled = true,
                std::optional<bool> cache_enabled = std::nullopt);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::kCPU;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::kBFloat16;
  std::optional<bool> previous_cache_enabled_;  // set when the scope changed it
};

}  // namespace accel::detail
