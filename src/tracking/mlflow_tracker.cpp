// MLflow's local file store (what `mlflow.set_tracking_uri("file:...")` reads):
//   mlruns/<experiment_id>/meta.yaml            the experiment, named after the project
//   mlruns/<experiment_id>/<run_id>/meta.yaml   the run (status RUNNING, then FINISHED)
//   .../params/<key>, .../tags/<key>             one file per value
//   .../metrics/<key>                            "<timestamp_ms> <value> <step>" lines
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "accel/error.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/record_file.hpp"

namespace accel::detail {
namespace {

namespace fs = std::filesystem;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string yaml_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += (c == '\'') ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string random_run_id() {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device() ^ static_cast<uint64_t>(now_ms()));
  const char* hex = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 32; ++i) id += hex[rng() % 16];
  return id;
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

// MLflow rejects keys that climb out of their folder; everything else is kept.
void check_key(const std::string& key) {
  require_arg(!key.empty() && key.front() != '/' && key.find("..") == std::string::npos,
              "mlflow: invalid metric or param name '" + key + "'");
}

class MlflowTracker : public Tracker {
 public:
  explicit MlflowTracker(const std::string& dir) : root_(fs::absolute(fs::path(dir) / "mlruns")) {}
  std::string name() const override { return "mlflow"; }

  void init(const std::string& run_name, const TrackerConfig& config) override {
    experiment_id_ = find_or_create_experiment(run_name);
    run_id_ = random_run_id();
    run_dir_ = (root_ / experiment_id_ / run_id_).string();
    run_name_ = run_name;
    start_ms_ = now_ms();
    for (const char* sub : {"params", "metrics", "tags", "artifacts"}) make_dirs(run_dir_ + "/" + sub);
    write_run_meta(1, "null");  // RUNNING
    write_file(run_dir_ + "/tags/mlflow.runName", run_name);
    for (const auto& [key, value] : config) {
      check_key(key);
      std::string text = std::holds_alternative<double>(value) ? number(std::get<double>(value))
                                                               : std::get<std::string>(value);
      write_file(run_dir_ + "/params/" + key, text);
    }
  }

  void log(const Scalars& values, std::optional<int64_t> step) override {
    const int64_t time = now_ms();
    for (const auto& [key, value] : values) {
      check_key(key);
      RecordFile file;
      file.open(run_dir_ + "/metrics/" + key, false);
      file.append(std::to_string(time) + " " + number(value) + " " + std::to_string(step.value_or(0)) + "\n");
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
  std::string experiment_id_, run_id_, run_dir_, run_name_;
  int64_t start_ms_ = 0;
};

}  // namespace

std::unique_ptr<Tracker> make_mlflow_tracker(const std::string& dir) { return std::make_unique<MlflowTracker>(dir); }

}  // namespace accel::detail
