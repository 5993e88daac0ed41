// The world's process group, one per process: every PartialState and
// Accelerator of a process joins the same one, as Accelerate's PartialState
// shares one torch.distributed default group. Created by the first of them
// (collective then) and gone with the last.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>

#include "state/environment.hpp"
#include "state/process_group.hpp"

namespace accel::detail {

struct SharedWorldGroup {
  std::shared_ptr<ProcessGroup> group;
  // How many users joined this group before the caller (0 for its creator).
  // Every rank creates its PartialStates and Accelerators in the same order,
  // so the number is the same on every rank: sub-groups named with it stay apart
  // when two Accelerators live at once.
  int generation = 0;
};

// The group for env (distributed) on device: the live one when it matches
// (same rank, world size, store address and device type), else a new one made
// with timeout. Throws State naming both when a live group differs (a CPU
// PartialState and a CUDA Accelerator, say), and what ProcessGroup throws.
SharedWorldGroup join_world_group(const LaunchEnvironment& env, const c10::Device& device,
                                  std::chrono::milliseconds timeout);

}  // namespace accel::detail
