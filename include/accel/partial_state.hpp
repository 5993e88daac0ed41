// libaccel C++ API: Accelerate's PartialState — this process's place in the
// launch (its index, the number of processes, its device) and the world's
// process group, without an Accelerator.
//
// Every PartialState and Accelerator of a process shares one process group,
// as Accelerate's shared state does: a script can make a PartialState for its
// data work (split_between_processes, main_process_first) before or beside its
// Accelerator. The group lives while any of them does.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "accel/accelerator.hpp"
#include "accel/options.hpp"

namespace accel {

namespace detail {
struct ProcessState;
}

struct PartialStateOptions {
  // Run on the CPU even where CUDA is available (also ACCELERATE_USE_CPU).
  bool cpu = false;
  // How long a collective may wait (InitProcessGroupKwargs' timeout); used when
  // this PartialState creates the process group.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

// Accelerate's accelerate.utils.set_seed without an accelerator: seeds
// LibTorch's CPU and CUDA generators with seed (add the process index first
// for Accelerate's device_specific). deterministic: LibTorch uses
// deterministic algorithms from now on (operations without one fail); false
// leaves that setting as it is. Not collective.
void set_seed(uint64_t seed, bool deterministic = false);

class PartialState {
 public:
  // Reads the launch environment as an Accelerator does (RANK, WORLD_SIZE, ...,
  // or Open MPI's and Slurm's variables) and joins the world's process group,
  // creating it if no PartialState or Accelerator of this process holds one:
  // collective then. Throws InvalidArgument (a bad variable, named), Timeout (a
  // peer never joined, the ranks named), State (this process's live group was
  // made for another device or store).
  explicit PartialState(const PartialStateOptions& options = {});

  int process_index() const;
  int local_process_index() const;
  int num_processes() const;
  bool is_main_process() const { return process_index() == 0; }
  bool is_local_main_process() const { return local_process_index() == 0; }
  bool is_last_process() const { return process_index() == num_processes() - 1; }
  // Whether more than one process runs (Accelerate's use_distributed).
  bool use_distributed() const { return num_processes() > 1; }
  DistributedType distributed_type() const;
  c10::Device device() const;
  // The timeout the process group uses (the first user's).
  std::chrono::milliseconds timeout() const;

  // Which of n items this process takes, as Accelerator::split_range. Not collective.
  Accelerator::SplitRange split_range(int64_t n, bool apply_padding = false) const;
  // Blocks until every process arrives. Collective.
  void wait_for_everyone();

 private:
  std::shared_ptr<detail::ProcessState> state_;
};

}  // namespace accel
