#include "state/process_device.hpp"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include "accel/error.hpp"

namespace accel::detail {

c10::Device choose_process_device(const LaunchEnvironment& env, bool use_cpu) {
  if (use_cpu || !torch::cuda::is_available()) return c10::Device(c10::kCPU);
  const int devices = static_cast<int>(torch::cuda::device_count());
  // NCCL refuses two ranks on one GPU, and only deep inside its first collective:
  // say so here, with the ways out.
  if (env.distributed() && env.local_world_size > devices) {
    fail(ErrorCode::InvalidArgument,
         "LOCAL_WORLD_SIZE " + std::to_string(env.local_world_size) + " processes on this machine but only " +
             std::to_string(devices) +
             " CUDA device(s): NCCL needs one GPU per process; launch at most that many, or train on CPU "
             "(the cpu option, accel launch --cpu, ACCELERATE_USE_CPU=1)");
  }
  const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % devices));
  // Make it the current device, as Accelerate does, so that NCCL and plain
  // `.cuda()` calls in user code land on this process's GPU, not GPU 0.
  c10::impl::getDeviceGuardImpl(c10::kCUDA)->setDevice(device);
  return device;
}

}  // namespace accel::detail
