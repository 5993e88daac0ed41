#include "tracking/builtin_trackers.hpp"

#include "accel/error.hpp"

namespace accel {

std::vector<std::string> builtin_tracker_names() { return {"jsonl", "csv", "tensorboard", "mlflow"}; }

std::unique_ptr<Tracker> make_builtin_tracker(const std::string& name, const std::string& logging_dir) {
  if (name == "jsonl") return detail::make_jsonl_tracker(logging_dir);
  if (name == "csv") return detail::make_csv_tracker(logging_dir);
  if (name == "mlflow") return detail::make_mlflow_tracker(logging_dir);
  if (name == "tensorboard") return detail::make_tensorboard_tracker(logging_dir);
  fail(ErrorCode::InvalidArgument, "unknown tracker '" + name + "' (known: jsonl, csv, tensorboard, mlflow)");
}

}  // namespace accel
