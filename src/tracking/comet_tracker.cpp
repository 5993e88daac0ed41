// Comet's offline experiment archive (comet_ml 3.x): <offline dir>/<id>-<6
// letters>.zip holding experiment.json and messages.json, one JSON message a
// line, which `comet upload` sends to a Comet server and `comet offline`
// reads locally. Accelerate's CometMLTracker runs comet_ml.start(project_name=
// <project>), log_parameters(config), and for each log set_step(step) then
// log_metric(name, value, step=step) (log_other for text); this tracker writes
// what those calls write offline. Online logging (to a server) is not built.
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "accel/error.hpp"
#include "core/file_io.hpp"
#include "formats/zip_writer.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/random_id.hpp"
#include "tracking/record_file.hpp"
#include "tracking/tracker_common.hpp"
#include "tracking/tracker_kwargs.hpp"

namespace accel::detail {
namespace {

int64_t unix_millis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Python's json as comet_ml writes numbers: an integral hyperparameter as an
// int (as Python hands one over), non-finite values as "NaN" / "Infinity".
nlohmann::json number(double value, bool integral_as_int) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (integral_as_int && value == std::trunc(value) && std::fabs(value) < 9007199254740992.0)
    return static_cast<int64_t>(value);
  return value;
}

class CometTracker : public Tracker {
 public:
  explicit CometTracker(TrackerKwargs kwargs) {
    directory_ = kwargs.string("offline_directory").value_or(env_or_empty("COMET_OFFLINE_DIRECTORY"));
    if (directory_.empty()) directory_ = ".cometml-runs";  // comet_ml's default, under the working directory
    workspace_ = kwargs.string("workspace");
    name_ = kwargs.string("name");
    tags_ = kwargs.strings("tags");
    kwargs.reject_unread();
  }
  std::string name() const override { return "comet_ml"; }

  void init(const std::string& project, const TrackerConfig& config) override {
    make_dirs(directory_);  // before anything else: an unusable folder fails init_trackers
    project_ = project;
    offline_id_ = random_id(kHexDigits, 32);
    start_ms_ = unix_millis();
    messages_.clear();
    next_id_ = 1;
    add("log_other", {{"key", "offline_experiment"}, {"value", true}});
    if (name_) add("log_other", {{"key", "Name"}, {"value", *name_}});
    for (const auto& [key, value] : config) {
      const nlohmann::json param_value = std::holds_alternative<double>(value)
                                             ? number(std::get<double>(value), true)
                                             : nlohmann::json(std::get<std::string>(value));
      add("parameter_msg",
          {{"local_timestamp", unix_millis()},
           {"param", {{"paramName", key}, {"paramValue", param_value}, {"source", "manual"}, {"step", nullptr}}}});
    }
    started_ = true;
  }

  void log(const Scalars& values, std::optional<int64_t> step) override {
    if (!started_) return;
    set_step(step);
    const nlohmann::json at = step ? nlohmann::json(*step) : nlohmann::json(nullptr);
    for (const auto& [key, value] : values) {
      add("metric_msg",
          {{"local_timestamp", unix_millis()},
           {"metric", {{"epoch", nullptr}, {"metricName", key}, {"metricValue", number(value, false)}, {"step", at}}}});
    }
  }

  // Accelerate's CometMLTracker.log sends a string value to log_other.
  void log_text(const std::string& tag, const std::string& text, std::optional<int64_t> step) override {
    if (!started_) return;
    set_step(step);
    add("log_other", {{"key", tag}, {"value", text}});
  }

  void finish() override {
    if (!started_) return;
    started_ = false;
    nlohmann::json experiment = {{"offline_id", offline_id_},
                                 {"project_name", project_},
                                 {"start_time", start_ms_},
                                 {"stop_time", unix_millis()},
                                 {"tags", tags_},
                                 {"workspace", workspace_ ? nlohmann::json(*workspace_) : nlohmann::json(nullptr)},
                                 {"resume_strategy", "get_or_create"},
                                 {"customer_error_reported", false},
                                 {"customer_error_message", nullptr},
                                 {"user_provided_experiment_key", false},
                                 {"comet_start_sourced", true}};
    const std::string archive = directory_ + "/" + offline_id_ + "-" +
                                random_id("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 6) + ".zip";
    write_file_atomically(archive, stored_zip({{"experiment.json", experiment.dump()}, {"messages.json", messages_}}));
    messages_.clear();
  }

 private:
  // set_step: comet records the step as the parameter curr_step when it changes.
  void set_step(std::optional<int64_t> step) {
    if (!step || step == current_step_) return;
    current_step_ = step;
    add("parameter_msg",
        {{"local_timestamp", unix_millis()},
         {"param", {{"paramName", "curr_step"}, {"paramValue", *step}, {"source", "manual"}, {"step", *step}}}});
  }

  void add(const char* type, nlohmann::json payload) {
    payload["message_id"] = next_id_++;
    messages_ += nlohmann::json{{"payload", std::move(payload)}, {"type", type}}.dump() + "\n";
  }

  std::string directory_, project_, offline_id_, messages_;
  std::optional<std::string> workspace_, name_;
  std::vector<std::string> tags_;
  std::optional<int64_t> current_step_;
  int64_t start_ms_ = 0, next_id_ = 1;
  bool started_ = false;
};

}  // namespace

std::unique_ptr<Tracker> make_comet_tracker(const std::string& dir, const nlohmann::json& kwargs) {
  return std::make_unique<CometTracker>(TrackerKwargs("comet_ml", kwargs));
}

}  // namespace accel::detail
