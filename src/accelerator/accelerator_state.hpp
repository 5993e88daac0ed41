// What an Accelerator knows and holds: the runtime context it shares with
// everything it prepares (state/runtime_context.hpp), and its registries.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "accel/accelerator.hpp"
#include "accel/checkpoint.hpp"
#include "accel/data.hpp"
#include "accelerator/resolved_options.hpp"
#include "accelerator/rng_sync.hpp"
#include "optim/optimizer_checkpoint.hpp"
#include "precision/autocast.hpp"
#include "state/runtime_context.hpp"

namespace accel::detail {

class ModelImpl;
class TrackerRegistry;  // src/tracking/tracker_registry.hpp

// The Accelerator's own: its configuration beyond the runtime, the user's open
// scopes, and the registries of what it prepared (models, optimizers,
// schedulers, loaders), checkpoint objects, hooks and trackers.
class AcceleratorState : public RuntimeContext {
 public:
  explicit AcceleratorState(const ResolvedOptions& options);

  DataLoaderConfiguration dataloader_config;
  bool device_placement = true;
  bool sync_each_batch = false;   // accumulation micro-steps allreduce too
  bool adjust_scheduler = false;  // see AcceleratorOptions
  bool step_scheduler_with_optimizer = true;
  ProjectConfiguration project;
  std::vector<std::string> log_with;
  RngTypes rng_types;  // synchronized at each prepared loader's epoch start
  bool trigger = false;
  // The user's open autocast and no_grad scopes. Both modes are LibTorch
  // thread-locals, so each scope remembers its thread and ends only there.
  struct OpenAutocast {
    std::thread::id thread;
    std::unique_ptr<AutocastScope> scope;
  };
  struct OpenNoGrad {
    std::thread::id thread;
    bool grad_was_enabled;  // restored at its end
  };
  std::vector<OpenAutocast> autocast_scopes;
  std::vector<OpenNoGrad> grad_modes;
  // Open begin/end scopes, so that an _end without its _begin is a STATE
  // error (as autocast and join are) instead of silently re-enabling sync or
  // entering a barrier the other processes never reach.
  int main_process_first_depth = 0;
  int local_main_process_first_depth = 0;
  std::vector<const ModelImpl*> accumulate_scopes;  // one entry per open scope
  std::vector<const ModelImpl*> no_sync_scopes;
  // Models whose gradients backward() must synchronise.
  std::vector<std::weak_ptr<ModelImpl>> prepared_models;
  // What save_state/load_state cover, in prepare order. The lifetimes expire
  // with the objects; the pointers are used only while they have not.
  std::vector<std::pair<std::weak_ptr<const void>, OptimizerCheckpoint>> prepared_optimizers;
  std::vector<std::pair<std::weak_ptr<const void>, CheckpointObject>> prepared_schedulers;
  std::vector<std::pair<std::weak_ptr<const void>, DataLoader*>> prepared_loaders;
  std::vector<CheckpointObject> checkpoint_objects;  // register_for_checkpointing
  std::vector<std::pair<int64_t, StateHook>> save_state_pre_hooks, load_state_pre_hooks;
  int64_t next_hook_id = 1;
  // Experiment trackers; created on first use by src/tracking.
  std::shared_ptr<TrackerRegistry> trackers;
};

}  // namespace accel::detail
