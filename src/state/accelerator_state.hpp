// What an Accelerator knows about this process, shared with everything it prepares.
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
  double first_bucket_cap_mb = 1.0;
  bool gradient_as_bucket_view = true;
  bool find_unused_parameters = false;
  bool broadcast_buffers = true;  // DDP's: process 0's buffers at every training forward
  // ACCELERATE_DEBUG_MODE: reduce and broadcast check shapes first (an extra collective).
  bool debug_mode = false;
  CommHook comm_hook = CommHook::None;
  ShardingStrategy sharding_strategy = ShardingStrategy::NoShard;
  int64_t fsdp_min_num_params = 0;  // FULL_SHARD's wrap units (see AcceleratorOptions)
  std::vector<std::string> fsdp_wrap_classes;  // transformer_auto_wrap_policy's names (see AcceleratorOptions)
  bool fsdp_activation_checkpointing = false;  // of FULL_SHARD's wrap units
  bool fsdp_forward_prefetch = false, fsdp_backward_prefetch = true;  // FULL_SHARD's all-gathers (see AcceleratorOptions)
  bool cpu_offload = false;  // sharded models' master chunks, gradients and optimizer state on the CPU
  // Whether prepare shards models (and save_state writes per-process shards):
  // a strategy other than NO_SHARD with several processes, or with CPU
  // offload, which shards over a world of one.
  bool shards_models() const {
    return sharding_strategy != ShardingStrategy::NoShard && (process_group != nullptr || cpu_offload);
  }
  DataLoaderConfiguration dataloader_config;
  bool device_placement = true;
  bool sync_each_batch = false;   // accumulation micro-steps allreduce too
  bool adjust_scheduler = false;  // see AcceleratorOptions
  ProjectConfiguration project;
  std::vector<std::string> log_with;
  std::chrono::milliseconds timeout;
  // Null when the process runs alone.
  std::unique_ptr<ProcessGroup> process_group;
  // HYBRID_SHARD with several processes: the ranks of this node, over which
  // parameters are sharded, and this local rank on every node (null with one
  // node), over which the gradient shards are summed.
  std::unique_ptr<ProcessGroup> shard_group;
  std::unique_ptr<ProcessGroup> replica_group;
  // fp16 only: shared with prepared optimizers.
  std::shared_ptr<GradScaler> scaler;
  bool trigger = false;
  bool joining = false;      // inside join_uneven_inputs
  int64_t join_rounds = 0;   // gradient syncs this process took part in while joining
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
  // Shared with prepared dataloaders, optimizers and schedulers.
  std::shared_ptr<GradientState> gradient_state = std::make_shared<GradientState>();
  // Models whose gradients backward() must synchronise.
  std::vector<std::weak_ptr<ModelImpl>> prepared_models;
  // What save_state/load_state cover, in prepare order. The lifetimes expire
  // with the objects; the pointers are used only while they have not.
  std::vector<std::pair<std::weak_ptr<const void>, CheckpointObject>> prepared_optimizers;
  std::vector<std::pair<std::weak_ptr<const void>, CheckpointObject>> prepared_schedulers;
  std::vector<std::pair<std::weak_ptr<const void>, DataLoader*>> prepared_loaders;
  std::vector<CheckpointObject> checkpoint_objects;  // register_for_checkpointing
  std::vector<std::pair<int64_t, StateHook>> save_state_pre_hooks, load_state_pre_hooks;
  int64_t next_hook_id = 1;
  // Experiment trackers; created on first use by src/tracking.
  std::shared_ptr<TrackerRegistry> trackers;

  int rank() const { return env.rank; }
  int world_size() const { return env.world_size; }
};

}  // namespace accel::detail
