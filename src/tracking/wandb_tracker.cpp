// Weights & Biases, offline: logging_dir/wandb/offline-run-<time>-<id>/run-<id>.wandb,
// the transaction log wandb writes in offline mode, which `wandb sync <dir>`
// uploads later and `wandb leet inspect` reads. libaccel has no W&B client, so
// the run is always offline (docs/tracking.md).
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>

#include "accel/accel.h"
#include "accel/error.hpp"
#include "accel/logging.hpp"
#include "core/number_text.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/tracker_common.hpp"
#include "tracking/random_id.hpp"
#include "tracking/tracker_kwargs.hpp"
#include "tracking/wandb_log.hpp"
#include "wandb_record.pb.h"

namespace accel::detail {
namespace {

// wandb's run ids: 8 characters of [a-z0-9].
std::string random_run_id() { return random_id("abcdefghijklmnopqrstuvwxyz0123456789", 8); }

// A number as JSON, non-finite ones as Python's json.dumps writes them (wandb reads those).
std::string number_json(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return shortest_number_text(value);
}

std::string config_json(const ConfigValue& value) {
  if (std::holds_alternative<double>(value)) return number_json(std::get<double>(value));
  return nlohmann::json(std::get<std::string>(value)).dump();
}

// A run id becomes a folder and file name: wandb allows letters, digits, '-' and '_'.
void check_run_id(const std::string& id, const std::string& origin) {
  bool ok = !id.empty() && id.size() <= 128;
  for (char c : id) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
  require_arg(ok, "wandb: run id '" + id + "' from " + origin + " must be 1 to 128 letters, digits, '-' or '_'");
}

class WandbTracker : public Tracker {
 public:
  WandbTracker(std::string logging_dir, TrackerKwargs kwargs) {
    // Where wandb.init(dir=...) puts the wandb/ folder: the kwarg, WANDB_DIR, else logging_dir.
    const std::string wandb_dir = env_or_empty("WANDB_DIR");
    root_ = kwargs.string("dir").value_or(wandb_dir.empty() ? logging_dir : wandb_dir);
    display_name_ = kwargs.string("name").value_or(env_or_empty("WANDB_NAME"));
    run_id_ = kwargs.string("id").value_or(env_or_empty("WANDB_RUN_ID"));
    entity_ = kwargs.string("entity").value_or(env_or_empty("WANDB_ENTITY"));
    group_ = kwargs.string("group").value_or(env_or_empty("WANDB_RUN_GROUP"));
    job_type_ = kwargs.string("job_type").value_or(env_or_empty("WANDB_JOB_TYPE"));
    notes_ = kwargs.string("notes").value_or(env_or_empty("WANDB_NOTES"));
    tags_ = kwargs.strings("tags");
    const std::string mode = kwargs.string("mode").value_or(env_or_empty("WANDB_MODE"));
    kwargs.reject_unread();
    require_arg(mode.empty() || mode == "offline" || mode == "dryrun" || mode == "online" || mode == "disabled",
                "wandb: unknown mode '" + mode + "' (offline, online, disabled)");
    disabled_ = mode == "disabled";
    if (mode == "online")
      Logger("accel.tracking")
          .warning(
              "wandb: mode 'online' needs W&B's own client; libaccel writes the run offline "
              "(upload it with `wandb sync`)");
    if (!run_id_.empty()) check_run_id(run_id_, "init_kwargs or WANDB_RUN_ID");
  }

  std::string name() const override { return "wandb"; }

  void init(const std::string& run_name, const TrackerConfig& config) override {
    if (disabled_) return;
    if (run_id_.empty()) run_id_ = random_run_id();
    start_ = unix_seconds();
    const std::time_t start_time = static_cast<std::time_t>(start_);
    std::tm utc{};
    gmtime_r(&start_time, &utc);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &utc);
    const std::string wandb_dir = root_ + "/wandb";
    const std::string run_dir_name = std::string("offline-run-") + stamp + "-" + run_id_;
    run_dir_ = wandb_dir + "/" + run_dir_name;
    make_dirs(run_dir_ + "/files");
    log_.open(run_dir_ + "/run-" + run_id_ + ".wandb");

    accel_internal::wandb::Record header;
    auto* version = header.mutable_header()->mutable_version_info();
    version->set_producer("libaccel " + std::to_string(ACCEL_VERSION_MAJOR) + "." +
                          std::to_string(ACCEL_VERSION_MINOR) + "." + std::to_string(ACCEL_VERSION_PATCH));
    version->set_min_consumer("0.70.0");  // the transaction-log version wandb 0.31 writes and reads
    write(header);

    accel_internal::wandb::Record run;
    auto* record = run.mutable_run();
    record->set_run_id(run_id_);
    record->set_project(run_name);
    record->set_entity(entity_);
    record->set_display_name(display_name_);
    record->set_run_group(group_);
    record->set_job_type(job_type_);
    record->set_notes(notes_);
    for (const auto& tag : tags_) record->add_tags(tag);
    char host[256] = "localhost";
    gethostname(host, sizeof(host) - 1);
    record->set_host(host);
    record->mutable_start_time()->set_seconds(static_cast<int64_t>(start_));
    record->mutable_start_time()->set_nanos(static_cast<int32_t>((start_ - std::floor(start_)) * 1e9));
    for (const auto& [key, value] : config) {
      auto* item = record->mutable_config()->add_update();
      item->set_key(key);
      item->set_value_json(config_json(value));
    }
    write(run);

    // wandb points wandb/latest-run at the newest run; a failure here loses nothing.
    std::error_code ec;
    std::filesystem::remove(wandb_dir + "/latest-run", ec);
    std::filesystem::create_directory_symlink(run_dir_name, wandb_dir + "/latest-run", ec);
  }

  void log(const Scalars& values, std::optional<int64_t> step) override {
    std::map<std::string, std::string> row;
    for (const auto& [key, value] : values) row[key] = number_json(value);
    add_row(row, step);
  }

  // wandb.log({tag: "text"}) keeps a string in the history row.
  void log_text(const std::string& tag, const std::string& text, std::optional<int64_t> step) override {
    add_row({{tag, nlohmann::json(text).dump()}}, step);
  }

  void finish() override {
    if (disabled_ || finished_) return;
    finished_ = true;
    flush_row();
    const double runtime = unix_seconds() - start_;
    accel_internal::wandb::Record summary;
    for (const auto& [key, value] : summary_) {
      auto* item = summary.mutable_summary()->add_update();
      item->add_nested_key(key);
      item->set_value_json(value);
    }
    write(summary);
    accel_internal::wandb::Record exit;
    exit.mutable_exit()->set_exit_code(0);
    exit.mutable_exit()->set_runtime(static_cast<int32_t>(runtime));
    write(exit);
    log_.close();
  }

 private:
  // wandb.log(step=s) merges calls with the same step into one row, commits the
  // row when another step comes, and drops a step below the current one with a
  // warning; a call without a step is a row of its own at the next step.
  void add_row(const std::map<std::string, std::string>& values, std::optional<int64_t> step) {
    if (disabled_ || finished_) return;
    if (step && pending_step_ && *step == *pending_step_) {
      for (const auto& [key, value] : values) pending_[key] = value;
      return;
    }
    flush_row();
    const int64_t at = step.value_or(next_step_);
    if (at < next_step_) {
      Logger("accel.tracking")
          .warning("wandb: step " + std::to_string(at) + " is below the current step " + std::to_string(next_step_) +
                   "; dropping that row, as wandb does");
      return;
    }
    pending_ = values;
    pending_step_ = at;
    if (!step) flush_row();
  }

  void flush_row() {
    if (!pending_step_) return;
    const int64_t step = *pending_step_;
    const double now = unix_seconds();
    pending_["_step"] = std::to_string(step);
    pending_["_runtime"] = number_json(now - start_);
    pending_["_timestamp"] = number_json(now);
    accel_internal::wandb::Record record;
    auto* history = record.mutable_history();
    for (const auto& [key, value] : pending_) {
      auto* item = history->add_item();
      item->add_nested_key(key);
      item->set_value_json(value);
      summary_[key] = value;
    }
    history->mutable_step()->set_num(step);
    pending_.clear();
    pending_step_.reset();
    next_step_ = step + 1;
    write(record);
  }

  void write(accel_internal::wandb::Record& record) {
    record.set_num(++records_);
    record.mutable_info()->set_stream_id(run_id_);
    log_.append(record.SerializeAsString());
  }

  std::string root_, run_dir_, run_id_, display_name_, entity_, group_, job_type_, notes_;
  std::vector<std::string> tags_;
  bool disabled_ = false, finished_ = false;
  double start_ = 0;
  int64_t records_ = 0, next_step_ = 0;
  std::map<std::string, std::string> pending_, summary_;
  std::optional<int64_t> pending_step_;
  WandbLogWriter log_;
};

}  // namespace

std::unique_ptr<Tracker> make_wandb_tracker(const std::string& dir, const nlohmann::json& kwargs) {
  return std::make_unique<WandbTracker>(dir, TrackerKwargs("wandb", kwargs));
}

}  // namespace accel::detail
