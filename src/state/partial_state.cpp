// Accelerate's PartialState: the launch environment, the device and a share of
// the world's process group (state/shared_world_group.hpp).
#include "accel/partial_state.hpp"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "accel/error.hpp"

#include "state/environment.hpp"
#include "state/process_device.hpp"
#include "state/shared_world_group.hpp"
#include "state/split_range.hpp"

namespace accel {
namespace detail {

struct ProcessState {
  LaunchEnvironment env;
  c10::Device device{c10::kCPU};
  std::shared_ptr<ProcessGroup> world;  // null when the process runs alone
  std::chrono::milliseconds timeout{0};
};

}  // namespace detail

PartialState::PartialState(const PartialStateOptions& options) {
  require_arg(options.timeout.count() > 0,
              "PartialState timeout must be positive, got " + std::to_string(options.timeout.count()) + " ms");
  auto state = std::make_shared<detail::ProcessState>();
  state->env = detail::read_launch_environment();
  state->device =
      detail::choose_process_device(state->env, options.cpu || detail::get_env_flag("ACCELERATE_USE_CPU", false));
  state->timeout = options.timeout;
  if (state->env.distributed()) {
    state->world = detail::join_world_group(state->env, state->device, options.timeout).group;
    state->timeout = state->world->timeout();
  }
  state_ = std::move(state);
}

int PartialState::process_index() const { return state_->env.rank; }
int PartialState::local_process_index() const { return state_->env.local_rank; }
int PartialState::num_processes() const { return state_->env.world_size; }
c10::Device PartialState::device() const { return state_->device; }
std::chrono::milliseconds PartialState::timeout() const { return state_->timeout; }

DistributedType PartialState::distributed_type() const {
  if (!state_->world) return DistributedType::No;
  return state_->device.is_cuda() ? DistributedType::MultiGpu : DistributedType::MultiCpu;
}

Accelerator::SplitRange PartialState::split_range(int64_t n, bool apply_padding) const {
  return detail::split_range(n, num_processes(), process_index(), apply_padding);
}

void PartialState::wait_for_everyone() {
  if (state_->world) state_->world->barrier("wait_for_everyone");
}

void set_seed(uint64_t seed, bool deterministic) {
  // Like torch.use_deterministic_algorithms(True): errors, not warnings.
  if (deterministic) at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  at::manual_seed(seed);
  if (torch::cuda::is_available()) torch::cuda::manual_seed_all(seed);
}

}  // namespace accel
