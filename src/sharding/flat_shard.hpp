// ZeRO-1 and ZeRO-2 over c10d: the trainable parameters of a prepared model
// laid out as one flat buffer, cut into world_size equal chunks.
//
// Partition: element granularity. The parameters (in registration order,
// shared ones once) are concatenated into T elements, padded to world_size * S
// with S = ceil(T / world_size); rank r owns elements [r*S, (r+1)*S). Fewer
// than world_size elements are padding (at the end), a parameter may span two
// ranks, and every chunk has the same size, so the all-gather needs no
// per-rank sizes. The parameters become views of the flat
// buffer (as FSDP's flat parameter), so the all-gather after each step writes
// them in place and no second copy of the parameters is held.
//
// The optimizer is rebuilt over shard(): a view of this rank's chunk whose
// .grad is the averaged gradient of the chunk. Every optimizer libaccel has is
// elementwise, so updating the flat chunk computes bit for bit what updating
// the whole tensors would, and its state (momentum, moments) is S elements.
//
// CPU offload: shard() is then a copy of the chunk in host memory (pinned when
// the model computes on CUDA), not a view, so the optimizer and its state live
// on the CPU. Gradient chunks are copied there after their reduce-scatter and
// the stepped chunk back into the flat buffer before the all-gather; a writer
// of the parameters (a checkpoint load) calls scatter_from_full() after.
//
// A world of one (process_group null: one process with CPU offload): the
// collectives are local copies.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "accel/options.hpp"
#include "core/autograd_node_ptr.hpp"
#include "state/process_group.hpp"

namespace torch::autograd {
struct Node;  // a parameter's gradient accumulator, which ZeRO-2 hooks
}

namespace accel::detail {

class FlatShard {
 public:
  virtual ~FlatShard();
  FlatShard(const FlatShard&) = delete;
  FlatShard& operator=(const FlatShard&) = delete;
  // Not collective: prepare has already made the parameters equal everywhere.
  // Throws Unsupported naming a parameter whose dtype or device differs from
  // the first's. process_group null: a world of one.
  FlatShard(const std::vector<at::Tensor>& parameters, const std::vector<std::string>& names,
            ProcessGroup* process_group, ShardingStrategy strategy, bool cpu_offload);

  ShardingStrategy strategy() const { return strategy_; }
  // HYBRID_SHARD: the group of this local rank on every node. The gradient
  // chunk each node reduce-scatters is then summed across it, and averages
  // divide by the whole world. Null (the default): the shard group is the world.
  void set_replicas(ProcessGroup* replicas) { replicas_ = replicas; }
  // How many processes' gradients an average is over.
  int data_parallel_size() const { return world_size() * (replicas_ != nullptr ? replicas_->world_size() : 1); }
  int64_t total_numel() const { return total_; }
  int64_t shard_numel() const { return chunk_; }
  at::Tensor& shard() { return shard_; }

  // ZeRO-1 without offload: the view of the flat gradient buffer that is
  // `parameter`'s .grad (GradientSyncOptions::gradient_home); else undefined.
  at::Tensor gradient_home(const at::Tensor& parameter) const;
  // ZeRO-2 only: whether the next backward reduce-scatters (off on accumulation micro-steps).
  void set_sync_enabled(bool enabled) { sync_enabled_ = enabled; }
  bool sync_enabled() const { return sync_enabled_; }
  // ZeRO-2, before each backward: forgets what an interrupted backward may
  // have moved into the flat gradient buffer.
  void begin_backward();
  // ZeRO-2, after a synced backward: adds the average across ranks of this
  // rank's chunk of the gradients to shard().grad and frees the full
  // gradients. During a synced backward each gradient moves into one flat
  // buffer as soon as autograd has accumulated it (its .grad is freed then),
  // so the full gradients are held once, not twice. Collective.
  virtual void reduce_scatter_gradients();
  // Before the optimizer's step. ZeRO-1: points shard().grad at this rank's
  // chunk of the (already averaged) full gradients, which are views of one
  // flat buffer laid out as the parameters; it exists only until after_step.
  // Where the gradients no longer are those views (gradient_as_bucket_view
  // moved them into buckets) or live elsewhere (CPU offload), the chunk is
  // copied instead.
  virtual void before_step();
  // After the optimizer's step: all-gathers the chunks into the parameters
  // (FULL_SHARD: nothing, the units gather on use). Collective.
  virtual void after_step();
  virtual void zero_grad();
  // Every parameter full (FULL_SHARD gathers its units) for state_dict
  // readers and writers / freed again. Collective under FULL_SHARD.
  virtual void gather_all() {}
  virtual void release_all() {}
  // After the full parameters were overwritten (load_state_dict, a checkpoint
  // loaded whole): copies this rank's slice into shard() where shard() is not
  // a view of them (FULL_SHARD, CPU offload). Not collective: every rank
  // loaded the same values.
  virtual void scatter_from_full();
  // ZeRO-2: the norm of the gradient across every rank's chunk, and clipping by it. Collective.
  // Tensor parallelism: `split_mask` (1 where shard()'s elements belong to a
  // split parameter, 0 elsewhere; shard()'s length and device) and the
  // tensor-parallel group: the split elements' share is summed over that
  // group too, the whole ones' counted once. Collective over both groups.
  double clip_grad_norm(double max_norm, double norm_type, const at::Tensor& split_mask = {},
                        ProcessGroup* tensor_parallel = nullptr);
  void clip_grad_value(double clip_value);
  // The processes sharing the chunks (the world; HYBRID_SHARD: a node's) and
  // this process's place among them: which chunk shard() is.
  int shard_group_size() const { return world_size(); }
  int shard_group_rank() const { return rank(); }

 protected:
  // For FullShard, which lays out its own buffers.
  FlatShard(ProcessGroup* process_group, ShardingStrategy strategy, bool cpu_offload)
      : process_group_(process_group), strategy_(strategy), offload_(cpu_offload) {}

  int rank() const { return process_group_ != nullptr ? process_group_->rank() : 0; }
  int world_size() const { return process_group_ != nullptr ? process_group_->world_size() : 1; }
  // The group's collectives, or their world-of-one equivalents.
  at::Tensor reduce_scatter(const at::Tensor& flat, const std::string& what);
  void all_gather_into(at::Tensor& output, const at::Tensor& chunk, const std::string& what);
  // Where shard() lives: a host tensor (pinned for a CUDA model) under CPU
  // offload, else a tensor like `like`.
  at::TensorOptions shard_options(const at::Tensor& like) const;
  // A tensor of the model's device moved to where shard() lives.
  at::Tensor to_shard_device(const at::Tensor& t) const;
  // ZeRO-2: moves a synced backward's gradient of parameter i into flat_grad_.
  void on_gradient_ready(size_t i);
  // ZeRO-1: whether every parameter's .grad still lives in flat_grad_.
  bool gradients_in_flat_buffer() const;
  // The device the model computes on (where the collectives run).
  c10::Device flat_device() const { return params_.front().device(); }

  std::vector<at::Tensor> params_;
  std::vector<int64_t> offsets_;  // where each parameter starts in the flat buffer
  ProcessGroup* process_group_;   // null: a world of one
  ProcessGroup* replicas_ = nullptr;
  ShardingStrategy strategy_;
  bool offload_ = false;
  int64_t total_ = 0;
  int64_t chunk_ = 0;
  at::Tensor flat_;  // world_size * chunk_ elements; the parameters are views of it (not FULL_SHARD)
  // flat_'s chunk of this rank, a view of it (CPU offload: a host copy;
  // FULL_SHARD: every unit's chunk, concatenated).
  at::Tensor shard_;
  // The full gradients laid out as flat_. ZeRO-1 without offload: always,
  // each parameter's .grad a view of it (AccumulateGrad adds into it in
  // place). ZeRO-2: during a synced backward only (see in_flat_grad_).
  at::Tensor flat_grad_;
  std::vector<at::Tensor> grad_views_;
  // ZeRO-2: flat_grad_ exists from a synced backward's first gradient to its
  // reduce-scatter; which parameters' gradients are in it already.
  std::vector<bool> in_flat_grad_;
  std::vector<std::pair<AutogradNodePtr, uintptr_t>> gradient_hooks_;
  bool sync_enabled_ = true;
};

}  // namespace accel::detail
