// How one epoch's sample order becomes this process's batches, with
// Accelerate's semantics for batch-sampler sharding (split_batches=false).
#pragma once

#include <cstdint>
#include <vector>

namespace accel::detail {

struct ShardSpec {
  int64_t batch_size = 1;
  bool drop_last = false;
  int num_processes = 1;
  int process_index = 0;
  // Complete the last round from the start of the epoch so every process gets
  // the same number of full batches (Accelerate's default).
  bool even_batches = true;
};

struct ShardPlan {
  std::vector<std::vector<int64_t>> batches;  // this process's batches, in order
  // Samples of the epoch's last round, over all processes, that are real rather
  // than repeated filler; 0 when the last round holds no filler.
  int64_t last_round_real_samples = 0;
};

// Batches of `order` in turn go to processes 0, 1, ..., num_processes-1, 0, ...
// Returns the batches of spec.process_index. One process takes every batch as is.
ShardPlan shard_batches(const std::vector<int64_t>& order, const ShardSpec& spec);

}  // namespace accel::detail
