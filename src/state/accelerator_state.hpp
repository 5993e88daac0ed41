// What an Accelerator knows about this process, shared with everything it prepares.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "accel/accelerator.hpp"
#include "accel/data.hpp"
#include "state/environment.hpp"
#include "precision/autocast.hpp"
#include "precision/grad_scaler.hpp"
#include "state/process_group.hpp"

namespace accel::detail {

class ModelImpl;
class TrackerRegistry;  // src/tracking/tracker_registry.hpp

class AcceleratorState {
 public:
  explicit AcceleratorState(const AcceleratorOptions& options);

  LaunchEnvironment env;
  c10::Device device{c10::kCPU};
  DistributedType distributed_type = DistributedType::No;
  MixedPrecision mixed_precision = MixedPrecision::No;
  double bucket_cap_mb = 25.0;
  DataLoaderConfiguration dataloader_config;
  bool device_placement = true;
  ProjectConfiguration project;
  std::vector<std::string> log_with;
  std::chrono::milliseconds timeout;
  // Null when the process runs alone.
  std::unique_ptr<ProcessGroup> process_group;
  // fp16 only: shared with prepared optimizers.
  std::shared_ptr<GradScaler> scaler;
  bool trigger = false;
  std::vector<std::unique_ptr<AutocastScope>> autocast_scopes;
  // Shared with prepared dataloaders, optimizers and schedulers.
  std::shared_ptr<GradientState> gradient_state = std::make_shared<GradientState>();
  // Models whose gradients backward() must synchronise.
  std::vector<std::weak_ptr<ModelImpl>> prepared_models;
  // Experiment trackers; created on first use by src/tracking.
  std::shared_ptr<TrackerRegistry> trackers;

  int rank() const { return env.rank; }
  int world_size() const { return env.world_size; }
};

}  // namespace accel::detail
