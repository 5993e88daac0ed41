// jsonl and csv trackers: one record per log() call under logging_dir/<run>/.
#include <nlohmann/json.hpp>

#include "accel/error.hpp"
#include "core/number_text.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/record_file.hpp"

namespace accel::detail {
namespace {

nlohmann::json to_json(const TrackerConfig& config) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : config) std::visit([&, &k = key](const auto& v) { out[k] = v; }, value);
  return out;
}

// {"step": 3, "loss": 0.5}: the config goes to config.json beside it.
class JsonlTracker : public Tracker {
 public:
  explicit JsonlTracker(std::string dir) : dir_(std::move(dir)) {}
  std::string name() const override { return "jsonl"; }
  void init(const std::string& run_name, const TrackerConfig& config) override {
    write_file(dir_ + "/" + run_name + "/config.json", to_json(config).dump(2) + "\n");
    file_.open(dir_ + "/" + run_name + "/metrics.jsonl", false);
  }
  void log(const Scalars& values, std::optional<int64_t> step) override {
    nlohmann::json record = nlohmann::json::object();
    record["step"] = step ? nlohmann::json(*step) : nlohmann::json(nullptr);
    for (const auto& [key, value] : values) record[key] = value;
    file_.append(record.dump() + "\n");
  }
  void log_text(const std::string& tag, const std::string& text, std::optional<int64_t> step) override {
    nlohmann::json record = {{"step", step ? nlohmann::json(*step) : nlohmann::json(nullptr)}, {tag, text}};
    file_.append(record.dump() + "\n");
  }
  void finish() override { file_.close(); }

 private:
  std::string dir_;
  RecordFile file_;
};

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Long format, "step,tag,value": tags may differ from call to call. The rows of
// one call go out in one write.
class CsvTracker : public Tracker {
 public:
  explicit CsvTracker(std::string dir) : dir_(std::move(dir)) {}
  std::string name() const override { return "csv"; }
  void init(const std::string& run_name, const TrackerConfig& config) override {
    std::string params = "name,value\n";
    for (const auto& [key, value] : config) {
      const std::string text = std::holds_alternative<double>(value) ? shortest_number_text(std::get<double>(value))
                                                                     : std::get<std::string>(value);
      params += csv_field(key) + "," + csv_field(text) + "\n";
    }
    write_file(dir_ + "/" + run_name + "/params.csv", params);
    file_.open(dir_ + "/" + run_name + "/metrics.csv", true);
    file_.append("step,tag,value\n");
  }
  void log(const Scalars& values, std::optional<int64_t> step) override {
    std::string rows;
    for (const auto& [key, value] : values)
      rows += (step ? std::to_string(*step) : std::string()) + ',' + csv_field(key) + ',' +
              shortest_number_text(value) + '\n';
    file_.append(rows);
  }
  void finish() override { file_.close(); }

 private:
  std::string dir_;
  RecordFile file_;
};

}  // namespace

std::unique_ptr<Tracker> make_jsonl_tracker(const std::string& dir) { return std::make_unique<JsonlTracker>(dir); }
std::unique_ptr<Tracker> make_csv_tracker(const std::string& dir) { return std::make_unique<CsvTracker>(dir); }

}  // namespace accel::detail
