#include "optim/fused_adam.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>

#include "optim/state_key.hpp"

namespace accel::detail {

namespace {

// One element's update, in LibTorch's order of operations:
//   p *= decay;  g += l2 * p;  m = m*b1 + (1-b1)*g;  v = v*b2 + (1-b2)*g*g;
//   p += -step_size * m / (sqrt(v) / sqrt(bc2) + eps)
// Cloned for AVX2 and the baseline so the loop vectorises on either.
__attribute__((target_clones("avx2", "default"))) void update_range(float* __restrict p, const float* __restrict g,
                                                                    float* __restrict m, float* __restrict v,
                                                                    int64_t begin, int64_t end, AdamStep s) {
  const float one_minus_b1 = 1.0f - s.beta1, one_minus_b2 = 1.0f - s.beta2;
  const float step_size = static_cast<float>(s.step_size);
  const float bc2_sqrt = static_cast<float>(s.bias_correction2_sqrt);
  for (int64_t i = begin; i < end; ++i) {
    float param = p[i] * s.decay;
    float grad = g[i] + s.l2 * param;
    float mi = m[i] * s.beta1 + one_minus_b1 * grad;
    float vi = v[i] * s.beta2 + one_minus_b2 * (grad * grad);
    m[i] = mi;
    v[i] = vi;
    p[i] = param - step_size * (mi / (std::sqrt(vi) / bc2_sqrt + s.eps));
  }
}

bool fusable(const at::Tensor& p) {
  const at::Tensor& g = p.grad();
  return p.device().is_cpu() && p.scalar_type() == at::kFloat && p.is_contiguous() && g.defined() && !g.is_sparse() &&
         g.scalar_type() == at::kFloat && g.is_contiguous() && g.sizes() == p.sizes();
}

template <class ParamState>
ParamState& state_of(OptimizerStates& states, const at::Tensor& p) {
  auto key = optimizer_state_key(p);
  auto it = states.find(key);
  if (it == states.end()) {
    auto state = std::make_unique<ParamState>();
    state->step(0);
    state->exp_avg(at::zeros_like(p, at::MemoryFormat::Contiguous));
    state->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Contiguous));
    it = states.emplace(key, std::move(state)).first;
  }
  return static_cast<ParamState&>(*it->second);
}

// Runs the fused update over every parameter with a gradient; false (nothing
// done) when one of them needs LibTorch's general path.
template <class ParamState, class Options>
bool fused_step(std::vector<torch::optim::OptimizerParamGroup>& groups, OptimizerStates& states, bool decoupled) {
  for (auto& group : groups) {
    if (static_cast<Options&>(group.options()).amsgrad()) return false;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (!fusable(p)) return false;
      auto key = optimizer_state_key(p);
      auto it = states.find(key);
      if (it != states.end()) {
        auto& state = static_cast<ParamState&>(*it->second);
        if (!state.exp_avg().is_contiguous() || !state.exp_avg_sq().is_contiguous() ||
            state.exp_avg().scalar_type() != at::kFloat || state.exp_avg_sq().scalar_type() != at::kFloat) {
          return false;
        }
      }
    }
  }
  at::NoGradGuard no_grad;
  for (auto& group : groups) {
    auto& options = static_cast<Options&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& state = state_of<ParamState>(states, p);
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
      AdamStep s;
      s.beta1 = static_cast<float>(beta1);
      s.beta2 = static_cast<float>(beta2);
      s.eps = static_cast<float>(options.eps());
      s.decay = decoupled ? static_cast<float>(1 - options.lr() * options.weight_decay()) : 1.0f;
      s.l2 = decoupled ? 0.0f : static_cast<float>(options.weight_decay());
      s.step_size = options.lr() / (1 - std::pow(beta1, state.step()));
      s.bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, state.step()));
      at::Tensor exp_avg = state.exp_avg(), exp_avg_sq = state.exp_avg_sq();
      fused_adam_update(p.data_ptr<float>(), p.grad().data_ptr<float>(), exp_avg.data_ptr<float>(),
                        exp_avg_sq.data_ptr<float>(), p.numel(), s);
    }
  }
  return true;
}

// The same step on CUDA through the multi-tensor kernels; false (nothing done)
// when a parameter with a gradient does not fit them.
template <class ParamState, class Options>
bool device_step(std::vector<torch::optim::OptimizerParamGroup>& groups, OptimizerStates& states, bool decoupled,
                 MultiTensorAdam& on_device) {
  if (!MultiTensorAdam::available()) return false;
  for (auto& group : groups) {
    if (static_cast<Options&>(group.options()).amsgrad()) return false;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto it = states.find(optimizer_state_key(p));
      at::Tensor exp_avg, exp_avg_sq;
      if (it != states.end()) {
        auto& state = static_cast<ParamState&>(*it->second);
        exp_avg = state.exp_avg();
        exp_avg_sq = state.exp_avg_sq();
        if (!exp_avg.defined() || !exp_avg_sq.defined()) return false;
      }
      if (!MultiTensorAdam::fits(p, exp_avg, exp_avg_sq)) return false;
    }
  }
  at::NoGradGuard no_grad;
  for (auto& group : groups) {
    auto& options = static_cast<Options&>(group.options());
    MultiTensorAdamGroup batch;
    batch.lr = options.lr();
    batch.beta1 = std::get<0>(options.betas());
    batch.beta2 = std::get<1>(options.betas());
    batch.eps = options.eps();
    batch.weight_decay = options.weight_decay();
    batch.decoupled = decoupled;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& state = state_of<ParamState>(states, p);
      state.step(state.step() + 1);
      batch.params.push_back(p);
      batch.grads.push_back(p.grad());
      batch.exp_avgs.push_back(state.exp_avg());
      batch.exp_avg_sqs.push_back(state.exp_avg_sq());
      batch.steps.push_back(state.step());
    }
    if (!batch.params.empty()) on_device.step(batch);
  }
  return true;
}

}  // namespace

void fused_adam_update(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                       const AdamStep& step) {
  at::parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
    update_range(param, grad, exp_avg, exp_avg_sq, begin, end, step);
  });
}

at::Tensor FusedAdam::step(LossClosure closure) {
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  if (!fused_step<torch::optim::AdamParamState, torch::optim::AdamOptions>(param_groups_, state_, false) &&
      !device_step<torch::optim::AdamParamState, torch::optim::AdamOptions>(param_groups_, state_, false, on_device_)) {
    torch::optim::Adam::step(nullptr);
  }
  return loss;
}

at::Tensor FusedAdamW::step(LossClosure closure) {
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  if (!fused_step<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(param_groups_, state_, true) &&
      !device_step<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(param_groups_, state_, true,
                                                                              on_device_)) {
    torch::optim::AdamW::step(nullptr);
  }
  return loss;
}

}  // namespace accel::detail
