// The loader's progress bar per epoch (DataLoader::set_progress).
#include <algorithm>
#include <string>

#include "accel/data.hpp"
#include "accel/logging.hpp"

namespace accel {

void DataLoader::set_progress(std::optional<std::string> description) {
  progress_.reset();
  progress_description_ = std::move(description);
}

void DataLoader::advance_progress() {
  if (!progress_description_) return;
  if (!progress_) {
    // The epoch's first batch: an iterable dataset has no length, so no bar (total 0
    // keeps ProgressBar silent). The total is the whole epoch's, and a resumed epoch
    // (resume_from, skip_first_batches) starts the bar at the batches it skipped.
    const int64_t total = dataset_ ? std::max(num_batches() + skipped_pass_, yielded_) : 0;
    std::string label = progress_description_->empty() ? "epoch " + std::to_string(epoch_) : *progress_description_;
    progress_ = std::make_unique<ProgressBar>(total, std::move(label));
    if (yielded_ > 1) progress_->update(yielded_ - 1);
  }
  progress_->update(1);
}

}  // namespace accel
