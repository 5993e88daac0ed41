// libaccel's view of a c10d process group: every collective gets an op name and a
// sequence number, waits at most the configured timeout, and a failure says which
// operation failed and, where the store can tell, which ranks never arrived.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "state/c10d_adapter.hpp"
#include "state/environment.hpp"
#include "state/gloo_direct.hpp"

namespace accel::detail {

class ProcessGroup {
 public:
  // Joins the TCPStore rendezvous (rank 0 hosts it) and creates Gloo, or NCCL
  // for a CUDA device. Throws Timeout, naming the ranks that did not arrive, when
  // not every rank joins within `timeout`.
  ProcessGroup(const LaunchEnvironment& env, const c10::Device& device, std::chrono::milliseconds timeout);

  // A group of some of this group's ranks (`ranks`, in this group's numbering,
  // ascending; this process among them), with its own backend over the same
  // store under `name`: c10d's new_group. Only the members construct it, each
  // with the same name and ranks; its rank() is this process's index in
  // `ranks`. HYBRID_SHARD's shard group (the ranks of one node) and replica
  // group (one rank per node) are two of these. Throws as the constructor.
  ProcessGroup(const ProcessGroup& parent, const std::string& name, const std::vector<int>& ranks);

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  std::string backend_name() const { return device_.is_cuda() ? "nccl" : "gloo"; }
  // Collectives issued by this process so far (also the next sequence number).
  uint64_t collectives_issued() const { return next_sequence_; }

  // An issued collective; pass it to wait().
  struct Pending {
    c10d_adapter::WorkPtr work;
    std::string op;
    uint64_t sequence = 0;
    // A two-rank all-gather's receive (its send is `work`), and a buffer the
    // collective reads (an all-gather's chunk), kept alive until wait().
    c10d_adapter::WorkPtr receive;
    at::Tensor received;
  };

  // Sums `tensors` across ranks in place (complete after wait()). With two
  // ranks on Gloo and one dense CPU tensor (gloo_direct()), the sum runs now,
  // on this thread, over Gloo's synchronous pairs (state/gloo_direct.hpp):
  // after a step's compute that is 5x faster than handing it to c10d's Gloo
  // threads, with the same bits. Otherwise c10d's allreduce is issued.
  Pending allreduce_async(std::vector<at::Tensor>& tensors, const std::string& op);
  void wait(Pending& pending);
  // Whether two-rank CPU allreduces run on the calling thread (above): on
  // where the build has it (GlooDirect::available()) unless ACCEL_GLOO_DIRECT=0
  // in the environment (the same on every rank). Benchmarks and tests compare
  // both paths; every rank must set the same value.
  bool gloo_direct() const { return direct_ != nullptr && direct_on_; }
  void set_gloo_direct(bool on) { direct_on_ = on; }

  void allreduce(at::Tensor& tensor, const std::string& op);
  void broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& op);
  // One tensor per rank; every rank's input must have input's shape and dtype.
  std::vector<at::Tensor> allgather(const at::Tensor& input, const std::string& op);
  void barrier(const std::string& op);
  // Sharded data parallel's two collectives (docs/sharding.md). LibTorch 1.13's
  // Gloo has neither reduce_scatter nor an all-gather into one tensor, so both
  // are composed from the backend's own operations. On Gloo (CPU) with 2
  // processes they swap chunks: every element crosses the wire once, and at
  // 64 MiB c10d's send/recv took 57 and 63 ms against 85 and 92 ms for the
  // compositions below (docs/sharding.md). Where gloo_direct() takes the
  // chunk, the swap runs on the calling thread over Gloo's synchronous pairs,
  // and the async all-gather is then complete when it returns.
  // ACCEL_GLOO_RING=0 in the environment (the same on every rank) uses the
  // composition below instead, which 3+ processes on Gloo always use. NCCL
  // (CUDA) runs its own reduce_scatter_tensor / all_gather_into_tensor.
  // reduce_scatter: `input` (contiguous, world_size * n elements) is summed
  // across ranks and this rank gets its chunk [rank * n, (rank + 1) * n) back.
  // On Gloo with 2 processes: the ranks swap the chunk the other owns and add
  // (bit-identical to Gloo's allreduce). Otherwise: world_size `reduce` ops,
  // chunk r to rank r, all in flight at once. `input` is scratch afterwards.
  at::Tensor reduce_scatter(at::Tensor& input, const std::string& op);
  // all_gather_into: every rank's `chunk` (same numel everywhere; it may be
  // this rank's slot of `output`) lands in `output` (world_size * numel,
  // contiguous) in rank order. On Gloo with 2 processes: the ranks swap
  // chunks with send/recv. Otherwise: one allgather into per-rank views of
  // output.
  void all_gather_into(at::Tensor& output, const at::Tensor& chunk, const std::string& op);
  // The same, issued now and complete after wait() (FULL_SHARD's prefetch of
  // the next unit): output must not be read, nor chunk written, before then.
  Pending all_gather_into_async(at::Tensor& output, const at::Tensor& chunk, const std::string& op);
  // Whether the two above run on send/recv; benchmarks compare both
  // (every rank must set the same value).
  bool ring_collectives() const { return ring_collectives_ && !device_.is_cuda() && world_size_ == 2; }
  // Whether the two above are the backend's own one-tensor collectives (NCCL).
  bool native_tensor_collectives() const { return device_.is_cuda(); }
  void set_ring_collectives(bool on) { ring_collectives_ = on; }

 private:
  uint64_t issue_sequence() { return next_sequence_++; }
  // One ring step: `send` to rank + 1 while `receive` fills from rank - 1.
  void ring_step(const at::Tensor& send, at::Tensor& receive, const std::string& op);
  template <class Launch>
  Pending issue(const std::string& op, Launch&& launch);
  // Two ranks on Gloo, where the build has it and ACCEL_GLOO_DIRECT allows:
  // connects the calling-thread path (state/gloo_direct.hpp). Collective.
  void connect_direct();
  // Whether `tensor`'s collective runs on the calling thread (gloo_direct()).
  bool direct_takes(const at::Tensor& tensor) const;
  // Runs a GlooDirect call as collective `op`; returns its sequence number.
  template <class Run>
  uint64_t run_direct(const std::string& op, Run&& run);
  [[noreturn]] void fail_collective(const std::string& op, uint64_t sequence, const std::string& cause);
  std::string describe_peers(const std::string& op, uint64_t sequence);
  std::vector<int> await_ranks(std::chrono::steady_clock::time_point deadline);
  static void warn_if_store_is_exposed(const LaunchEnvironment& env);

  int rank_;
  int world_size_;
  std::string master_addr_;
  std::chrono::milliseconds timeout_;
  c10::Device device_;  // where this rank's collective buffers live (its GPU under NCCL)
  c10d_adapter::StorePtr store_;
  c10d_adapter::BackendPtr backend_;
  uint64_t next_sequence_ = 0;
  bool ring_collectives_ = true;
  std::unique_ptr<GlooDirect> direct_;  // two ranks on Gloo, where the build has it
  bool direct_on_ = true;
};

}  // namespace accel::detail
