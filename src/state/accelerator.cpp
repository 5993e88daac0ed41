#include "accel/accelerator.hpp"

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <cstdio>
#include <iostream>

#include "accel/data.hpp"
#include "accel/model.hpp"
#include "accel/optimizer.hpp"
#include "model/model_impl.hpp"
#include "precision/autocast.hpp"
#include "state/accelerator_state.hpp"
#include "state/collectives.hpp"

namespace accel {

MixedPrecision parse_mixed_precision(const std::string& text) {
  if (text == "no") return MixedPrecision::No;
  if (text == "bf16") return MixedPrecision::Bf16;
  if (text == "fp16") return MixedPrecision::Fp16;
  if (text == "fp8") return MixedPrecision::Fp8;
  fail(ErrorCode::InvalidArgument, "mixed precision \"" + text + "\" is not one of no, bf16, fp16, fp8");
}

const char* to_string(MixedPrecision precision) {
  switch (precision) {
    case MixedPrecision::No: return "no";
    case MixedPrecision::Bf16: return "bf16";
    case MixedPrecision::Fp16: return "fp16";
    case MixedPrecision::Fp8: return "fp8";
  }
  return "unknown";
}

const char* to_string(DistributedType type) {
  switch (type) {
    case DistributedType::No: return "NO";
    case DistributedType::MultiCpu: return "MULTI_CPU";
    case DistributedType::MultiGpu: return "MULTI_GPU";
  }
  return "unknown";
}

namespace detail {

AcceleratorState::AcceleratorState(const AcceleratorOptions& options)
    : bucket_cap_mb(options.bucket_cap_mb), timeout(options.timeout) {
  require_arg(options.timeout.count() > 0,
              "timeout must be positive, got " + std::to_string(options.timeout.count()) + " ms");
  require_arg(options.bucket_cap_mb > 0, "bucket_cap_mb must be positive, got " + std::to_string(options.bucket_cap_mb));
  env = read_launch_environment();

  if (options.mixed_precision) {
    mixed_precision = *options.mixed_precision;
  } else if (auto from_env = get_env("ACCELERATE_MIXED_PRECISION")) {
    mixed_precision = parse_mixed_precision(*from_env);
  }

  bool use_cuda = !options.cpu && get_env("ACCELERATE_USE_CPU").value_or("false") != "true" &&
                  torch::cuda::is_available();
  if (use_cuda) {
    int devices = static_cast<int>(torch::cuda::device_count());
    device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % devices));
  }
  check_precision_supported(mixed_precision, device);

  if (env.distributed()) {
    process_group = std::make_unique<ProcessGroup>(env, device, timeout);
    distributed_type = device.is_cuda() ? DistributedType::MultiGpu : DistributedType::MultiCpu;
  }
}

}  // namespace detail

Accelerator::Accelerator(const AcceleratorOptions& options)
    : state_(std::make_shared<detail::AcceleratorState>(options)) {}

Accelerator::~Accelerator() = default;

int Accelerator::process_index() const { return state_->env.rank; }
int Accelerator::local_process_index() const { return state_->env.local_rank; }
int Accelerator::num_processes() const { return state_->env.world_size; }
bool Accelerator::is_main_process() const { return state_->env.rank == 0; }
bool Accelerator::is_local_main_process() const { return state_->env.local_rank == 0; }
DistributedType Accelerator::distributed_type() const { return state_->distributed_type; }
MixedPrecision Accelerator::mixed_precision() const { return state_->mixed_precision; }
c10::Device Accelerator::device() const { return state_->device; }
std::chrono::milliseconds Accelerator::timeout() const { return state_->timeout; }

void Accelerator::prepare(Model& model) { model.impl().prepare(state_); }

void Accelerator::prepare(Optimizer& optimizer) {
  require(optimizer.model().is_prepared(), ErrorCode::State,
          "prepare(optimizer): prepare the optimizer's model first, so the optimizer steps the prepared parameters");
}

void Accelerator::prepare(DataLoader& loader) {
  require(!loader.is_prepared(), ErrorCode::State, "prepare(dataloader): this dataloader is already prepared");
  loader.shard(ShardPlacement{state_->world_size(), state_->rank(), state_->device, state_->gradient_state});
}

void Accelerator::backward(const at::Tensor& loss) {
  require_arg(loss.defined(), "backward: the loss tensor is undefined");
  require_arg(loss.numel() == 1, "backward: the loss must have one element, got shape " + c10::str(loss.sizes()));
  require_arg(loss.requires_grad(), "backward: the loss does not require grad (was it computed under no_grad or "
                                    "from a model in eval mode without parameters requiring grad?)");
  try {
    loss.backward();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(ErrorCode::Internal, "backward failed: " + message.substr(0, message.find('\n')));
  }
}

at::Tensor Accelerator::gather(const at::Tensor& tensor) { return detail::gather_tensor(*state_, tensor); }

at::Tensor Accelerator::gather_for_metrics(const at::Tensor& tensor) {
  at::Tensor gathered = detail::gather_tensor(*state_, tensor);
  const GradientState& gradient = *state_->gradient_state;
  if (gradient.end_of_dataloader && gradient.remainder > 0 && gradient.remainder < gathered.size(0)) {
    gathered = gathered.narrow(0, 0, gradient.remainder);
  }
  return gathered;
}

at::Tensor Accelerator::reduce(const at::Tensor& tensor, ReduceOp op) {
  return detail::reduce_tensor(*state_, tensor, op);
}

void Accelerator::wait_for_everyone() {
  if (state_->process_group) state_->process_group->barrier("wait_for_everyone");
}

void Accelerator::print(const std::string& message) const {
  if (!is_main_process()) return;
  std::fwrite(message.data(), 1, message.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void Accelerator::set_seed(uint64_t seed) {
  at::manual_seed(seed);
  if (torch::cuda::is_available()) torch::cuda::manual_seed_all(seed);
}

}  // namespace accel
