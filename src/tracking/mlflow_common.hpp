// What both MLflow trackers (the local file store and the REST client) share:
// MLflow's limits, its name rules and how it writes numbers.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "accel/tracking.hpp"
#include "tracking/tracker_common.hpp"

namespace accel::detail {

// mlflow/utils/validation.py: a log-batch request carries at most 1000 metrics,
// 100 params and 100 tags.
constexpr size_t kMlflowMaxMetricsPerBatch = 1000;
constexpr size_t kMlflowMaxParamsTagsPerBatch = 100;
constexpr size_t kMlflowMaxParamValueLength = 6000;
constexpr size_t kMlflowMaxKeyLength = 250;

int64_t mlflow_now_ms();

// A double as Python's str() writes it for MLflow ("0.01", "0.0003", "1e-05"),
// so a run logged from Python and resumed from C keeps the same param text;
// whole numbers without ".0" ("3"): see core/number_text.hpp.
std::string mlflow_number(double value);

// A config value stringified as MLflow's log_param does.
std::string mlflow_param_text(const ConfigValue& value);

// Throws InvalidArgument naming the key unless MLflow accepts it as a metric,
// param or tag name: 1 to 250 characters of letters, digits, '_', '-', '.',
// ' ', ':' and '/', not climbing out of its folder ("..", a leading '/').
void mlflow_check_key(const std::string& key);

// MLFLOW_EXPERIMENT_NAME when set (Accelerate gives it priority), else the project name.
std::string mlflow_experiment_name(const std::string& project_name);

// How a run starts: Accelerate's MLflowTracker keywords (init_kwargs
// {"mlflow": {"run_name": ..., "description": ..., "tags": {...}, "run_id": ...}})
// and the variables Accelerate lets override them (MLFLOW_TAGS, MLFLOW_RUN_ID).
struct MlflowRunOptions {
  std::string run_name;     // empty: the project name
  std::string description;  // empty: none; else the tag mlflow.note.content
  std::vector<std::pair<std::string, std::string>> tags;
  std::string run_id;  // empty: a new run; else log into this one (a server only)
};

// Reads init_kwargs["mlflow"] (null: none) and the variables. InvalidArgument
// names a value of the wrong type, a tag name MLflow refuses or a key that is
// not one of those four.
MlflowRunOptions mlflow_run_options(const nlohmann::json& kwargs);

// The tags the options set on a run, new or resumed: their tags and the
// description (mlflow.note.content). A new run adds mlflow.runName.
std::vector<std::pair<std::string, std::string>> mlflow_run_tags(const MlflowRunOptions& options);

// The REST tracker for an http(s) MLFLOW_TRACKING_URI (mlflow_rest_tracker.cpp).
std::unique_ptr<Tracker> make_mlflow_rest_tracker(const std::string& tracking_uri, MlflowRunOptions options);

}  // namespace accel::detail
