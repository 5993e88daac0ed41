// Trackio's local store: <TRACKIO_DIR>/<project>.db, the SQLite database that
// trackio.init/log write and `trackio show` reads (schema version 2, trackio
// 0.24+). Rows go in as trackio's own bulk_log writes them, under its lock file
// (<project>.lock, flock), so a running trackio dashboard or writer can share it.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "accel/error.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/tracker_common.hpp"
#include "tracking/random_id.hpp"
#include "tracking/record_file.hpp"
#include "tracking/sqlite_db.hpp"
#include "tracking/tracker_kwargs.hpp"

namespace accel::detail {
namespace {

// trackio's table definitions at schema version 2 (sqlite_storage.py); the
// other tables are created by trackio itself when it next writes.
constexpr const char* kSchema = R"sql(
CREATE TABLE metrics (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    run_name TEXT NOT NULL,
    step INTEGER NOT NULL,
    metrics TEXT NOT NULL,
    log_id TEXT,
    space_id TEXT
);
CREATE INDEX idx_metrics_run_step ON metrics(run_id, step);
CREATE INDEX idx_metrics_run_timestamp ON metrics(run_id, timestamp);
CREATE UNIQUE INDEX idx_metrics_log_id ON metrics(log_id) WHERE log_id IS NOT NULL;
CREATE INDEX idx_metrics_pending ON metrics(space_id) WHERE space_id IS NOT NULL;
CREATE TABLE configs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    run_name TEXT NOT NULL,
    config TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE(run_id)
);
CREATE INDEX idx_configs_run_name ON configs(run_name);
PRAGMA user_version = 2;
)sql";

// trackio's TRACKIO_DIR: the variable, else $HF_HOME/trackio, else huggingface_hub's default cache.
std::string trackio_dir() {
  if (const std::string dir = env_or_empty("TRACKIO_DIR"); !dir.empty()) return dir;
  if (const std::string hf_home = env_or_empty("HF_HOME"); !hf_home.empty()) return hf_home + "/trackio";
  const std::string xdg = env_or_empty("XDG_CACHE_HOME");
  return (xdg.empty() ? env_or_empty("HOME") + "/.cache" : xdg) + "/huggingface/trackio";
}

// trackio's canonical_project_name: letters, digits, '-' and '_' only, "default" when none is left.
std::string canonical_project_name(const std::string& project) {
  std::string out;
  for (char c : project)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') out += c;
  return out.empty() ? "default" : out;
}

// Python's datetime.now(timezone.utc).isoformat(): 2026-11-28T02:39:03.324200+00:00.
std::string iso_now() { return utc_now_text("%Y-%m-%dT%H:%M:%S", "+00:00"); }

std::string uuid_hex() { return random_id(kHexDigits, 32); }

// trackio's serialize_values: non-finite floats as the strings it reads back.
nlohmann::json number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

// trackio's Run.log renames its reserved keys (and ones starting "__") to "__<key>".
std::string row_key(const std::string& key) {
  static const char* reserved[] = {"project", "run", "timestamp", "step", "time", "metrics"};
  for (const char* name : reserved)
    if (key == name) return "__" + key;
  return key.rfind("__", 0) == 0 ? "__" + key : key;
}

// trackio's ProcessLock: an exclusive flock on <project>.lock around each write.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    require(fd_ >= 0, ErrorCode::IO, "trackio: cannot open lock file '" + path + "'");
    while (::flock(fd_, LOCK_EX) != 0) require(errno == EINTR, ErrorCode::IO, "trackio: cannot lock '" + path + "'");
  }
  ~FileLock() { ::close(fd_); }  // closing releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

class TrackioTracker : public Tracker {
 public:
  TrackioTracker(TrackerKwargs kwargs) {
    run_name_ = kwargs.string("name").value_or("");
    group_ = kwargs.string("group");
    kwargs.reject_unread();
  }
  ~TrackioTracker() override { close(); }
  std::string name() const override { return "trackio"; }

  void init(const std::string& project, const TrackerConfig& config) override {
    const std::string dir = trackio_dir();
    make_dirs(dir);
    const std::string base = dir + "/" + canonical_project_name(project);
    db_path_ = base + ".db";
    lock_path_ = base + ".lock";
    run_id_ = uuid_hex();
    if (run_name_.empty()) run_name_ = "accel-" + run_id_.substr(0, 8);
    FileLock lock(lock_path_);
    db_ = std::make_unique<SqliteDb>(db_path_, "trackio");
    const int64_t version = db_->query_int("PRAGMA user_version").value_or(0);
    const bool empty =
        db_->query_int("SELECT count(*) FROM sqlite_master WHERE name IN ('metrics', 'configs')").value_or(0) == 0;
    if (version == 0 && empty) {
      db_->exec("PRAGMA journal_mode = WAL");  // as trackio creates it
      db_->exec(std::string("BEGIN;") + kSchema + "COMMIT;");
    } else if (version < 2) {
      close();
      fail(ErrorCode::Unsupported, "trackio: '" + db_path_ + "' has schema version " + std::to_string(version) +
                                       "; open it once with trackio 0.24 or newer, which upgrades it to version 2");
    }
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [key, value] : config)
      values[key] = std::holds_alternative<double>(value) ? number(std::get<double>(value))
                                                          : nlohmann::json(std::get<std::string>(value));
    values["_Username"] = nullptr;  // trackio's Hugging Face user; none here
    values["_Created"] = iso_now();
    values["_Group"] = group_ ? nlohmann::json(*group_) : nlohmann::json(nullptr);
    db_->run("INSERT OR REPLACE INTO configs (run_id, run_name, config, created_at) VALUES (?1, ?2, ?3, ?4)",
             {run_id_, run_name_, SqliteDb::Blob{values.dump()}, iso_now()});
  }

  void log(const Scalars& values, std::optional<int64_t> step) override {
    nlohmann::json row = nlohmann::json::object();
    for (const auto& [key, value] : values) row[row_key(key)] = number(value);
    add_row(row, step);
  }

  void log_text(const std::string& tag, const std::string& text, std::optional<int64_t> step) override {
    add_row({{row_key(tag), text}}, step);
  }

  void finish() override { close(); }

 private:
  // trackio.log: a row at the given step, else one past the run's last step.
  void add_row(const nlohmann::json& row, std::optional<int64_t> step) {
    if (!db_) return;
    const int64_t at = step.value_or(next_step_);
    FileLock lock(lock_path_);
    // The metrics and config JSON are bound as blobs, as trackio binds orjson's bytes.
    db_->run(
        "INSERT INTO metrics (timestamp, run_id, run_name, step, metrics, log_id, space_id) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
        {iso_now(), run_id_, run_name_, at, SqliteDb::Blob{row.dump()}, uuid_hex()});
    next_step_ = std::max(next_step_, at + 1);
  }

  void close() { db_.reset(); }

  std::string run_name_, run_id_, db_path_, lock_path_;
  std::optional<std::string> group_;
  std::unique_ptr<SqliteDb> db_;
  int64_t next_step_ = 0;
};

}  // namespace

std::unique_ptr<Tracker> make_trackio_tracker(const std::string& dir, const nlohmann::json& kwargs) {
  return std::make_unique<TrackioTracker>(TrackerKwargs("trackio", kwargs));
}

}  // namespace accel::detail
