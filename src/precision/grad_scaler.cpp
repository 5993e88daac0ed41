#include "precision/grad_scaler.hpp"

#include <ATen/ATen.h>

#include <cmath>

#include "accel/error.hpp"

namespace accel::detail {

GradScaler::GradScaler(const GradScalerOptions& options) : options_(options), scale_(options.init_scale) {
  require_arg(options.init_scale > 0 && std::isfinite(options.init_scale),
              "GradScaler: init_scale must be positive, got " + std::to_string(options.init_scale));
  require_arg(options.growth_factor > 1.0,
              "GradScaler: growth_factor must be > 1, got " + std::to_string(options.growth_factor));
  require_arg(options.backoff_factor > 0 && options.backoff_factor < 1.0,
              "GradScaler: backoff_factor must be in (0, 1), got " + std::to_string(options.backoff_factor));
  require_arg(options.growth_interval > 0,
              "GradScaler: growth_interval must be positive, got " + std::to_string(options.growth_interval));
}

at::Tensor GradScaler::scale_loss(const at::Tensor& loss) const { return options_.enabled ? loss * scale_ : loss; }

void GradScaler::unscale(const std::vector<at::Tensor>& params) {
  if (!options_.enabled || unscaled_) return;
  at::NoGradGuard no_grad;
  double inverse = 1.0 / scale_;
  bool found = false;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    at::Tensor grad = p.grad();
    grad.mul_(inverse);
    if (!found && !at::isfinite(grad).all().item<bool>()) found = true;
  }
  found_inf_ = found;
  unscaled_ = true;
}

bool GradScaler::should_step(const std::vector<at::Tensor>& params) {
  if (!options_.enabled) return true;
  unscale(params);
  return !found_inf_;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (found_inf_) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
  unscaled_ = false;
  found_inf_ = false;
}

}  // namespace accel::detail
