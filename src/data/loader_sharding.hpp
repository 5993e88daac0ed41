// How one epoch's samples become this process's batches, with Accelerate's
// semantics: BatchSamplerShard for map-style datasets (shard_batches) and
// IterableDatasetShard for streams (StreamShard).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace accel::detail {

using Batches = std::vector<std::vector<int64_t>>;

struct ShardSpec {
  // With split_batches: the global batch, cut into num_processes slices. 0: the
  // batches come from a batch sampler without a batch size (Accelerate's
  // batch_sampler.batch_size is None): sizes vary, no split, no even_batches.
  int64_t batch_size = 1;
  bool drop_last = false;
  int num_processes = 1;
  int process_index = 0;
  // Complete the last round from the start of the epoch so every process gets
  // the same number of full batches (Accelerate's default).
  bool even_batches = true;
  bool split_batches = false;
};

// Throws when spec cannot shard (bad sizes, split batch not divisible, a
// batch sampler without a batch size under split_batches or even_batches).
void validate(const ShardSpec& spec);

struct ShardPlan {
  Batches batches;  // this process's batches, in order
};

// `order` cut into batches of spec.batch_size (the short last one dropped
// with drop_last): PyTorch's BatchSampler over a sampler.
Batches batch_sampler(const std::vector<int64_t>& order, const ShardSpec& spec);

// Accelerate's BatchSamplerShard over the batch sampler's batches (any sizes):
// without split_batches, batches go to processes 0, 1, ..., P-1, 0, ... in
// turn, a round only when its last batch is full (or sizes vary); with it,
// every full batch is cut into P slices. The last round is completed from the
// start of the epoch (even_batches) or left short. Returns the batches of
// spec.process_index. One process takes every batch as is.
ShardPlan shard_batch_list(const Batches& batches, const ShardSpec& spec);
// shard_batch_list(batch_sampler(order, spec), spec).
ShardPlan shard_batches(const std::vector<int64_t>& order, const ShardSpec& spec);

// Accelerate's len(BatchSamplerShard) for a batch sampler of num_batches
// batches. It is what every process reports, and not always what it yields:
// with split_batches the length is the sampler's even where even_batches=false
// leaves a process without a slice of the short last batch.
int64_t shard_length(int64_t num_batches, const ShardSpec& spec);

// Accelerate's IterableDatasetShard over a stream of T: every process reads
// the whole stream; of each run of batch_size * P elements (batch_size with
// split_batches) this process keeps its slice. The last, short run is padded
// with the stream's first run unless drop_last. One process keeps everything.
template <class T>
class StreamShard {
 public:
  explicit StreamShard(const ShardSpec& spec) : spec_(spec) {
    validate(spec);
    const int64_t P = spec.num_processes;
    run_size_ = spec.split_batches ? spec.batch_size : spec.batch_size * P;
    slice_size_ = spec.split_batches ? spec.batch_size / P : spec.batch_size;
    if (P == 1) run_size_ = slice_size_ = spec.batch_size;
  }

  // Feeds the stream's next element; returns this process's batch when a run completes.
  std::optional<std::vector<T>> push(T element) {
    run_.push_back(std::move(element));
    if (static_cast<int64_t>(run_.size()) < run_size_) return std::nullopt;
    if (first_run_.empty()) first_run_ = run_;
    std::vector<T> run;
    run.swap(run_);
    return slice(run);
  }

  // The stream ended: this process's last batch, if the short run yields one.
  // *real_samples is the number of real (not repeated) elements in that run.
  std::optional<std::vector<T>> finish(int64_t* real_samples) {
    *real_samples = 0;
    if (run_.empty() || spec_.drop_last) return std::nullopt;
    std::vector<T> run;
    run.swap(run_);
    *real_samples = static_cast<int64_t>(run.size());
    if (spec_.num_processes == 1) return run;  // a single process keeps the short batch
    std::vector<T> filler = first_run_.empty() ? run : first_run_;
    while (static_cast<int64_t>(run.size()) < run_size_) run.insert(run.end(), filler.begin(), filler.end());
    return slice(run);
  }

 private:
  std::vector<T> slice(const std::vector<T>& run) const {
    auto begin = run.begin() + static_cast<std::ptrdiff_t>(spec_.process_index * slice_size_);
    return std::vector<T>(begin, begin + static_cast<std::ptrdiff_t>(slice_size_));
  }

  ShardSpec spec_;
  int64_t run_size_ = 1;
  int64_t slice_size_ = 1;
  std::vector<T> run_;
  std::vector<T> first_run_;
};

}  // namespace accel::detail
