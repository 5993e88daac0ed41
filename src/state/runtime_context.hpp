// How this process computes and communicates: its launch environment, device,
// process groups, precision, and the data-parallel and sharding settings that
// prepared models read. The Accelerator owns one (src/accelerator/
// accelerator_state.hpp adds what it has prepared and registered); models,
// collectives and optimizers share it, and need nothing above this floor.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "accel/options.hpp"
#include "accel/data.hpp"
#include "precision/grad_scaler.hpp"
#include "state/device_mesh.hpp"
#include "state/environment.hpp"
#include "state/process_group.hpp"

namespace accel::detail {

struct RuntimeContext {
  LaunchEnvironment env;
  c10::Device device{c10::kCPU};
  DistributedType distributed_type = DistributedType::No;
  MixedPrecision mixed_precision = MixedPrecision::No;
  // AutocastKwargs: whether a prepared model's forward runs under autocast
  // (with a mixed precision), and LibTorch's cast cache there (unset: as is).
  bool autocast_enabled = true;
  std::optional<bool> autocast_cache_enabled;
  double bucket_cap_mb = 25.0;
  double first_bucket_cap_mb = 1.0;
  bool gradient_as_bucket_view = true;
  bool find_unused_parameters = false;
  bool broadcast_buffers = true;  // DDP's: process 0's buffers at every training forward
  // ACCELERATE_DEBUG_MODE: reduce and broadcast check shapes first (an extra collective).
  bool debug_mode = false;
  CommHook comm_hook = CommHook::None;
  ShardingStrategy sharding_strategy = ShardingStrategy::NoShard;
  int64_t fsdp_min_num_params = 0;             // FULL_SHARD's wrap units (see AcceleratorOptions)
  std::vector<std::string> fsdp_wrap_classes;  // transformer_auto_wrap_policy's names (see AcceleratorOptions)
  bool fsdp_activation_checkpointing = false;  // of FULL_SHARD's wrap units
  bool fsdp_forward_prefetch = false,
       fsdp_backward_prefetch = true;  // FULL_SHARD's all-gathers (see AcceleratorOptions)
  bool cpu_offload = false;            // sharded models' master chunks, gradients and optimizer state on the CPU
  // FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT: sharded state saved as PyTorch
  // distributed checkpoints (accelerator/save_dcp_state.hpp).
  bool sharded_state_dict = false;
  // Whether prepare shards models (and save_state writes per-process shards):
  // a strategy other than NO_SHARD with several processes, or with CPU
  // offload, which shards over a world of one.
  bool shards_models() const {
    return sharding_strategy != ShardingStrategy::NoShard && (process_group != nullptr || cpu_offload);
  }
  std::chrono::milliseconds timeout{0};
  // Null when the process runs alone. The world's group, shared with the
  // process's PartialStates and other Accelerators (state/shared_world_group.hpp).
  std::shared_ptr<ProcessGroup> process_group;
  // How many users joined process_group before this one: sub-groups get it in
  // their names (subgroup_name), so two live Accelerators' groups stay apart.
  int group_generation = 0;
  std::string subgroup_name(const std::string& name) const {
    return group_generation == 0 ? name : "g" + std::to_string(group_generation) + "/" + name;
  }
  // HYBRID_SHARD with several processes: the ranks of this node, over which
  // parameters are sharded, and this local rank on every node (null with one
  // node), over which the gradient shards are summed.
  // Under a ParallelismConfig mesh, the dp_shard and dp_replicate groups instead.
  std::unique_ptr<ProcessGroup> shard_group;
  std::unique_ptr<ProcessGroup> replica_group;
  // ParallelismConfig's mesh (state/device_mesh.hpp); all ones without one.
  MeshShape mesh;
  // tp_size > 1: this rank's tensor-parallel group (tp_size consecutive
  // ranks). tp_size or cp_size > 1: the ranks that hold the same slices (the
  // same tp coordinate), over which gradients are averaged (and sharded).
  // Null otherwise (process_group is the data group).
  std::unique_ptr<ProcessGroup> tp_group;
  std::unique_ptr<ProcessGroup> data_group;
  ProcessGroup* data_parallel_group() const { return data_group ? data_group.get() : process_group.get(); }
  int data_parallel_rank() const { return data_group ? data_group->rank() : rank(); }
  int data_parallel_size() const { return data_group ? data_group->world_size() : world_size(); }
  // cp_size > 1: this rank's context-parallel group (parallel/context_parallel.hpp),
  // and the ranks that see different batches (the dp dimensions): the
  // dataloader's shards and gather_for_metrics. Null otherwise (the data group
  // is the batch group).
  std::unique_ptr<ProcessGroup> cp_group;
  std::unique_ptr<ProcessGroup> batch_group;
  ProcessGroup* batch_parallel_group() const { return batch_group ? batch_group.get() : data_parallel_group(); }
  int batch_parallel_rank() const { return batch_group ? batch_group->rank() : data_parallel_rank(); }
  int batch_parallel_size() const { return batch_group ? batch_group->world_size() : data_parallel_size(); }
  // fp16 only: shared with prepared optimizers.
  std::shared_ptr<GradScaler> scaler;
  // Shared with prepared dataloaders, optimizers and schedulers.
  std::shared_ptr<GradientState> gradient_state = std::make_shared<GradientState>();
  bool joining = false;     // inside join_uneven_inputs
  int64_t join_rounds = 0;  // gradient syncs this process took part in while joining

  int rank() const { return env.rank; }
  int world_size() const { return env.world_size; }

 protected:
  RuntimeContext() = default;
  ~RuntimeContext() = default;
};

}  // namespace accel::detail
