#include "optim/multi_tensor_adam.hpp"

#include <ATen/ATen.h>
#include <torch/version.h>

#include <map>
#include <utility>

#define ACCEL_HAS_FUSED_ADAM (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1))

namespace accel::detail {

bool MultiTensorAdam::available() { return ACCEL_HAS_FUSED_ADAM; }

bool MultiTensorAdam::fits(const at::Tensor& param, const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq) {
  const at::Tensor& grad = param.grad();
  auto same_layout = [&](const at::Tensor& t) {
    return t.defined() && t.device() == param.device() && t.scalar_type() == param.scalar_type() &&
           t.layout() == at::kStrided && t.is_contiguous() && t.sizes() == param.sizes();
  };
  const auto dtype = param.scalar_type();
  return available() && param.is_cuda() && param.is_contiguous() &&
         (dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16 || dtype == at::kDouble) &&
         same_layout(grad) && (!exp_avg.defined() || same_layout(exp_avg)) &&
         (!exp_avg_sq.defined() || same_layout(exp_avg_sq));
}

void MultiTensorAdam::step(const MultiTensorAdamGroup& group) {
#if ACCEL_HAS_FUSED_ADAM
  // The kernels take one device and one dtype per call.
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> batches;
  for (size_t i = 0; i < group.params.size(); ++i) {
    const at::Tensor& p = group.params[i];
    batches[{p.device().index(), static_cast<int64_t>(p.scalar_type())}].push_back(i);
  }
  for (auto& [key, members] : batches) {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, counts;
    for (size_t i : members) {
      const at::Tensor& p = group.params[i];
      DeviceStep& entry = steps_[p.unsafeGetTensorImpl()];
      const int64_t before = group.steps[i] - 1;
      if (!entry.count.defined() || entry.host_step != before || entry.count.device() != p.device()) {
        entry.count = at::full({}, static_cast<double>(before), p.options().dtype(at::kFloat));
      }
      entry.host_step = group.steps[i];
      params.push_back(p);
      grads.push_back(group.grads[i]);
      exp_avgs.push_back(group.exp_avgs[i]);
      exp_avg_sqs.push_back(group.exp_avg_sqs[i]);
      counts.push_back(entry.count);
    }
    at::_foreach_add_(counts, 1.0);
    if (group.decoupled) {
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, counts, group.lr, group.beta1, group.beta2,
                        group.weight_decay, group.eps, /*amsgrad=*/false, /*maximize=*/false);
    } else {
      at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, {}, counts, group.lr, group.beta1, group.beta2,
                       group.weight_decay, group.eps, /*amsgrad=*/false, /*maximize=*/false);
    }
  }
#else
  (void)group;
  (void)steps_;
#endif
}

}  // namespace accel::detail
