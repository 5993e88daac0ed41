#include "accelerator/rng_sync.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <mutex>

#include "accel/error.hpp"
#include "state/collectives.hpp"
#include "state/runtime_context.hpp"

namespace accel::detail {

RngTypes parse_rng_types(const std::vector<std::string>& names) {
  RngTypes types;
  for (const std::string& name : names) {
    if (name == "torch") {
      types.torch = true;
    } else if (name == "cuda") {
      types.cuda = true;
    } else if (name == "generator") {
      types.generator = true;
    } else if (name == "xla" || name == "npu" || name == "mlu" || name == "musa" || name == "sdaa" || name == "xpu" ||
               name == "hpu") {
      fail(ErrorCode::Unsupported, "rng_types: \"" + name +
                                       "\" is a device libaccel does not drive (it runs on CPU "
                                       "and CUDA: use torch, cuda, generator)");
    } else {
      fail(ErrorCode::InvalidArgument,
           "rng_types: \"" + name.substr(0, 60) + "\" is not one of torch, cuda, generator");
    }
  }
  return types;
}

namespace {

// Process 0's state of `generator` in every process. The state travels as
// bytes on the process group's device (NCCL sends device tensors only).
void take_main_state(RuntimeContext& state, at::Generator generator, const char* what) {
  at::Tensor bytes;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    bytes = generator.get_state();
  }
  at::Tensor travelling = bytes.to(state.device);
  broadcast_in_place(state, {travelling}, 0, what);
  at::Tensor received = travelling.to(c10::kCPU);
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(received);
}

}  // namespace

void synchronize_rng_states(RuntimeContext& state, const RngTypes& types) {
  if (state.process_group == nullptr) return;
  if (types.torch) take_main_state(state, at::detail::getDefaultCPUGenerator(), "synchronize_rng_states (torch)");
  if (types.cuda && state.device.is_cuda()) {
    take_main_state(state, at::globalContext().defaultGenerator(state.device), "synchronize_rng_states (cuda)");
  }
}

}  // namespace accel::detail
