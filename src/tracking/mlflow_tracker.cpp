// MLflow's local file store (what `mlflow.set_tracking_uri("file:...")` reads;
// MLflow 3 only with MLFLOW_ALLOW_FILE_STORE=true):
//   mlruns/<experiment_id>/meta.yaml            the experiment, named after the project
//   mlruns/<experiment_id>/<run_id>/meta.yaml   the run (status RUNNING, then FINISHED)
//   .../params/<key>, .../tags/<key>             one file per value
//   .../metrics/<key>                            "<timestamp_ms> <value> <step>" lines
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "accel/error.hpp"
#include "core/number_text.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/random_id.hpp"
#include "tracking/mlflow_common.hpp"
#include "tracking/record_file.hpp"
#include "tracking/tracker_kwargs.hpp"
#include "tracking/warn.hpp"

namespace accel::detail {
namespace {

namespace fs = std::filesystem;

int64_t now_ms() { return mlflow_now_ms(); }

std::string yaml_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += (c == '\'') ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string random_run_id() { return random_id(kHexDigits, 32); }

// MLflow rejects keys that climb out of their folder; everything else is kept.
void check_key(const std::string& key) {
  require_arg(!key.empty() && key.front() != '/' && key.find("..") == std::string::npos,
              "mlflow: invalid metric or param name '" + key + "'");
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// MLflow 3 refuses to open a file store (FileStore raises MlflowException)
// unless MLFLOW_ALLOW_FILE_STORE=true; say so once, before anyone is surprised.
void warn_file_store_needs_opt_in(const std::string& root) {
  const std::string allow = lower(env_or_empty("MLFLOW_ALLOW_FILE_STORE"));
  if (allow == "true" || allow == "1") return;
  static std::once_flag once;
  std::call_once(once, [&] {
    const std::string message =
        "mlflow: writing MLflow's file store at " + root +
        "; MLflow 3 reads it only with MLFLOW_ALLOW_FILE_STORE=true (e.g. `MLFLOW_ALLOW_FILE_STORE=true mlflow ui "
        "--backend-store-uri " +
        root +
        "`), or log to a server instead: start `mlflow server --backend-store-uri "
        "sqlite:///mlflow.db` and set MLFLOW_TRACKING_URI=http://127.0.0.1:5000";
    warn("accel.mlflow", message);
  });
}

class MlflowTracker : public Tracker {
 public:
  MlflowTracker(const std::string& root, MlflowRunOptions options)
      : root_(fs::absolute(fs::path(root))), options_(std::move(options)) {
    // The file store's runs are not resumed: MLflow's own client resumes through a server.
    require(options_.run_id.empty(), ErrorCode::Unsupported,
            "mlflow: logging into run '" + options_.run_id +
                "' (MLFLOW_RUN_ID or init_kwargs run_id) needs a tracking server; the local file store " +
                "starts a new run. Start `mlflow server` and set MLFLOW_TRACKING_URI=http://<host>:<port>");
  }
  std::string name() const override { return "mlflow"; }

  void init(const std::string& project_name, const TrackerConfig& config) override {
    for (const auto& entry : config) check_key(entry.first);
    warn_file_store_needs_opt_in(root_.string());
    experiment_id_ = find_or_create_experiment(mlflow_experiment_name(project_name));
    run_id_ = random_run_id();
    run_dir_ = (root_ / experiment_id_ / run_id_).string();
    run_name_ = options_.run_name.empty() ? project_name : options_.run_name;
    start_ms_ = now_ms();
    for (const char* sub : {"params", "metrics", "tags", "artifacts"}) make_dirs(run_dir_ + "/" + sub);
    write_run_meta(1, "null");  // RUNNING
    write_file(run_dir_ + "/tags/mlflow.runName", run_name_);
    for (const auto& [key, value] : mlflow_run_tags(options_)) write_file(run_dir_ + "/tags/" + key, value);
    for (const auto& [key, value] : config) {
      write_file(run_dir_ + "/params/" + key, mlflow_param_text(value));
    }
  }

  void log(const Scalars& values, std::optional<int64_t> step) override {
    const int64_t time = now_ms();
    for (const auto& [key, value] : values) {
      check_key(key);
      RecordFile file;
      file.open(run_dir_ + "/metrics/" + key, false);
      file.append(std::to_string(time) + " " + mlflow_number(value) + " " + std::to_string(step.value_or(0)) + "\n");
    }
  }

  void finish() override {
    if (!run_dir_.empty()) write_run_meta(3, std::to_string(now_ms()));  // FINISHED
  }

 private:
  std::string find_or_create_experiment(const std::string& name) {
    make_dirs(root_.string());
    int64_t next_id = 1;
    const std::string wanted = "name: " + yaml_quote(name);
    for (const auto& entry : fs::directory_iterator(root_)) {
      std::ifstream meta(entry.path() / "meta.yaml");
      if (!meta) continue;
      std::string line;
      while (std::getline(meta, line))
        if (line == wanted) return entry.path().filename().string();
      const std::string id = entry.path().filename().string();
      if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos)
        next_id = std::max<int64_t>(next_id, std::stoll(id) + 1);
    }
    if (!fs::exists(root_ / "0" / "meta.yaml")) write_experiment("0", "Default");
    const std::string id = std::to_string(next_id);
    write_experiment(id, name);
    return id;
  }

  void write_experiment(const std::string& id, const std::string& name) {
    const std::string dir = (root_ / id).string();
    make_dirs(dir);
    const std::string ms = std::to_string(now_ms());
    write_file(dir + "/meta.yaml", "artifact_location: " + yaml_quote("file://" + dir) + "\ncreation_time: " + ms +
                                       "\nexperiment_id: " + yaml_quote(id) + "\nlast_update_time: " + ms +
                                       "\nlifecycle_stage: active\nname: " + yaml_quote(name) + "\n");
  }

  void write_run_meta(int status, const std::string& end_time) {
    const char* user = std::getenv("USER");
    write_file(run_dir_ + "/meta.yaml",
               "artifact_uri: " + yaml_quote("file://" + run_dir_ + "/artifacts") + "\nend_time: " + end_time +
                   "\nentry_point_name: ''\nexperiment_id: " + yaml_quote(experiment_id_) +
                   "\nlifecycle_stage: active\nrun_id: " + run_id_ + "\nrun_name: " + yaml_quote(run_name_) +
                   "\nrun_uuid: " + run_id_ + "\nsource_name: ''\nsource_type: 4\nsource_version: ''\nstart_time: " +
                   std::to_string(start_ms_) + "\nstatus: " + std::to_string(status) +
                   "\ntags: []\nuser_id: " + yaml_quote(user ? user : "libaccel") + "\n");
  }

  fs::path root_;
  MlflowRunOptions options_;
  std::string experiment_id_, run_id_, run_dir_, run_name_;
  int64_t start_ms_ = 0;
};

}  // namespace

int64_t mlflow_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string mlflow_number(double value) { return shortest_number_text(value); }

std::string mlflow_param_text(const ConfigValue& value) {
  return std::holds_alternative<double>(value) ? mlflow_number(std::get<double>(value)) : std::get<std::string>(value);
}

void mlflow_check_key(const std::string& key) {
  bool valid =
      !key.empty() && key.size() <= kMlflowMaxKeyLength && key.front() != '/' && key.find("..") == std::string::npos;
  for (unsigned char c : key)  // bytes >= 0x80: UTF-8 letters, which MLflow's \w accepts
    valid = valid &&
            (std::isalnum(c) || c >= 0x80 || std::string("_-. :/").find(static_cast<char>(c)) != std::string::npos);
  require_arg(valid, "mlflow: invalid metric, param or tag name '" + key + "' (MLflow accepts 1 to " +
                         std::to_string(kMlflowMaxKeyLength) + " letters, digits, '_', '-', '.', ' ', ':' and '/')");
}

std::string mlflow_experiment_name(const std::string& project_name) {
  const std::string name = env_or_empty("MLFLOW_EXPERIMENT_NAME");
  return name.empty() ? project_name : name;
}

MlflowRunOptions mlflow_run_options(const nlohmann::json& kwargs) {
  TrackerKwargs read("mlflow", kwargs);
  MlflowRunOptions options;
  options.run_name = read.string("run_name").value_or("");
  options.description = read.string("description").value_or("");
  options.run_id = read.string("run_id").value_or("");
  std::optional<nlohmann::json> tags = read.object("tags");
  read.reject_unread();
  // As Accelerate: the variables win over the keywords, MLFLOW_TAGS as a whole.
  const std::string env_tags = env_or_empty("MLFLOW_TAGS");
  if (!env_tags.empty()) {
    tags = nlohmann::json::parse(env_tags, nullptr, false);
    require_arg(tags->is_object(), "MLFLOW_TAGS='" + env_tags + "' is not a JSON object");
  }
  if (tags) {
    for (const auto& [key, value] : tags->items()) {
      mlflow_check_key(key);
      options.tags.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  const std::string env_run = env_or_empty("MLFLOW_RUN_ID");
  if (!env_run.empty()) options.run_id = env_run;
  return options;
}

std::vector<std::pair<std::string, std::string>> mlflow_run_tags(const MlflowRunOptions& options) {
  std::vector<std::pair<std::string, std::string>> tags = options.tags;
  if (!options.description.empty()) tags.emplace_back("mlflow.note.content", options.description);
  return tags;
}

// Where the mlflow tracker logs, from MLFLOW_TRACKING_URI as MLflow reads it:
// unset: <logging_dir>/mlruns; a path or file: URI: that folder; http(s)://: a server.
std::unique_ptr<Tracker> make_mlflow_tracker(const std::string& dir, const nlohmann::json& kwargs) {
  MlflowRunOptions options = mlflow_run_options(kwargs);
  const std::string uri = env_or_empty("MLFLOW_TRACKING_URI");
  const std::string scheme = lower(uri.substr(0, uri.find(':') == std::string::npos ? 0 : uri.find(':')));
  if (uri.empty()) return std::make_unique<MlflowTracker>((fs::path(dir) / "mlruns").string(), std::move(options));
  if (scheme == "http" || scheme == "https") return make_mlflow_rest_tracker(uri, std::move(options));
  if (scheme == "file") {
    std::string path = uri.substr(5);
    if (path.rfind("//", 0) == 0) path = path.substr(2);  // file:///abs or file://localhost/abs
    if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
    require_arg(!path.empty(), "MLFLOW_TRACKING_URI='" + uri + "' names no folder");
    return std::make_unique<MlflowTracker>(path, std::move(options));
  }
  // A one-letter "scheme" is not one; a path without a scheme is a folder, as for MLflow.
  require(scheme.empty() || uri.find("://") == std::string::npos, ErrorCode::Unsupported,
          "MLFLOW_TRACKING_URI='" + uri + "': the mlflow tracker writes a local folder (a path or file: URI) or " +
              "talks to an MLflow tracking server (http:// or https://); for a " + scheme +
              " store, run `mlflow server --backend-store-uri " + uri + "` and point MLFLOW_TRACKING_URI at it");
  require(
      scheme.empty() || (scheme != "sqlite" && scheme != "databricks" && scheme != "postgresql" && scheme != "mysql"),
      ErrorCode::Unsupported,
      "MLFLOW_TRACKING_URI='" + uri + "': run `mlflow server --backend-store-uri " + uri +
          "` and point MLFLOW_TRACKING_URI at http://<host>:<port>");
  return std::make_unique<MlflowTracker>(uri, std::move(options));
}

}  // namespace accel::detail
