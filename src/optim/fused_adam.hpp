// Adam and AdamW whose step makes one pass over each parameter's memory
// (gradient, two moments, parameter) instead of LibTorch's eight element-wise
// kernels per parameter. The optimizer state stays LibTorch's own
// (AdamParamState / AdamWParamState), so saving and loading it is unchanged.
// On CUDA the step goes through LibTorch's fused multi-tensor kernels
// (optim/multi_tensor_adam.hpp). Anything else (other dtypes or devices,
// parameters spread over CPU and GPU, amsgrad) takes LibTorch's own step.
#pragma once

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include "optim/multi_tensor_adam.hpp"

namespace accel::detail {

class FusedAdam final : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  at::Tensor step(LossClosure closure = nullptr) override;

 private:
  MultiTensorAdam on_device_;
};

class FusedAdamW final : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  at::Tensor step(LossClosure closure = nullptr) override;

 private:
  MultiTensorAdam on_device_;
};

// The fused update of n elements (exposed for tests).
struct AdamStep {
  float beta1, beta2, eps;
  float decay;       // AdamW: 1 - lr * weight_decay applied to the parameter first; else 1
  float l2;          // Adam: weight_decay added to the gradient as l2 * param; else 0
  double step_size;  // lr / bias_correction1
  double bias_correction2_sqrt;
};
void fused_adam_update(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                       const AdamStep& step);

}  // namespace accel::detail
