// One epoch of one process's batches, as the prepared loader hands them out:
// from a map-style dataset (an index plan, read ahead by workers), from a
// stream (sharded as it is read), or dispatched from the main process.
#pragma once

#include <memory>
#include <optional>

#include "accel/data.hpp"
#include "data/loader_sharding.hpp"

namespace accel::detail {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // This process's next batch (host memory), or nullopt at the end of the epoch.
  virtual std::optional<Batch> next() = 0;
  // What GradientState::remainder becomes at the epoch's last batch, once
  // next() has returned it: the real samples of the last gathered round when
  // that round was padded (a stream, a dispatched batch); nullopt keeps the
  // value set at the start of the epoch.
  virtual std::optional<int64_t> final_remainder() const = 0;
  // Batches this epoch yields, or -1 when unknown (a stream).
  virtual int64_t size() const = 0;
};

struct EpochSpec {
  ShardSpec shard;
  uint64_t epoch = 0;
  bool shuffle = false;
  uint64_t shuffle_seed = 0;  // seeds this epoch's permutation (the caller adds the epoch where it should)
  // A user's batch sampler (fixed batches of indices); null: batches of
  // shard.batch_size over the epoch's order.
  std::shared_ptr<const Batches> batches;
  int num_workers = 0;
  int prefetch_factor = 2;
  bool pin_memory = false;  // page-locked host batches, for fast copies to CUDA
  int64_t skip = 0;         // batches skipped (not read where avoidable) at the start
  // Dealt to another world before a resume (DataLoader::Position::sampler_offset):
  // the first samples of the order (or of a stream), or the first batches of `batches`.
  int64_t skip_samples = 0;
  int64_t skip_sampler_batches = 0;
};

// The epoch's sample order: 0..n-1, or torch.randperm(n) from a generator
// seeded with shuffle_seed (PyTorch's RandomSampler).
std::vector<int64_t> epoch_order(int64_t n, const EpochSpec& spec);

std::unique_ptr<BatchSource> open_map_source(std::shared_ptr<Dataset> dataset, const EpochSpec& spec);
std::unique_ptr<BatchSource> open_stream_source(std::shared_ptr<IterableDataset> dataset, const EpochSpec& spec);
// Dispatching (Accelerate's DataLoaderDispatcher): the main process reads
// global batches from `global` (null on the other processes) and broadcasts
// them; every process keeps its slice of rows / P of each. The last batch, when
// its rows do not divide by P, is completed with the first batch's first rows
// so each process gets rows / P + 1 (range(10), batch 4, 2 processes: [8] and
// [9] at the end, no padding).
std::unique_ptr<BatchSource> open_dispatch_source(std::unique_ptr<BatchSource> global, const ShardSpec& shard,
                                                  BatchBroadcast broadcast);

}  // namespace accel::detail
