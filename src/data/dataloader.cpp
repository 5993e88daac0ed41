#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <exception>
#include <utility>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "accel/logging.hpp"
#include "core/trace_span.hpp"
#include "data/batch_source.hpp"

namespace accel {

namespace {

void check_options(const DataLoaderOptions& options, bool batch_sampler = false) {
  require_arg(options.batch_size > 0 || (batch_sampler && options.batch_size == 0),
              "DataLoader: batch_size must be positive" + std::string(batch_sampler ? " or 0 (sizes vary)" : "") +
                  ", got " + std::to_string(options.batch_size));
  require_arg(options.num_workers >= 0,
              "DataLoader: num_workers must be >= 0, got " + std::to_string(options.num_workers));
  require_arg(options.num_workers <= kMaxNumWorkers,
              "DataLoader: num_workers must be <= " + std::to_string(kMaxNumWorkers) + ", got " +
                  std::to_string(options.num_workers));
  require_arg(options.prefetch_factor >= 1,
              "DataLoader: prefetch_factor must be >= 1, got " + std::to_string(options.prefetch_factor));
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

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, std::vector<std::vector<int64_t>> batches,
                       const DataLoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options) {
  require_arg(dataset_ != nullptr, "DataLoader: the dataset is null");
  check_options(options_, /*batch_sampler=*/true);
  require_arg(!options_.shuffle, "DataLoader: shuffle=true with a batch sampler (the sampler fixes the order)");
  batch_sampler_ = checked_batches(std::move(batches), "DataLoader");
}

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, BatchesForEpoch batches_for_epoch,
                       const DataLoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options) {
  require_arg(dataset_ != nullptr, "DataLoader: the dataset is null");
  require_arg(static_cast<bool>(batches_for_epoch), "DataLoader: the batch sampler is empty");
  check_options(options_, /*batch_sampler=*/true);
  require_arg(!options_.shuffle, "DataLoader: shuffle=true with a batch sampler (the sampler fixes the order)");
  batch_sampler_ = checked_batches(batches_for_epoch(0), "DataLoader");
  batches_for_epoch_ = std::move(batches_for_epoch);
}

std::shared_ptr<const DataLoader::Batches> DataLoader::checked_batches(Batches batches, const char* what) const {
  const int64_t size = dataset_->size();
  for (size_t b = 0; b < batches.size(); ++b) {
    require_arg(!batches[b].empty(), std::string(what) + ": batch sampler batch " + std::to_string(b) + " is empty");
    for (int64_t index : batches[b]) {
      require_arg(index >= 0 && index < size, std::string(what) + ": batch sampler batch " + std::to_string(b) +
                                                  " holds index " + std::to_string(index) +
                                                  ", outside the dataset's [0, " + std::to_string(size) + ")");
    }
  }
  return std::make_shared<const Batches>(std::move(batches));
}

void DataLoader::set_batches(Batches batches) {
  require(batch_sampler_ != nullptr, ErrorCode::State,
          "set_batches: the loader was not made from a batch sampler (batches of batch_size over the dataset)");
  require(source_ == nullptr, ErrorCode::State,
          "set_batches: an epoch is in progress (" + std::to_string(yielded_) +
              " batches taken); set the batches before the epoch's first batch");
  batch_sampler_ = checked_batches(std::move(batches), "set_batches");
  batches_for_epoch_ = nullptr;
}

void DataLoader::refresh_batches() {
  if (!batches_for_epoch_ || batches_epoch_ == epoch_) return;
  auto batches = checked_batches(batches_for_epoch_(epoch_), "DataLoader");
  require(batches->size() == batch_sampler_->size(), ErrorCode::InvalidArgument,
          "DataLoader: the batch sampler gave " + std::to_string(batches->size()) + " batches for epoch " +
              std::to_string(epoch_) + " and " + std::to_string(batch_sampler_->size()) + " for epoch " +
              std::to_string(batches_epoch_));
  batch_sampler_ = std::move(batches);
  batches_epoch_ = epoch_;
}

DataLoader::~DataLoader() { close_source(); }

void DataLoader::open_source(std::unique_ptr<detail::BatchSource> source) {
  const int64_t remainder = epoch_remainder();  // Accelerate's begin(): known from the epoch's start
  source_ = std::move(source);
  answer(false, remainder, Membership::Enter);
}

void DataLoader::close_source() {
  if (!source_) return;
  source_.reset();
  answer(false, -1, Membership::Leave);  // an outer loop's loader answers again
}

void DataLoader::answer(bool end_of_dataloader, int64_t remainder, Membership membership) {
  GradientState* gradient = placement_.gradient_state.get();
  std::unique_lock<std::mutex> lock;
  if (gradient) lock = std::unique_lock<std::mutex>(gradient->open_loaders_mutex);
  end_of_dataloader_ = end_of_dataloader;
  remainder_ = remainder;
  if (!gradient) return;
  auto& open = gradient->open_loaders;
  if (membership == Membership::Enter) open.push_back(this);
  if (membership == Membership::Leave) open.erase(std::remove(open.begin(), open.end(), this), open.end());
  // Accelerate's GradientState answers for its active_dataloader, the last
  // to open an epoch: an evaluation loop inside a training epoch does not
  // change what the training loop's next step reads once it has ended.
  const DataLoader* active = open.empty() ? nullptr : open.back();
  gradient->end_of_dataloader = active && active->end_of_dataloader_;
  gradient->remainder = active ? active->remainder_ : -1;  // -1 outside an epoch, as Accelerate
}

int64_t DataLoader::open_index() const {
  const GradientState* gradient = placement_.gradient_state.get();
  if (!source_ || !gradient) return -1;
  std::lock_guard<std::mutex> lock(gradient->open_loaders_mutex);
  const auto& open = gradient->open_loaders;
  auto it = std::find(open.begin(), open.end(), this);
  return it == open.end() ? -1 : static_cast<int64_t>(it - open.begin());
}

uint64_t DataLoader::shuffle_seed(bool agree) const {
  if (placement_.use_seedable_sampler) {
    uint64_t base = placement_.data_seed ? *placement_.data_seed : at::detail::getDefaultCPUGenerator().current_seed();
    return base + epoch_;
  }
  if (options_.seed) return *options_.seed + epoch_;
  // No generator of its own: draw a seed from the global one, as PyTorch's
  // RandomSampler does, so set_seed decides the order; processes take the
  // main process's draw in case their global generators have drifted apart.
  auto drawn = static_cast<uint64_t>(at::empty({}, at::kLong).random_().item<int64_t>());
  return agree && placement_.agree_seed ? placement_.agree_seed(drawn) : drawn;
}

int64_t DataLoader::epoch_remainder() const {
  if (!prepared_ || !dataset_ || options_.drop_last || options_.batch_size == 0) return -1;
  const int64_t total = placement_.split_batches ? options_.batch_size : options_.batch_size * placement_.num_processes;
  return std::max<int64_t>(0, dataset_->size() - skipped_samples()) % total;
}

std::unique_ptr<detail::BatchSource> DataLoader::open_epoch() const {
  if (placement_.synchronize_rng) placement_.synchronize_rng();
  detail::EpochSpec spec;
  spec.shard.batch_size = options_.batch_size;
  spec.shard.drop_last = options_.drop_last;
  spec.shard.num_processes = placement_.num_processes;
  spec.shard.process_index = placement_.process_index;
  spec.shard.split_batches = placement_.split_batches;
  spec.shard.even_batches = placement_.even_batches;
  spec.epoch = epoch_;
  spec.shuffle = options_.shuffle;
  spec.batches = batch_sampler_;
  spec.num_workers = options_.num_workers;
  spec.prefetch_factor = options_.prefetch_factor;
  spec.pin_memory = placement_.device && placement_.device->is_cuda();
  spec.skip = resume_skip_;
  // A resumed epoch's batches already dealt to another world: whole batches of
  // a user's batch sampler, else the first samples of the epoch's order.
  if (batch_sampler_) {
    spec.skip_sampler_batches = sampler_offset_;
  } else {
    spec.skip_samples = skipped_samples();
  }

  if (placement_.dispatch) {
    std::unique_ptr<detail::BatchSource> global;
    if (placement_.process_index == 0) {
      // The main process reads whole global batches as a single process would:
      // without split_batches, num_processes batches at a time.
      detail::EpochSpec whole = spec;
      whole.shard.num_processes = 1;
      whole.shard.process_index = 0;
      whole.skip_sampler_batches = 0;  // the rounds below start after them
      const int64_t P = spec.shard.num_processes;
      if (!spec.shard.split_batches && batch_sampler_) {
        auto rounds = std::make_shared<std::vector<std::vector<int64_t>>>();
        const auto first = static_cast<size_t>(std::min<int64_t>(sampler_offset_, batch_sampler_->size()));
        for (size_t b = first; b < batch_sampler_->size(); b += static_cast<size_t>(P)) {
          if (spec.shard.drop_last && b + static_cast<size_t>(P) > batch_sampler_->size()) break;
          std::vector<int64_t> round;
          for (size_t k = b; k < std::min(batch_sampler_->size(), b + static_cast<size_t>(P)); ++k) {
            round.insert(round.end(), (*batch_sampler_)[k].begin(), (*batch_sampler_)[k].end());
          }
          rounds->push_back(std::move(round));
        }
        whole.batches = std::move(rounds);
      } else if (!spec.shard.split_batches) {
        whole.shard.batch_size *= P;
      }
      if (dataset_ && options_.shuffle) whole.shuffle_seed = shuffle_seed(/*agree=*/false);  // only it reads
      global = dataset_ ? detail::open_map_source(dataset_, whole) : detail::open_stream_source(stream_, whole);
    }
    return detail::open_dispatch_source(std::move(global), spec.shard, placement_.dispatch);
  }
  if (dataset_ && options_.shuffle) spec.shuffle_seed = shuffle_seed(/*agree=*/true);
  return dataset_ ? detail::open_map_source(dataset_, spec) : detail::open_stream_source(stream_, spec);
}

size_t DataLoader::next_batch_size_in_fields() {
  if (!source_) {
    refresh_batches();
    std::unique_ptr<detail::BatchSource> source = open_epoch();
    std::optional<Batch> first = source->next();  // a failure leaves the loader as it was
    open_source(std::move(source));
    lookahead_ = std::move(first);
    yielded_ = resume_skip_;
    resume_skip_ = 0;
  }
  return lookahead_ && !lookahead_error_ ? lookahead_->size() : 0;
}

std::optional<Batch> DataLoader::next() {
  ACCEL_TRACE_SPAN("accel::loader::next");
  if (!source_) next_batch_size_in_fields();  // opens the epoch and reads its first batch
  if (lookahead_error_) {
    // Reading ahead failed: report it now, at the batch it belongs to. The
    // epoch is abandoned; the next call starts it again.
    std::exception_ptr error = std::exchange(lookahead_error_, nullptr);
    close_source();
    yielded_ = 0;
    std::rethrow_exception(error);
  }
  if (!lookahead_) {
    progress_.reset();  // ends the bar's line
    close_source();
    yielded_ = 0;
    skipped_pass_ = 0;
    sampler_offset_ = 0;
    ++epoch_;
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
  advance_progress();
  const bool last = !lookahead_.has_value() && !lookahead_error_;
  std::optional<int64_t> final = last ? source_->final_remainder() : std::nullopt;
  answer(last, final ? *final : remainder_, Membership::Keep);
  if (placement_.device && *placement_.device != c10::Device(c10::kCPU)) {
    for (auto& t : batch) t = t.to(*placement_.device, /*non_blocking=*/true);
  }
  return batch;
}

int64_t DataLoader::num_batches() const {
  require(dataset_ != nullptr, ErrorCode::State,
          "num_batches: the loader reads an iterable dataset, whose length is unknown");
  const int64_t B = options_.batch_size;
  const int64_t n = dataset_->size();
  const int64_t left = std::max<int64_t>(0, n - skipped_samples());  // a resumed epoch: what the offset left
  int64_t count = batch_sampler_ ? std::max<int64_t>(0, static_cast<int64_t>(batch_sampler_->size()) - sampler_offset_)
                                 : (options_.drop_last ? left / B : (left + B - 1) / B);
  const int64_t P = placement_.num_processes;
  if (prepared_ && P > 1) {
    detail::ShardSpec spec;
    spec.batch_size = B;
    spec.drop_last = options_.drop_last;
    spec.num_processes = placement_.num_processes;
    spec.process_index = placement_.process_index;
    spec.split_batches = placement_.split_batches;
    spec.even_batches = placement_.even_batches;
    if (!placement_.dispatch) {
      count = detail::shard_length(count, spec);
    } else if (!spec.split_batches) {
      count = options_.drop_last ? count / P : (count + P - 1) / P;  // Accelerate's DataLoaderDispatcher
    }
  }
  return std::max<int64_t>(0, count - skipped_pass_);
}

void DataLoader::set_epoch(uint64_t epoch) {
  progress_.reset();
  epoch_ = epoch;
  close_source();
  lookahead_.reset();
  lookahead_error_ = nullptr;
  yielded_ = 0;
  resume_skip_ = 0;
  skipped_pass_ = 0;
  sampler_offset_ = 0;
}

DataLoader::Position DataLoader::position() const {
  if (!source_) return Position{epoch_, resume_skip_, sampler_offset_};
  return Position{epoch_, yielded_, sampler_offset_};
}

void DataLoader::resume_from(const Position& position) {
  require_arg(position.batches_consumed >= 0,
              "DataLoader: batches_consumed must not be negative, got " + std::to_string(position.batches_consumed));
  require_arg(position.sampler_offset >= 0,
              "DataLoader: sampler_offset must not be negative, got " + std::to_string(position.sampler_offset));
  set_epoch(position.epoch);
  resume_skip_ = position.batches_consumed;
  sampler_offset_ = position.sampler_offset;
}

std::unique_ptr<DataLoader> DataLoader::skip_first_batches(int64_t num_batches) const {
  require_arg(num_batches >= 0,
              "skip_first_batches: num_batches must not be negative, got " + std::to_string(num_batches));
  // A batch sampler's loader may have no batch size (sizes vary): only its constructor allows that.
  std::unique_ptr<DataLoader> copy = batch_sampler_ ? std::make_unique<DataLoader>(dataset_, Batches{}, options_)
                                     : dataset_     ? std::make_unique<DataLoader>(dataset_, options_)
                                                    : std::make_unique<DataLoader>(stream_, options_);
  copy->batch_sampler_ = batch_sampler_;
  copy->batches_for_epoch_ = batches_for_epoch_;
  copy->batches_epoch_ = batches_epoch_;
  copy->skipped_pass_ = num_batches;
  copy->placement_ = placement_;
  copy->prepared_ = prepared_;
  copy->epoch_ = epoch_;
  copy->progress_description_ = progress_description_;
  copy->resume_skip_ = num_batches;
  return copy;
}

void DataLoader::shard(const ShardPlacement& placement) {
  detail::ShardSpec spec;
  spec.batch_size = options_.batch_size;
  spec.num_processes = placement.num_processes;
  spec.process_index = placement.process_index;
  spec.split_batches = placement.split_batches;
  spec.even_batches = placement.even_batches;
  // Names a bad process index, an indivisible split batch or a sizeless batch
  // sampler under even_batches now, not mid-epoch. A dispatched loader's main
  // process reads whole batches, so only the split is checked for it.
  if (placement.dispatch) spec.even_batches = false;
  detail::validate(spec);
  close_source();  // leaves the open loaders of the state it was prepared with
  placement_ = placement;
  prepared_ = true;
  lookahead_.reset();
}

}  // namespace accel
