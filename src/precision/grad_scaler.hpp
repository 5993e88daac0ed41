// Dynamic loss scaling for fp16 training, PyTorch's GradScaler algorithm:
// multiply the loss by `scale`; before the optimizer step divide the gradients
// by it and skip the step when any is inf or NaN; halve the scale after an
// overflow and double it after `growth_interval` clean steps.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace accel {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

namespace detail {

class GradScaler {
 public:
  explicit GradScaler(const GradScalerOptions& options);

  at::Tensor scale_loss(const at::Tensor& loss) const;
  // Divides the gradients by the scale (once per step) and records overflow.
  void unscale(const std::vector<at::Tensor>& params);
  // Unscales if needed; true when the optimizer may step (no inf/NaN found).
  bool should_step(const std::vector<at::Tensor>& params);
  // Adjusts the scale after a step attempt and starts the next step.
  void update();

  double scale() const { return scale_; }
  bool found_inf() const { return found_inf_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  // Restores a checkpointed scale and growth tracker.
  void restore(double scale, int64_t growth_tracker) {
    scale_ = scale;
    growth_tracker_ = growth_tracker;
  }

 private:
  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  bool unscaled_ = false;
  bool found_inf_ = false;
};

}  // namespace detail
}  // namespace accel
