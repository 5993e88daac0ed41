// Factories of the built-in trackers, each writing under a logging directory.
#pragma once

#include <memory>
#include <string>

#include "accel/tracking.hpp"

namespace accel::detail {

std::unique_ptr<Tracker> make_jsonl_tracker(const std::string& dir);
std::unique_ptr<Tracker> make_csv_tracker(const std::string& dir);
// The mlflow tracker for MLFLOW_TRACKING_URI (unset: the file store dir/mlruns).
std::unique_ptr<Tracker> make_mlflow_tracker(const std::string& dir);
std::unique_ptr<Tracker> make_tensorboard_tracker(const std::string& dir);

}  // namespace accel::detail
