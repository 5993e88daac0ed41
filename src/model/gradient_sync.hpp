// Data-parallel gradient averaging, bucketed and overlapped with backward.
//
// Parameters are grouped in reverse registration order (roughly the order
// backward produces their gradients) into flat buckets: a small first bucket so
// communication starts early, then buckets up to the cap. A post-hook on each
// parameter's AccumulateGrad node scales the fresh gradient by 1/world_size
// into its bucket (or in place, when gradients are views of the buckets); a
// full bucket's allreduce is launched at once, always in bucket order so every
// rank issues the same sequence. A callback queued on the autograd engine
// waits for the buckets and writes the averages back before backward()
// returns. Unarmed backwards (accumulation micro-steps) communicate nothing.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <functional>
#include <vector>

#include "accel/options.hpp"
#include "core/autograd_node_ptr.hpp"
#include "state/process_group.hpp"

namespace torch::autograd {
struct Node;
}

namespace accel::detail {

struct GradientSyncOptions {
  int64_t bucket_cap_bytes = 25 << 20;
  int64_t first_bucket_cap_bytes = 1 << 20;
  bool gradient_as_bucket_view = true;
  bool find_unused_parameters = false;
  CommHook comm_hook = CommHook::None;
  // Where a parameter's gradient already lives, or an undefined tensor: a view
  // of a larger contiguous buffer (ZeRO-1's flat gradients). A bucket whose
  // parameters' homes tile one range of one buffer uses that range as its
  // flat tensor instead of its own, so the buffer's owner sees the averaged
  // gradients in place.
  std::function<at::Tensor(const at::Tensor& parameter)> gradient_home;
};

class GradientSync {
 public:
  // Collective: with a comm hook, checks once that the backend can reduce the
  // wire dtype, so every rank fails alike at prepare rather than mid-backward.
  GradientSync(std::vector<at::Tensor> parameters, std::vector<std::string> names, ProcessGroup& process_group,
               const GradientSyncOptions& options);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // The next backward averages gradients across processes.
  void arm();
  bool armed() const { return armed_; }
  // Average gradients on backward (true, default) or let them accumulate locally.
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }
  size_t bucket_count() const { return buckets_.size(); }
  // Parameter counts per bucket, in launch order.
  std::vector<size_t> bucket_sizes() const;
  // Gradients are summed then divided by this (default: the world size). Under
  // join_uneven_inputs it is the number of processes still training.
  void set_divisor(int divisor) { divisor_ = divisor; }
  // A process that ran out of data answers the others' bucket allreduces with
  // zeros, in the same order, and keeps its own gradients untouched.
  void shadow();

 private:
  struct Bucket {
    at::Tensor flat;
    at::Tensor wire;                // 16-bit copy sent under a comm hook; else undefined
    std::vector<size_t> params;     // indices into params_
    std::vector<at::Tensor> views;  // views[k] aliases flat for params[k]
    size_t pending = 0;             // params not yet ready in this backward
    ProcessGroup::Pending work;
  };

  void on_gradient_ready(size_t param);
  void copy_into_bucket(size_t param);
  void launch(size_t bucket);
  void launch_ready_buckets();
  void finalize();
  bool aliased(size_t param) const;
  // The bucket's parameters' gradient homes (GradientSyncOptions), when they
  // tile one range of one buffer exactly; else empty.
  std::vector<at::Tensor> gradient_homes(const std::vector<size_t>& bucket, int64_t numel) const;
  void check_wire_dtype();

  GradientSyncOptions options_;
  std::vector<at::Tensor> params_;
  std::vector<std::string> names_;
  std::vector<size_t> bucket_of_;  // param -> bucket
  std::vector<size_t> slot_of_;    // param -> index within its bucket
  std::vector<Bucket> buckets_;
  ProcessGroup& process_group_;
  std::vector<AutogradNodePtr> accumulators_;
  std::vector<uintptr_t> hook_keys_;
  std::vector<bool> ready_;  // got its gradient in this backward
  size_t next_to_launch_ = 0;
  bool enabled_ = true;
  bool armed_ = false;
  bool finalize_queued_ = false;
  int divisor_;
};

}  // namespace accel::detail
