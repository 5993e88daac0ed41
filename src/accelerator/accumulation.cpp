// The training-loop side of the Accelerator: gradient accumulation windows,
// sync control and gradient clipping.
#include <ATen/ATen.h>
#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <iterator>
#include <thread>

#include "accel/accelerator.hpp"
#include "accel/model.hpp"
#include "accel/optimizer.hpp"
#include "model/model_impl.hpp"
#include "accelerator/accelerator_state.hpp"
#include "accelerator/checkpoint_layouts.hpp"

namespace accel {

namespace {

// Ending a thread-local mode from another thread would change that thread's mode
// and leave the scope's own thread in it: refuse, and keep the scope open.
template <typename Open>
void require_own_thread(const std::vector<Open>& scopes, const char* what) {
  require(!scopes.empty(), ErrorCode::State, std::string(what) + "_end without a matching " + what + "_begin");
  require(scopes.back().thread == std::this_thread::get_id(), ErrorCode::State,
          std::string(what) + "_end on another thread than its " + what +
              "_begin (the mode belongs to a thread): end it on the thread that began it");
}

void set_sync(Model& model, bool enabled) {
  if (auto* sync = model.impl().gradient_sync()) sync->set_enabled(enabled);
  if (const auto& shard = model.impl().flat_shard()) shard->set_sync_enabled(enabled);
}

// Closes one open scope of model; an _end without its _begin is a STATE error.
void close_scope(std::vector<const detail::ModelImpl*>& scopes, const Model& model, const char* what) {
  auto it = std::find(scopes.rbegin(), scopes.rend(), &model.impl());
  require(it != scopes.rend(), ErrorCode::State,
          std::string(what) + "_end without a matching " + what + "_begin for this model");
  scopes.erase(std::next(it).base());
}

}  // namespace

void Accelerator::accumulate_begin(Model& model) {
  GradientState& g = *state_->gradient_state;
  if (g.sync_with_dataloader && g.end_of_dataloader) {
    g.step = 0;
    g.sync_gradients = true;
  } else {
    g.step += 1;
    g.sync_gradients = g.step % g.num_steps == 0;
  }
  // sync_each_batch averages every micro-step's gradients (Accelerate's
  // plugin option); sync_gradients, and so the optimizer step, stay per window.
  set_sync(model, g.sync_gradients || state_->sync_each_batch);
  state_->accumulate_scopes.push_back(&model.impl());
}

void Accelerator::accumulate_end(Model& model) {
  close_scope(state_->accumulate_scopes, model, "accumulate");
  set_sync(model, true);
}

Accelerator::AccumulateScope::AccumulateScope(Accelerator& accelerator, Model& model)
    : accelerator_(accelerator), model_(model) {
  accelerator_.accumulate_begin(model_);
}

Accelerator::AccumulateScope::~AccumulateScope() {
  try {
    accelerator_.accumulate_end(model_);
  } catch (const Error&) {
    // The caller already closed the scope by hand; a destructor must not throw.
  }
}

void Accelerator::no_sync_begin(Model& model) {
  set_sync(model, false);
  state_->no_sync_scopes.push_back(&model.impl());
}
void Accelerator::no_sync_end(Model& model) {
  close_scope(state_->no_sync_scopes, model, "no_sync");
  set_sync(model, true);
}

void Accelerator::average_parameters(Model& model) {
  require_arg(model.is_prepared(), "average_parameters (LocalSGD): the model was not prepared by this accelerator");
  require(!model.impl().flat_shard(), ErrorCode::Unsupported,
          "average_parameters (LocalSGD): the model is sharded (" + std::string(to_string(state_->sharding_strategy)) +
              "); its processes hold chunks, not replicas, so there is nothing to average (use NO_SHARD)");
  detail::ProcessGroup* group = state_->data_parallel_group();
  if (group == nullptr || group->world_size() == 1) return;
  wait_for_everyone();
  at::NoGradGuard no_grad;
  const double processes = group->world_size();
  for (auto& parameter : model.parameters()) {
    group->allreduce(parameter, "local_sgd_average");
    parameter.div_(processes);
  }
}

void Accelerator::trigger_sync_in_backward(Model& model) {
  if (auto* sync = model.impl().gradient_sync()) {
    sync->set_enabled(true);
    sync->arm();
  }
  if (const auto& shard = model.impl().flat_shard()) shard->set_sync_enabled(true);
}

double Accelerator::clip_grad_norm(Model& model, double max_norm, double norm_type) {
  require_arg(max_norm > 0, "clip_grad_norm: max_norm must be positive, got " + std::to_string(max_norm));
  require_arg(norm_type > 0, "clip_grad_norm: norm_type must be positive, got " + std::to_string(norm_type));
  if (!sync_gradients()) return 0.0;
  // ZeRO-2 and FULL_SHARD: each rank holds only its chunk of the gradient; the norm spans all.
  const auto& shard = model.impl().flat_shard();
  const detail::TensorParallelModel* tensor_parallel = model.impl().tensor_parallel();
  if (shard && shard->strategy() != ShardingStrategy::ShardOptimizer) {
    if (!tensor_parallel) return shard->clip_grad_norm(max_norm, norm_type);
    // Which of this rank's chunk elements belong to split parameters: their
    // share of the norm is summed over the tensor-parallel group as well.
    const detail::ShardLayout layout = detail::live_layout(model.impl());
    require(layout.member_numel() == shard->shard().numel(), ErrorCode::Internal,
            "clip_grad_norm: the shard's layout has " + std::to_string(layout.member_numel()) +
                " elements, its chunk " + std::to_string(shard->shard().numel()));
    at::Tensor mask = at::zeros({shard->shard().numel()}, at::TensorOptions().dtype(at::kFloat));
    for (const detail::LayoutPiece& piece : layout.pieces(detail::live_member(model.impl()))) {
      if (tensor_parallel->split_of(layout.params()[piece.param].name)) mask.narrow(0, piece.at, piece.length).fill_(1);
    }
    return shard->clip_grad_norm(max_norm, norm_type, mask, tensor_parallel->slot.group);
  }
  std::vector<at::Tensor> params = model.parameters();
  if (state_->scaler) state_->scaler->unscale(params);
  if (tensor_parallel) {
    return detail::clip_grad_norm_tensor_parallel(model.impl().named_parameters(), *tensor_parallel, max_norm,
                                                  norm_type);
  }
  return torch::nn::utils::clip_grad_norm_(params, max_norm, norm_type);
}

void Accelerator::clip_grad_value(Model& model, double clip_value) {
  require_arg(clip_value > 0, "clip_grad_value: clip_value must be positive, got " + std::to_string(clip_value));
  if (!sync_gradients()) return;
  const auto& shard = model.impl().flat_shard();
  if (shard && shard->strategy() != ShardingStrategy::ShardOptimizer) return shard->clip_grad_value(clip_value);
  std::vector<at::Tensor> params = model.parameters();
  if (state_->scaler) state_->scaler->unscale(params);
  torch::nn::utils::clip_grad_value_(params, clip_value);
}

void Accelerator::autocast_begin() { autocast_begin(state_->autocast_enabled); }

void Accelerator::autocast_begin(bool enabled) {
  auto scope = std::make_unique<detail::AutocastScope>(state_->mixed_precision, state_->device, enabled,
                                                       state_->autocast_cache_enabled);
  state_->autocast_scopes.push_back({std::this_thread::get_id(), std::move(scope)});
}

void Accelerator::autocast_end() {
  require_own_thread(state_->autocast_scopes, "autocast");
  state_->autocast_scopes.pop_back();
}

void Accelerator::no_grad_begin() {
  state_->grad_modes.push_back({std::this_thread::get_id(), at::GradMode::is_enabled()});
  at::GradMode::set_enabled(false);
}

void Accelerator::no_grad_end() {
  require_own_thread(state_->grad_modes, "no_grad");
  at::GradMode::set_enabled(state_->grad_modes.back().grad_was_enabled);
  state_->grad_modes.pop_back();
}

void Accelerator::unscale_gradients(Optimizer& optimizer) {
  if (state_->scaler) state_->scaler->unscale(optimizer.parameters());
}

}  // namespace accel
