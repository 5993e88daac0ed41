// Adam and AdamW over every CUDA parameter in a few kernel launches: LibTorch
// 2.1+'s _fused_adam_/_fused_adamw_ (what PyTorch's `fused=True` runs), where
// LibTorch's C++ optimizers launch about nine kernels per parameter. A small
// model's GPU step is bound by the host issuing kernels (docs/benchmarks.md,
// "LM bench on one GPU"), so those launches are most of the optimizer's cost.
//
// This is the version adapter: built against LibTorch 1.x, available() is
// false and step() does nothing. The optimizer state stays LibTorch's own
// (AdamParamState/AdamWParamState: its host step count and its moment
// tensors, updated in place), so saving and loading it is unchanged; the
// kernels read the step from a float tensor on the device, which this class
// keeps per parameter and rebuilds whenever the host count moved without it
// (a loaded state).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace c10 {
struct TensorImpl;
}

namespace accel::detail {

// One parameter group's hyper-parameters and tensors, all dense, contiguous,
// of one floating dtype, on CUDA devices.
struct MultiTensorAdamGroup {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  bool decoupled = false;  // AdamW: the decay applies to the parameter, not the gradient
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs;
  std::vector<int64_t> steps;  // LibTorch's host count per parameter, already incremented for this step
};

class MultiTensorAdam {
 public:
  // Whether this LibTorch has the fused kernels.
  static bool available();
  // Whether `param` (with its gradient and moments) can go through step().
  static bool fits(const at::Tensor& param, const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq);
  // The update of one group: one step-count increment and one fused launch per
  // (device, dtype) the group spans.
  void step(const MultiTensorAdamGroup& group);

 private:
  struct DeviceStep {
    at::Tensor count;  // float32 scalar on the parameter's device
    int64_t host_step;
  };
  std::unordered_map<const c10::TensorImpl*, DeviceStep> steps_;
};

}  // namespace accel::detail
