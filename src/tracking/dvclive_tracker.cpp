// DVCLive's files: <dir>/params.yaml, <dir>/metrics.json (the latest value of
// every metric and the step), <dir>/plots/metrics/<name>.tsv (one "step<TAB>value"
// row per log) and <dir>/dvc.yaml naming them, so `dvc metrics show` and
// `dvc plots show` in a DVC repository (and DVCLive's own resume) read the run.
// <dir> is init_kwargs' "dir", else logging_dir/dvclive.
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "accel/error.hpp"
#include "core/number_text.hpp"
#include "core/remove_tree.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/record_file.hpp"
#include "tracking/tracker_kwargs.hpp"

namespace accel::detail {
namespace {

// The text DVCLive writes for a float (Python's str): 0.5, 1.0, nan, inf.
std::string tsv_number(double value) {
  std::string text = shortest_number_text(value);
  if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string yaml_value(const ConfigValue& value) {
  if (std::holds_alternative<std::string>(value)) return nlohmann::json(std::get<std::string>(value)).dump();
  const double number = std::get<double>(value);
  if (std::isnan(number)) return ".nan";
  if (std::isinf(number)) return number > 0 ? ".inf" : "-.inf";
  // YAML 1.1 readers (PyYAML) take 1e-05 for a string: the mantissa needs a dot, as yaml.dump writes.
  std::string text = shortest_number_text(number);
  const size_t e = text.find('e');
  if (e != std::string::npos && text.find('.') == std::string::npos) text.insert(e, ".0");
  return text;
}

// Metric names become paths under plots/metrics: every '/'-separated part must
// be a plain file name, so no name reaches outside the folder.
std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = name.find('/', start);
    parts.push_back(name.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  for (const auto& part : parts)
    require_arg(!part.empty() && part != "." && part != ".." && part.find('\0') == std::string::npos,
                "dvclive: metric name '" + name + "' must be '/'-separated plain names (no empty, '.' or '..' part)");
  return parts;
}

void write_atomically(const std::string& path, const std::string& content) {
  write_file(path + ".tmp", content);
  std::error_code ec;
  std::filesystem::rename(path + ".tmp", path, ec);
  require(!ec, ErrorCode::IO, "dvclive: cannot replace '" + path + "': " + ec.message());
}

class DvcLiveTracker : public Tracker {
 public:
  DvcLiveTracker(const std::string& logging_dir, TrackerKwargs kwargs) {
    dir_ = kwargs.string("dir").value_or(logging_dir + "/dvclive");
    kwargs.reject_unread();
  }
  std::string name() const override { return "dvclive"; }

  void init(const std::string& run_name, const TrackerConfig& config) override {
    // A new run replaces the files of the last one, as Live(resume=False) does.
    std::error_code ec;
    remove_tree(dir_ + "/plots/metrics");  // not std::filesystem::remove_all (docs/gpu.md)
    std::filesystem::remove(dir_ + "/metrics.json", ec);
    std::filesystem::remove(dir_ + "/params.yaml", ec);
    make_dirs(dir_ + "/plots/metrics");
    if (!config.empty()) {
      // A JSON string is a YAML double-quoted scalar, so keys and strings need no other escaping.
      std::string params;
      for (const auto& [key, value] : config) params += nlohmann::json(key).dump() + ": " + yaml_value(value) + "\n";
      write_file(dir_ + "/params.yaml", params);
    }
    write_file(dir_ + "/dvc.yaml",
               "params:\n- params.yaml\nmetrics:\n- metrics.json\nplots:\n- plots/metrics:\n    x: step\n");
    started_ = true;
  }

  // Accelerate's DVCLiveTracker.log: live.step = step (when given), log_metric
  // for each value, then next_step(), which writes metrics.json.
  void log(const Scalars& values, std::optional<int64_t> step) override {
    if (!started_) return;
    std::map<std::string, std::vector<std::string>> parts;
    for (const auto& [key, value] : values) parts[key] = name_parts(key);  // all checked before any write
    nlohmann::json summary = latest_;
    for (const auto& [key, value] : values) set_nested(summary, parts[key], key, value);
    if (step) step_ = *step;
    for (const auto& [key, value] : values) {
      const std::string path = dir_ + "/plots/metrics/" + key + ".tsv";
      auto& file = files_[key];
      if (!file) {
        file = std::make_unique<RecordFile>();
        file->open(path, true);
        file->append("step\t" + parts[key].back() + "\n");
      }
      file->append(std::to_string(step_) + "\t" + tsv_number(value) + "\n");
    }
    latest_ = std::move(summary);
    latest_["step"] = step_;
    write_atomically(dir_ + "/metrics.json", latest_.dump(4) + "\n");
    ++step_;
  }

  void finish() override { files_.clear(); }

 private:
  // metrics.json nests "train/loss" as {"train": {"loss": v}}; a name that is
  // both a value and a folder ("a" and "a/b") cannot be written.
  static void set_nested(nlohmann::json& root, const std::vector<std::string>& parts, const std::string& name,
                         double value) {
    nlohmann::json* node = &root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto& child = (*node)[parts[i]];
      require_arg(child.is_null() || child.is_object(),
                  "dvclive: metric name '" + name + "' nests under '" + parts[i] + "', which is a metric itself");
      if (child.is_null()) child = nlohmann::json::object();
      node = &child;
    }
    auto& leaf = (*node)[parts.back()];
    require_arg(!leaf.is_object(), "dvclive: metric name '" + name + "' is a folder of other metrics");
    require_arg(parts.size() > 1 || parts.back() != "step", "dvclive: 'step' is DVCLive's own key in metrics.json");
    leaf = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
  }

  std::string dir_;
  bool started_ = false;
  int64_t step_ = 0;
  nlohmann::json latest_ = nlohmann::json::object();
  std::map<std::string, std::unique_ptr<RecordFile>> files_;
};

}  // namespace

std::unique_ptr<Tracker> make_dvclive_tracker(const std::string& dir, const nlohmann::json& kwargs) {
  return std::make_unique<DvcLiveTracker>(dir, TrackerKwargs("dvclive", kwargs));
}

}  // namespace accel::detail
