#include "tracking/builtin_trackers.hpp"

#include "accel/error.hpp"
#include "tracking/rocksdb_writer.hpp"
#include "tracking/tracker_kwargs.hpp"

namespace accel {

std::vector<std::string> builtin_tracker_names() {
  return {"jsonl", "csv", "tensorboard", "mlflow", "wandb", "dvclive", "trackio", "aim", "comet_ml"};
}

std::unique_ptr<Tracker> make_builtin_tracker(const std::string& name, const std::string& logging_dir) {
  return detail::make_builtin_tracker(name, logging_dir, nullptr);
}

namespace detail {

std::unique_ptr<Tracker> make_builtin_tracker(const std::string& name, const std::string& logging_dir,
                                              const nlohmann::json& kwargs) {
  if (name == "wandb") return make_wandb_tracker(logging_dir, kwargs);
  if (name == "dvclive") return make_dvclive_tracker(logging_dir, kwargs);
  if (name == "trackio") return make_trackio_tracker(logging_dir, kwargs);
  if (name == "aim") return make_aim_tracker(logging_dir, kwargs);
  if (name == "comet_ml") return make_comet_tracker(logging_dir, kwargs);
  if (name == "mlflow") return make_mlflow_tracker(logging_dir, kwargs);
  if (name == "tensorboard") return make_tensorboard_tracker(logging_dir, kwargs);
  // The others take no init_kwargs yet: any key is named in the error.
  TrackerKwargs(name, kwargs).reject_unread();
  if (name == "jsonl") return make_jsonl_tracker(logging_dir);
  if (name == "csv") return make_csv_tracker(logging_dir);
  std::string known;
  for (const auto& builtin : builtin_tracker_names()) known += (known.empty() ? "" : ", ") + builtin;
  fail(ErrorCode::InvalidArgument, "unknown tracker '" + name + "' (known: " + known + ")");
}

bool builtin_tracker_available(const std::string& name) { return name != "aim" || rocksdb_available(); }

bool replaces_last_run_at_start(const Tracker& tracker) { return tracker.name() == "dvclive"; }

}  // namespace detail
}  // namespace accel
