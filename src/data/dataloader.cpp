#include <ATen/ATen.h>

#include <exception>
#include <utility>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "data/batch_source.hpp"

namespace accel {

namespace {

void check_options(const DataLoaderOptions& options) {
  require_arg(options.batch_size > 0, "DataLoader: batch_size must be positive, got " +
                                          std::to_string(options.batch_size));
  require_arg(options.num_workers >= 0, "DataLoader: num_workers must be >= 0, got " +
                                            std::to_string(options.num_workers));
  require_arg(options.num_workers <= kMaxNumWorkers, "DataLoader: num_workers must be <= " +
                                                         std::to_string(kMaxNumWorkers) + ", got " +
                                                         std::to_string(options.num_workers));
  require_arg(options.prefetch_factor >= 1, "DataLoader: prefetch_factor must be >= 1, got " +
                                                std::to_string(options.prefetch_factor));
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, const DataLoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options) {
  require_arg(dataset_ != nullptr, "DataLoader: the dataset is null");
  check_options(options_);
}

DataLoader::DataLoader(std::shared_ptr<IterableDataset> dataset, const DataLoaderOptions& options)
    : stream_(std::move(dataset)), options_(options) {
  require_arg(stream_ != nullptr, "DataLoader: the dataset is null");
  check_options(options_);
  require_arg(!options_.shuffle, "DataLoader: shuffle=true with an iterable dataset (a stream shuffles itself)");
}

DataLoader::~DataLoader() = default;

std::unique_ptr<detail::BatchSource> DataLoader::open_epoch() const {
  detail::EpochSpec spec;
  spec.shard.batch_size = options_.batch_size;
  spec.shard.drop_last = options_.drop_last;
  spec.shard.num_processes = placement_.num_processes;
  spec.shard.process_index = placement_.process_index;
  spec.shard.split_batches = placement_.split_batches;
  spec.shard.even_batches = placement_.even_batches;
  spec.epoch = epoch_;
  spec.shuffle = options_.shuffle;
  spec.seed = options_.seed;
  spec.num_workers = options_.num_workers;
  spec.prefetch_factor = options_.prefetch_factor;
  spec.pin_memory = placement_.device && placement_.device->is_cuda();
  spec.skip = resume_skip_;

  if (placement_.dispatch && placement_.num_processes > 1) {
    std::unique_ptr<detail::BatchSource> global;
    if (placement_.process_index == 0) {
      // The main process reads whole global batches as a single process would.
      detail::EpochSpec whole = spec;
      whole.shard.num_processes = 1;
      whole.shard.process_index = 0;
      if (!spec.shard.split_batches) whole.shard.batch_size *= spec.shard.num_processes;
      global = dataset_ ? detail::open_map_source(dataset_, whole) : detail::open_stream_source(stream_, whole);
    }
    return detail::open_dispatch_source(std::move(global), spec.shard, placement_.dispatch);
  }
  return dataset_ ? detail::open_map_source(dataset_, spec) : detail::open_stream_source(stream_, spec);
}

size_t DataLoader::next_batch_size_in_fields() {
  if (!source_) {
    std::unique_ptr<detail::BatchSource> source = open_epoch();
    std::optional<Batch> first = source->next();  // a failure leaves the loader as it was
    source_ = std::move(source);
    lookahead_ = std::move(first);
    yielded_ = resume_skip_;
    resume_skip_ = 0;
  }
  return lookahead_ && !lookahead_error_ ? lookahead_->size() : 0;
}

std::optional<Batch> DataLoader::next() {
  GradientState* gradient = placement_.gradient_state.get();
  if (!source_) next_batch_size_in_fields();  // opens the epoch and reads its first batch
  if (lookahead_error_) {
    // Reading ahead failed: report it now, at the batch it belongs to. The
    // epoch is abandoned; the next call starts it again.
    std::exception_ptr error = std::exchange(lookahead_error_, nullptr);
    source_.reset();
    yielded_ = 0;
    std::rethrow_exception(error);
  }
  if (!lookahead_) {
    source_.reset();
    yielded_ = 0;
    ++epoch_;
    if (gradient) gradient->end_of_dataloader = false;
    return std::nullopt;
  }
  Batch batch = std::move(*lookahead_);
  try {
    lookahead_ = source_->next();
  } catch (...) {
    lookahead_.reset();
    lookahead_error_ = std::current_exception();
  }
  ++yielded_;
  if (gradient) {
    gradient->end_of_dataloader = !lookahead_.has_value() && !lookahead_error_;
    gradient->remainder = gradient->end_of_dataloader ? source_->remainder() : 0;
  }
  if (placement_.device && *placement_.device != c10::Device(c10::kCPU)) {
    for (auto& t : batch) t = t.to(*placement_.device, /*non_blocking=*/true);
  }
  return batch;
}

int64_t DataLoader::num_batches() const {
  require(dataset_ != nullptr, ErrorCode::State,
          "num_batches: the loader reads an iterable dataset, whose length is unknown");
  if (source_ && source_->size() >= 0) return source_->size();
  detail::EpochSpec spec;
  spec.shard.batch_size = options_.batch_size;
  spec.shard.drop_last = options_.drop_last;
  spec.shard.num_processes = placement_.num_processes;
  spec.shard.process_index = placement_.process_index;
  spec.shard.split_batches = placement_.split_batches;
  spec.shard.even_batches = placement_.even_batches;
  if (placement_.dispatch && placement_.num_processes > 1) {
    spec.shard.num_processes = 1;
    spec.shard.process_index = 0;
    if (!placement_.split_batches) spec.shard.batch_size *= placement_.num_processes;
  }
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  return static_cast<int64_t>(detail::shard_batches(order, spec.shard).batches.size());
}

void DataLoader::set_epoch(uint64_t epoch) {
  epoch_ = epoch;
  source_.reset();
  lookahead_.reset();
  lookahead_error_ = nullptr;
  yielded_ = 0;
  resume_skip_ = 0;
}

DataLoader::Position DataLoader::position() const {
  if (!source_) return Position{epoch_, resume_skip_};
  return Position{epoch_, yielded_};
}

void DataLoader::resume_from(const Position& position) {
  require_arg(position.batches_consumed >= 0,
              "DataLoader: batches_consumed must not be negative, got " + std::to_string(position.batches_consumed));
  set_epoch(position.epoch);
  resume_skip_ = position.batches_consumed;
}

std::unique_ptr<DataLoader> DataLoader::skip_first_batches(int64_t num_batches) const {
  require_arg(num_batches >= 0, "skip_first_batches: num_batches must not be negative, got " +
                                    std::to_string(num_batches));
  std::unique_ptr<DataLoader> copy = dataset_ ? std::make_unique<DataLoader>(dataset_, options_)
                                              : std::make_unique<DataLoader>(stream_, options_);
  copy->placement_ = placement_;
  copy->prepared_ = prepared_;
  copy->epoch_ = epoch_;
  copy->resume_skip_ = num_batches;
  return copy;
}

void DataLoader::shard(const ShardPlacement& placement) {
  detail::ShardSpec spec;
  spec.batch_size = options_.batch_size;
  spec.num_processes = placement.num_processes;
  spec.process_index = placement.process_index;
  spec.split_batches = placement.split_batches;
  detail::validate(spec);  // names a bad process index or an indivisible split batch now, not mid-epoch
  placement_ = placement;
  prepared_ = true;
  source_.reset();
  lookahead_.reset();
}

}  // namespace accel
