#include "state/shared_world_group.hpp"

#include <mutex>

#include "accel/error.hpp"

namespace accel::detail {
namespace {

struct LiveGroup {
  std::weak_ptr<ProcessGroup> group;
  LaunchEnvironment env;
  c10::DeviceType device_type = c10::kCPU;
  int users = 0;
};

std::string describe(const LaunchEnvironment& env, c10::DeviceType device_type) {
  return "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) + " at " + env.master_addr + ":" +
         std::to_string(env.master_port) + " on " + c10::DeviceTypeName(device_type, true);
}

}  // namespace

SharedWorldGroup join_world_group(const LaunchEnvironment& env, const c10::Device& device,
                                  std::chrono::milliseconds timeout) {
  static std::mutex mutex;
  static LiveGroup live;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto group = live.group.lock()) {
    const bool same = live.env.rank == env.rank && live.env.world_size == env.world_size &&
                      live.env.master_addr == env.master_addr && live.env.master_port == env.master_port &&
                      live.device_type == device.type();
    require(same, ErrorCode::State,
            "this process already joined a process group as " + describe(live.env, live.device_type) +
                " (a PartialState or Accelerator still alive), and cannot join another as " +
                describe(env, device.type()) + "; free the first, or create this one with the same settings");
    return {group, live.users++};
  }
  auto group = std::make_shared<ProcessGroup>(env, device, timeout);
  live = LiveGroup{group, env, device.type(), 1};
  return {group, 0};
}

}  // namespace accel::detail
