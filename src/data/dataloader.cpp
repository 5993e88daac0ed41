#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <numeric>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "data/sharding.hpp"

namespace accel {

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, const DataLoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options) {
  require_arg(dataset_ != nullptr, "DataLoader: the dataset is null");
  require_arg(options_.batch_size > 0, "DataLoader: batch_size must be positive, got " +
                                           std::to_string(options_.batch_size));
}

DataLoader::EpochPlan DataLoader::plan_epoch() const {
  const int64_t n = dataset_->size();
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (options_.shuffle) {
    // Same seed on every process, so all agree on the permutation.
    auto generator = at::make_generator<at::CPUGeneratorImpl>(options_.seed + epoch_);
    at::Tensor permutation = at::randperm(n, generator, at::kLong);
    std::copy(permutation.data_ptr<int64_t>(), permutation.data_ptr<int64_t>() + n, order.begin());
  } else {
    std::iota(order.begin(), order.end(), 0);
  }
  detail::ShardSpec spec;
  spec.batch_size = options_.batch_size;
  spec.drop_last = options_.drop_last;
  spec.num_processes = placement_.num_processes;
  spec.process_index = placement_.process_index;
  detail::ShardPlan shard = detail::shard_batches(order, spec);
  return EpochPlan{std::move(shard.batches), shard.last_round_real_samples};
}

std::optional<Batch> DataLoader::next() {
  if (!in_epoch_) {
    plan_ = plan_epoch();
    cursor_ = static_cast<size_t>(std::min<int64_t>(resume_skip_, static_cast<int64_t>(plan_.batches.size())));
    resume_skip_ = 0;
    in_epoch_ = true;
  }
  GradientState* gradient = placement_.gradient_state.get();
  if (cursor_ == plan_.batches.size()) {
    in_epoch_ = false;
    ++epoch_;
    if (gradient) gradient->end_of_dataloader = false;
    return std::nullopt;
  }
  Batch batch = dataset_->get_batch(plan_.batches[cursor_++]);
  if (gradient) {
    gradient->end_of_dataloader = cursor_ == plan_.batches.size();
    gradient->remainder = plan_.last_round_real_samples;
  }
  if (placement_.device && *placement_.device != c10::Device(c10::kCPU)) {
    for (auto& t : batch) t = t.to(*placement_.device, /*non_blocking=*/true);
  }
  return batch;
}

int64_t DataLoader::num_batches() const {
  if (in_epoch_) return static_cast<int64_t>(plan_.batches.size());
  return static_cast<int64_t>(plan_epoch().batches.size());
}

void DataLoader::set_epoch(uint64_t epoch) {
  epoch_ = epoch;
  in_epoch_ = false;
}

DataLoader::Position DataLoader::position() const {
  if (!in_epoch_) return Position{epoch_, resume_skip_};
  return Position{epoch_, static_cast<int64_t>(cursor_)};
}

void DataLoader::resume_from(const Position& position) {
  require_arg(position.batches_consumed >= 0,
              "DataLoader: batches_consumed must not be negative, got " + std::to_string(position.batches_consumed));
  epoch_ = position.epoch;
  in_epoch_ = false;
  resume_skip_ = position.batches_consumed;
}

void DataLoader::shard(const ShardPlacement& placement) {
  require_arg(placement.num_processes > 0 && placement.process_index >= 0 &&
                  placement.process_index < placement.num_processes,
              "DataLoader: process_index " + std::to_string(placement.process_index) + " is not in [0, " +
                  std::to_string(placement.num_processes) + ")");
  placement_ = placement;
  prepared_ = true;
  in_epoch_ = false;
}

}  // namespace accel
