// Accelerator::held_bytes: what a process holds for one model, from storages.
#include <ATen/ATen.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <unordered_set>

#include "accel/accelerator.hpp"
#include "accel/model.hpp"
#include "accel/optimizer.hpp"
#include "model/model_impl.hpp"

namespace accel {

namespace {

// Sums the bytes of storages not counted yet: a view (a parameter of a flat
// buffer, a gradient bucket view) counts with its storage, once.
class StorageCounter {
 public:
  int64_t add(const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return 0;
    const c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
    if (!seen_.insert(storage).second) return 0;
    return static_cast<int64_t>(storage->nbytes());
  }

 private:
  std::unordered_set<const c10::StorageImpl*> seen_;
};

std::vector<at::Tensor> state_tensors(torch::optim::OptimizerParamState& state) {
  if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(&state)) return {s->momentum_buffer()};
  if (auto* s = dynamic_cast<torch::optim::AdamParamState*>(&state)) {
    return {s->exp_avg(), s->exp_avg_sq(), s->max_exp_avg_sq()};
  }
  if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(&state)) {
    return {s->exp_avg(), s->exp_avg_sq(), s->max_exp_avg_sq()};
  }
  if (auto* s = dynamic_cast<torch::optim::RMSpropParamState*>(&state)) {
    return {s->square_avg(), s->momentum_buffer(), s->grad_avg()};
  }
  if (auto* s = dynamic_cast<torch::optim::AdagradParamState*>(&state)) return {s->sum()};
  return {};
}

}  // namespace

HeldBytes Accelerator::held_bytes(const Model& model, const Optimizer* optimizer) const {
  HeldBytes held;
  StorageCounter params, grads, state;
  const auto& shard = model.impl().flat_shard();
  if (shard) {
    held.parameters += params.add(shard->shard());
    held.gradients += grads.add(shard->shard().grad());
  }
  if (auto* full = model.impl().full_shard()) held.gradients += full->unsynced_gradient_bytes();
  for (auto& [name, p] : model.impl().named_parameters()) {
    held.parameters += params.add(p);
    held.gradients += grads.add(p.grad());
  }
  if (optimizer) {
    auto& torch_optimizer = const_cast<Optimizer*>(optimizer)->torch_optimizer();
    for (auto& [key, s] : torch_optimizer.state()) {
      for (const at::Tensor& t : state_tensors(*s)) held.optimizer_state += state.add(t);
    }
  }
  return held;
}

}  // namespace accel
