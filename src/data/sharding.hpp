// How one epoch's samples become this process's batches, with Accelerate's
// semantics: BatchSamplerShard for map-style datasets (shard_batches) and
// IterableDatasetShard for streams (StreamShard).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace accel::detail {

struct ShardSpec {
  int64_t batch_size = 1;  // with split_batches: the global batch, cut into num_processes slices
  bool drop_last = false;
  int num_processes = 1;
  int process_index = 0;
  // Complete the last round from the start of the epoch so every process gets
  // the same number of full batches (Accelerate's default).
  bool even_batches = true;
  bool split_batches = false;
};

// Throws when spec cannot shard (bad sizes, split batch not divisible).
void validate(const ShardSpec& spec);

struct ShardPlan {
  std::vector<std::vector<int64_t>> batches;  // this process's batches, in order
  // Samples of the epoch's last round, over all processes, that are real rather
  // than repeated filler; 0 when the last round holds no filler.
  int64_t last_round_real_samples = 0;
};

// Without split_batches, batches of `order` go to processes 0, 1, ..., P-1, 0, ...
// in turn; with it, every batch is cut into P slices. Returns the batches of
// spec.process_index. One process takes every batch as is.
ShardPlan shard_batches(const std::vector<int64_t>& order, const ShardSpec& spec);

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
