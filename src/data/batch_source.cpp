#include "data/batch_source.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <numeric>

#include "accel/error.hpp"
#include "data/prefetcher.hpp"

namespace accel::detail {

std::vector<int64_t> epoch_order(int64_t n, const EpochSpec& spec) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (!spec.shuffle) {
    std::iota(order.begin(), order.end(), 0);
    return order;
  }
  // Same seed on every process, so all agree on the permutation.
  auto generator = at::make_generator<at::CPUGeneratorImpl>(spec.shuffle_seed);
  at::Tensor permutation = at::randperm(n, generator, at::kLong);
  std::copy(permutation.data_ptr<int64_t>(), permutation.data_ptr<int64_t>() + n, order.begin());
  return order;
}

namespace {

Batch pinned(Batch batch, bool pin) {
  if (pin) {
    for (auto& t : batch) t = t.pin_memory();
  }
  return batch;
}

class MapSource : public BatchSource {
 public:
  MapSource(std::shared_ptr<Dataset> dataset, const EpochSpec& spec) : dataset_(std::move(dataset)), spec_(spec) {
    if (spec.batches) {
      const auto first = std::min<size_t>(static_cast<size_t>(spec.skip_sampler_batches), spec.batches->size());
      plan_ = first == 0 ? shard_batch_list(*spec.batches, spec.shard)
                         : shard_batch_list(
                               Batches(spec.batches->begin() + static_cast<std::ptrdiff_t>(first), spec.batches->end()),
                               spec.shard);
    } else {
      std::vector<int64_t> order = epoch_order(dataset_->size(), spec);
      order.erase(order.begin(), order.begin() + std::min<std::ptrdiff_t>(spec.skip_samples, order.size()));
      plan_ = shard_batches(order, spec.shard);
    }
    cursor_ = static_cast<size_t>(std::min<int64_t>(spec.skip, static_cast<int64_t>(plan_.batches.size())));
    int64_t left = static_cast<int64_t>(plan_.batches.size() - cursor_);
    if (spec.num_workers > 0 && left > 0) {
      size_t first = cursor_;
      prefetcher_ =
          std::make_unique<Prefetcher>(spec.num_workers, spec.prefetch_factor, left,
                                       [this, first](int64_t k) { return read(first + static_cast<size_t>(k)); });
    }
  }

  std::optional<Batch> next() override {
    if (cursor_ == plan_.batches.size()) return std::nullopt;
    size_t k = cursor_++;
    return prefetcher_ ? prefetcher_->next() : read(k);
  }
  std::optional<int64_t> final_remainder() const override { return std::nullopt; }
  int64_t size() const override { return static_cast<int64_t>(plan_.batches.size()); }

 private:
  Batch read(size_t k) const { return pinned(dataset_->get_batch(plan_.batches[k]), spec_.pin_memory); }

  std::shared_ptr<Dataset> dataset_;
  EpochSpec spec_;
  ShardPlan plan_;
  size_t cursor_ = 0;
  std::unique_ptr<Prefetcher> prefetcher_;  // last: stopped before the plan goes
};

Batch collate(const std::vector<Sample>& samples) {
  Batch batch;
  for (size_t f = 0; f < samples.front().size(); ++f) {
    std::vector<at::Tensor> column;
    column.reserve(samples.size());
    for (size_t s = 0; s < samples.size(); ++s) {
      require_arg(samples[s].size() == samples.front().size(),
                  "iterable dataset: a sample has " + std::to_string(samples[s].size()) + " fields, the first had " +
                      std::to_string(samples.front().size()));
      column.push_back(samples[s][f]);
    }
    batch.push_back(at::stack(column));
  }
  return batch;
}

class StreamSource : public BatchSource {
 public:
  StreamSource(std::shared_ptr<IterableDataset> stream, const EpochSpec& spec)
      : stream_(std::move(stream)), spec_(spec), shard_(spec.shard) {
    stream_->reset(spec.epoch);
    for (int64_t skipped = 0; skipped < spec.skip_samples && stream_->next(); ++skipped) {
    }
    for (int64_t skipped = 0; skipped < spec.skip && read_batch(); ++skipped) {
    }
  }

  std::optional<Batch> next() override {
    std::optional<std::vector<Sample>> samples = read_batch();
    if (!samples) return std::nullopt;
    return pinned(collate(*samples), spec_.pin_memory);
  }
  std::optional<int64_t> final_remainder() const override { return remainder_; }
  int64_t size() const override { return -1; }

 private:
  // Reads the stream until this process's next batch is complete.
  std::optional<std::vector<Sample>> read_batch() {
    while (!exhausted_) {
      std::optional<Sample> sample = stream_->next();
      if (!sample) {
        exhausted_ = true;
        int64_t real = 0;
        auto last = shard_.finish(&real);
        // Filler only exists when the short run was padded (several processes).
        // Accelerate leaves -1 here (a stream has no length), so its
        // gather_for_metrics keeps the filler; we know the real count.
        if (last && spec_.shard.num_processes > 1) remainder_ = real;
        return last;
      }
      if (auto batch = shard_.push(std::move(*sample))) return batch;
    }
    return std::nullopt;
  }

  std::shared_ptr<IterableDataset> stream_;
  EpochSpec spec_;
  StreamShard<Sample> shard_;
  bool exhausted_ = false;
  std::optional<int64_t> remainder_;
};

at::Tensor rows(const at::Tensor& t, int64_t begin, int64_t count) { return t.narrow(0, begin, count).contiguous(); }

class DispatchSource : public BatchSource {
 public:
  DispatchSource(std::unique_ptr<BatchSource> global, const ShardSpec& shard, BatchBroadcast broadcast)
      : global_(std::move(global)), shard_(shard), broadcast_(std::move(broadcast)) {}

  std::optional<Batch> next() override {
    std::optional<Batch> batch;
    if (global_) batch = next_global();
    batch = broadcast_(std::move(batch));
    if (!batch) return std::nullopt;
    // The last field is internal: the real-row count, negative for the last batch.
    const int64_t tag = batch->back().item<int64_t>();
    batch->pop_back();
    const bool last = tag < 0;
    const int64_t real = last ? -tag - 1 : tag;
    const int64_t P = shard_.num_processes;
    int64_t slice = real / P;
    if (last && !shard_.drop_last) {
      remainder_ = real;
      if (real % P != 0) ++slice;  // the first rows appended by next_global complete it
    }
    Batch mine;
    for (const auto& t : *batch) mine.push_back(rows(t, slice * shard_.process_index, slice));
    return mine;
  }
  std::optional<int64_t> final_remainder() const override { return remainder_; }
  int64_t size() const override { return global_ ? global_->size() : -1; }

 private:
  // Main process: the next global batch, tagged with its row count (negative
  // when it is the epoch's last); a last one whose rows do not divide by P
  // gets the first batch's first rows appended, repeated for a tiny dataset.
  std::optional<Batch> next_global() {
    std::optional<Batch> batch = ahead_ ? std::move(ahead_) : global_->next();
    if (!batch) return std::nullopt;
    ahead_ = global_->next();
    const bool last = !ahead_.has_value();
    const int64_t P = shard_.num_processes;
    const int64_t real = batch->front().size(0);
    if (!first_) first_ = *batch;
    if (last && !shard_.drop_last && real % P != 0) {
      const int64_t target = (real / P + 1) * P;
      for (size_t f = 0; f < batch->size(); ++f) {
        std::vector<at::Tensor> parts{(*batch)[f]};
        // Variable-length batches (padded per batch) cannot be completed row-wise.
        require_arg((*batch)[f].sizes().slice(1) == (*first_)[f].sizes().slice(1),
                    "dispatch_batches: field " + std::to_string(f) + " of the short last batch has shape " +
                        c10::str((*batch)[f].sizes()) + " and of the first batch " + c10::str((*first_)[f].sizes()) +
                        ": rows of different widths cannot complete the last batch (pad to a fixed max_length, "
                        "or use drop_last or dispatch_batches=false)");
        for (int64_t have = real; have < target;) {
          int64_t take = std::min(target - have, (*first_)[f].size(0));
          parts.push_back(rows((*first_)[f], 0, take));
          have += take;
        }
        (*batch)[f] = at::cat(parts);
      }
    }
    batch->push_back(at::scalar_tensor(last ? -real - 1 : real, at::kLong));
    return batch;
  }

  std::unique_ptr<BatchSource> global_;
  ShardSpec shard_;
  BatchBroadcast broadcast_;
  std::optional<Batch> first_;
  std::optional<Batch> ahead_;  // the main process reads one batch ahead to know the last
  std::optional<int64_t> remainder_;
};

}  // namespace

std::unique_ptr<BatchSource> open_map_source(std::shared_ptr<Dataset> dataset, const EpochSpec& spec) {
  return std::make_unique<MapSource>(std::move(dataset), spec);
}

std::unique_ptr<BatchSource> open_stream_source(std::shared_ptr<IterableDataset> dataset, const EpochSpec& spec) {
  return std::make_unique<StreamSource>(std::move(dataset), spec);
}

std::unique_ptr<BatchSource> open_dispatch_source(std::unique_ptr<BatchSource> global, const ShardSpec& shard,
                                                  BatchBroadcast broadcast) {
  validate(shard);
  return std::make_unique<DispatchSource>(std::move(global), shard, std::move(broadcast));
}

}  // namespace accel::detail
