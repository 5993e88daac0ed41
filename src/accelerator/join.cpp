// join_uneven_inputs: processes with fewer batches than the others keep the
// gradient allreduces company until everyone is done. Each round starts with
// an allreduce of "still training" flags, so the active processes know how
// many gradients they average and the joined ones know whether to shadow a
// round or leave.
#include <ATen/ATen.h>

#include "accel/accelerator.hpp"
#include "accel/error.hpp"
#include "model/model_impl.hpp"
#include "state/collectives.hpp"
#include "accelerator/accelerator_state.hpp"

namespace accel {

namespace {

// The gradient sync of the one prepared model join supports (null when the
// process runs alone).
detail::GradientSync* joined_sync(detail::AcceleratorState& state) {
  detail::GradientSync* found = nullptr;
  int models = 0;
  for (const auto& weak : state.prepared_models) {
    auto model = weak.lock();
    if (!model || !model->gradient_sync()) continue;
    ++models;
    found = model->gradient_sync();
  }
  require(models <= 1, ErrorCode::Unsupported,
          "join_uneven_inputs supports one prepared model, " + std::to_string(models) + " are prepared");
  return found;
}

int64_t processes_still_training(detail::AcceleratorState& state, bool me) {
  at::Tensor flag = at::full({1}, me ? 1 : 0, at::kInt).to(state.device);
  state.process_group->allreduce(flag, "join_uneven_inputs (processes still training)");
  return flag.cpu().item<int64_t>();
}

}  // namespace

void Accelerator::join_uneven_inputs_begin() {
  require(!state_->joining, ErrorCode::State, "join_uneven_inputs_begin: already inside join_uneven_inputs");
  require(!state_->tp_group, ErrorCode::Unsupported,
          "join_uneven_inputs with tp_size > 1: the ranks of a tensor-parallel group must run every step together");
  require(!state_->cp_group, ErrorCode::Unsupported,
          "join_uneven_inputs with cp_size > 1: the ranks of a context-parallel group must run every step together");
  require(!state_->process_group || state_->sharding_strategy == ShardingStrategy::NoShard, ErrorCode::Unsupported,
          std::string("join_uneven_inputs with sharding_strategy ") + to_string(state_->sharding_strategy) +
              " is not supported yet");
  joined_sync(*state_);  // names an unsupported setup now rather than mid-epoch
  state_->joining = true;
  state_->join_rounds = 0;
}

void Accelerator::start_join_round() {
  detail::GradientSync* sync = joined_sync(*state_);
  if (!sync || !sync->armed()) return;  // no gradient sync in this backward, no round
  sync->set_divisor(static_cast<int>(processes_still_training(*state_, true)));
  ++state_->join_rounds;
}

void Accelerator::join_uneven_inputs_end() {
  require(state_->joining, ErrorCode::State, "join_uneven_inputs_end without join_uneven_inputs_begin");
  state_->joining = false;
  std::shared_ptr<detail::ModelImpl> model;
  for (const auto& weak : state_->prepared_models) {
    if (auto m = weak.lock(); m && m->gradient_sync()) model = m;
  }
  if (!model) return;
  detail::GradientSync* sync = model->gradient_sync();
  while (processes_still_training(*state_, false) > 0) sync->shadow();
  sync->set_divisor(state_->world_size());

  // Processes that left early missed the last updates: the last to leave
  // (most rounds, lowest rank on a tie) sends its parameters and buffers.
  at::Tensor rounds = detail::gather_tensors(*state_, {at::full({1}, state_->join_rounds, at::kLong)})[0].cpu();
  int last = static_cast<int>(rounds.argmax().item<int64_t>());
  std::vector<at::Tensor> tensors;
  for (auto& [name, t] : model->named_parameters()) tensors.push_back(t);
  for (auto& [name, t] : model->named_buffers()) tensors.push_back(t);
  detail::broadcast_in_place(*state_, tensors, last, "parameters after join_uneven_inputs");
}

}  // namespace accel
