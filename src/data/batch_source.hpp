// One epoch of one process's batches, as the prepared loader hands them out:
// from a map-style dataset (an index plan, read ahead by workers), from a
// stream (sharded as it is read), or dispatched from the main process.
#pragma once

#include <memory>
#include <optional>

#include "accel/data.hpp"
#include "data/sharding.hpp"

namespace accel::detail {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // This process's next batch (host memory), or nullopt at the end of the epoch.
  virtual std::optional<Batch> next() = 0;
  // Real samples in the epoch's last round when it holds filler, else 0.
  // Known from the start for a plan; for a stream once next() returned nullopt.
  virtual int64_t remainder() const = 0;
  // Batches this epoch yields, or -1 when unknown (a stream).
  virtual int64_t size() const = 0;
};

struct EpochSpec {
  ShardSpec shard;
  uint64_t epoch = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  int num_workers = 0;
  int prefetch_factor = 2;
  bool pin_memory = false;  // page-locked host batches, for fast copies to CUDA
  int64_t skip = 0;         // batches skipped (not read where avoidable) at the start
};

// The epoch's sample order: 0..n-1, or a permutation seeded with seed + epoch.
std::vector<int64_t> epoch_order(int64_t n, const EpochSpec& spec);

std::unique_ptr<BatchSource> open_map_source(std::shared_ptr<Dataset> dataset, const EpochSpec& spec);
std::unique_ptr<BatchSource> open_stream_source(std::shared_ptr<IterableDataset> dataset, const EpochSpec& spec);
// Dispatching: the main process reads global batches from `global` (null on
// the other processes), completes a short last one from the first unless
// drop_last, and broadcasts it; every process keeps its slice of the rows.
std::unique_ptr<BatchSource> open_dispatch_source(std::unique_ptr<BatchSource> global, const ShardSpec& shard,
                                                  BatchBroadcast broadcast);

}  // namespace accel::detail
