// The device a process of the launch computes on, chosen alike by every
// Accelerator and PartialState: the CPU when asked (or without CUDA), else the
// GPU of its local rank, made current as Accelerate makes it.
#pragma once

#include <c10/core/Device.h>

#include "state/environment.hpp"

namespace accel::detail {

// Throws InvalidArgument when more processes share this machine than it has
// GPUs (NCCL would fail deep in its first collective), naming the ways out.
c10::Device choose_process_device(const LaunchEnvironment& env, bool use_cpu);

}  // namespace accel::detail
