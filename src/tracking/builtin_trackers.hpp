// Factories of the built-in trackers, each writing under a logging directory.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "accel/tracking.hpp"

namespace accel::detail {

std::unique_ptr<Tracker> make_jsonl_tracker(const std::string& dir);
std::unique_ptr<Tracker> make_csv_tracker(const std::string& dir);
// The mlflow tracker for MLFLOW_TRACKING_URI (unset: the file store dir/mlruns),
// with init_kwargs "run_name", "description", "tags", "run_id" (a server only).
std::unique_ptr<Tracker> make_mlflow_tracker(const std::string& dir, const nlohmann::json& kwargs);
// SummaryWriter's init_kwargs "filename_suffix", "purge_step", "flush_secs" and
// "max_queue" (the last two checked: every event is written as it is logged).
std::unique_ptr<Tracker> make_tensorboard_tracker(const std::string& dir, const nlohmann::json& kwargs);
// These take their init_kwargs (a JSON object or null); an unsupported key is
// InvalidArgument naming it.
std::unique_ptr<Tracker> make_wandb_tracker(const std::string& dir, const nlohmann::json& kwargs);
std::unique_ptr<Tracker> make_dvclive_tracker(const std::string& dir, const nlohmann::json& kwargs);
// Writes where trackio does (TRACKIO_DIR, else the Hugging Face cache), not under dir.
std::unique_ptr<Tracker> make_trackio_tracker(const std::string& dir, const nlohmann::json& kwargs);

// Aim's local repository under dir (init_kwargs "repo" elsewhere, "experiment").
std::unique_ptr<Tracker> make_aim_tracker(const std::string& dir, const nlohmann::json& kwargs);

// Comet's offline experiment archive (init_kwargs "offline_directory",
// "workspace", "name", "tags"); COMET_OFFLINE_DIRECTORY, else .cometml-runs.
std::unique_ptr<Tracker> make_comet_tracker(const std::string& dir, const nlohmann::json& kwargs);

// Whether the built-in tracker can run here: aim needs librocksdb (loaded when
// used). log_with "all" takes the available ones, as Accelerate's does.
bool builtin_tracker_available(const std::string& name);

// Whether the tracker replaces its last run's files as it starts (dvclive,
// like Live(resume=False)): init_trackers starts such trackers after every
// other, so a call that fails leaves the last run in place.
bool replaces_last_run_at_start(const Tracker& tracker);

// The built-in tracker called name, given init_kwargs[name] (null when none).
std::unique_ptr<Tracker> make_builtin_tracker(const std::string& name, const std::string& logging_dir,
                                              const nlohmann::json& kwargs);

}  // namespace accel::detail
