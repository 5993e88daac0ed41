// Aim's local repository (aim 3.x, the format `aim up` and aim's SDK read):
// <repo>/.aim with each run's metadata and metric series in two RocksDB
// databases, meta/chunks/<run hash> and seqs/chunks/<run hash>, keyed as aim's
// own Run.track writes them (aim_encoding.hpp), and the run's row in the SQLite
// database run_metadata.sqlite, which holds its name and experiment. Accelerate's
// AimTracker: Run(repo=logging_dir), run.name = the project name,
// run["hparams"] = config, run.track(value, name=key, step=step). Aim reads a
// finished run's chunks once its index holds them: `aim storage reindex`, or
// the indexing `aim up` does.
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "accel/error.hpp"
#include "core/remove_tree.hpp"
#include "tracking/aim_encoding.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/random_id.hpp"
#include "tracking/record_file.hpp"
#include "tracking/rocksdb_writer.hpp"
#include "tracking/sqlite_db.hpp"
#include "tracking/tracker_common.hpp"
#include "tracking/tracker_kwargs.hpp"

namespace accel::detail {
namespace {

namespace fs = std::filesystem;
using aim::PathKey;
using Items = std::vector<std::pair<std::string, std::string>>;

// The tables of run_metadata.sqlite at aim 3.29's schema revision (its alembic
// head), so aim finds nothing to migrate.
constexpr const char* kAlembicRevision = "46b89d830ad8";
constexpr const char* kSchema = R"sql(
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num));
CREATE TABLE experiment (id INTEGER NOT NULL, uuid TEXT, name TEXT NOT NULL, created_at DATETIME, updated_at DATETIME,
  is_archived BOOLEAN, description TEXT, PRIMARY KEY (id), UNIQUE (name));
CREATE TABLE tag (id INTEGER NOT NULL, uuid TEXT, name TEXT NOT NULL, color TEXT, created_at DATETIME,
  updated_at DATETIME, is_archived BOOLEAN, description TEXT, PRIMARY KEY (id), UNIQUE (name));
CREATE TABLE run (id INTEGER NOT NULL, hash TEXT NOT NULL, name TEXT, description TEXT, is_archived BOOLEAN,
  created_at DATETIME, updated_at DATETIME, experiment_id INTEGER, finalized_at DATETIME, PRIMARY KEY (id),
  FOREIGN KEY(experiment_id) REFERENCES experiment (id));
CREATE TABLE run_tag (run_id INTEGER NOT NULL, tag_id INTEGER NOT NULL, PRIMARY KEY (run_id, tag_id),
  FOREIGN KEY(run_id) REFERENCES run (id), FOREIGN KEY(tag_id) REFERENCES tag (id));
CREATE TABLE note (id INTEGER NOT NULL, content TEXT NOT NULL, run_id INTEGER, created_at DATETIME,
  updated_at DATETIME, experiment_id INTEGER, PRIMARY KEY (id),
  CONSTRAINT fk_experiment_note FOREIGN KEY(experiment_id) REFERENCES experiment (id),
  FOREIGN KEY(run_id) REFERENCES run (id));
CREATE TABLE note_audit_log (id INTEGER NOT NULL, note_id INTEGER NOT NULL, datetime DATETIME, action TEXT,
  before_edit TEXT, after_edit TEXT, PRIMARY KEY (id), FOREIGN KEY(note_id) REFERENCES note (id) ON DELETE CASCADE);
CREATE TABLE run_info (id INTEGER NOT NULL, run_id INTEGER, created_at DATETIME, updated_at DATETIME,
  last_notification_index INTEGER, PRIMARY KEY (id), FOREIGN KEY(run_id) REFERENCES run (id));
)sql";

// SQLAlchemy's DateTime in SQLite, of datetime.utcnow(): 2026-11-29 02:58:22.186356.
std::string sqlite_now() { return utc_now_text("%Y-%m-%d %H:%M:%S", ""); }

// uuid4's text form, as SQLAlchemy's default for the uuid columns writes it.
std::string uuid4_text() {
  std::string hex = random_id(kHexDigits, 32);
  hex[12] = '4';
  hex[16] = "89ab"[hex[16] % 4];
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
         hex.substr(20);
}

// A hyperparameter as Python hands it to aim: an integral number is an int.
std::string config_value(const ConfigValue& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return aim::encode_string(*text);
  const double number = std::get<double>(value);
  if (std::isfinite(number) && number == std::trunc(number) && std::fabs(number) < 9007199254740992.0) {
    return aim::encode_int(static_cast<int64_t>(number));
  }
  return aim::encode_float(number);
}

class AimTracker : public Tracker {
 public:
  AimTracker(const std::string& logging_dir, TrackerKwargs kwargs) {
    repo_ = kwargs.string("repo").value_or(logging_dir);
    experiment_ = kwargs.string("experiment").value_or("default");
    require_arg(!experiment_.empty(), "init_kwargs[\"aim\"][\"experiment\"] is empty");
    kwargs.reject_unread();
  }
  ~AimTracker() override {
    try {
      finish();
    } catch (...) {
      // A destructor must not throw; finish() reports its errors when called.
    }
  }
  std::string name() const override { return "aim"; }

  void init(const std::string& run_name, const TrackerConfig& config) override {
    // Nothing is written when RocksDB cannot be: Unsupported, naming the library.
    RocksDbWriter::require_library();
    // Aim's Repo(path): the repository is path/.aim.
    const fs::path root = fs::path(repo_) / ".aim";
    hash_ = random_id(kHexDigits, 24);  // aim's run hash: uuid4().hex[:24]
    for (const char* dir : {"meta/chunks", "seqs/chunks", "meta/locks", "seqs/locks", "meta/progress", "seqs/progress",
                            "locks", "progress", "check_ins"}) {
      make_dirs((root / dir).string());
    }
    if (!fs::exists(root / "VERSION")) write_version((root / "VERSION").string());
    register_run((root / "run_metadata.sqlite").string(), run_name);
    try {
      meta_ = std::make_unique<RocksDbWriter>((root / "meta" / "chunks" / hash_).string());
      seqs_ = std::make_unique<RocksDbWriter>((root / "seqs" / "chunks" / hash_).string());
    } catch (...) {  // no half-made run: its row and its folders go again
      meta_.reset();
      SqliteDb(sqlite_path_, "aim").run("DELETE FROM run WHERE hash = ?1", {hash_});
      for (const char* tree : {"meta", "seqs"}) remove_tree((root / tree / "chunks" / hash_).string());
      throw;
    }
    // run.name and run["hparams"]: the run's own keys and the repository-wide ones beside them.
    Items meta{{path({"attrs"}), aim::encode_object_flag()}, {run_path({"attrs"}), aim::encode_object_flag()}};
    for (const auto& [key, value] : config) {
      meta.emplace_back(path({"attrs", "hparams", key}), config_value(value));
      meta.emplace_back(run_path({"attrs", "hparams", key}), config_value(value));
    }
    meta_->write(meta);
  }

  void log(const Scalars& values, std::optional<int64_t> step) override {
    if (!meta_) return;
    const int64_t context = aim::hash_string_dict({});  // Accelerate's log passes no context
    Items meta, seqs;
    if (!context_written_) {
      meta.emplace_back(path({"contexts", context}), aim::encode_object_flag());
      meta.emplace_back(run_path({"contexts", context}), aim::encode_object_flag());
      context_written_ = true;
    }
    const double now = unix_seconds();
    for (const auto& item : values) {
      const std::string& name = item.first;  // (a lambda below needs a name, not a structured binding)
      const double value = item.second;
      Sequence& sequence = sequences_[name];
      const auto series = [&](const char* column) {
        return aim::encode_path(
            {std::string("seqs"), std::string("v2"), std::string("chunks"), hash_, context, name, std::string(column)});
      };
      const auto trace = [&](const char* field) { return run_path({"traces", context, name, field}); };
      if (!sequence.started) {
        for (const char* column : {"step", "val", "epoch", "time"})
          seqs.emplace_back(series(column), aim::encode_array_flag());
        sequence.started = true;
      }
      const int64_t at = step.value_or(sequence.count);  // aim: the sequence's next step
      if (sequence.count == 0) {
        meta.emplace_back(path({"traces_types", "float", context, name}), aim::encode_int(1));
        meta.emplace_back(trace("dtype"), aim::encode_string("float"));
        meta.emplace_back(trace("version"), aim::encode_int(2));
        meta.emplace_back(trace("first"), aim::encode_float(value));
        meta.emplace_back(trace("first_step"), aim::encode_int(at));
        meta.emplace_back(run_path({"typed_traces", "metric", context, name}), aim::encode_int(1));
      }
      if (at >= sequence.count) {
        meta.emplace_back(trace("last"), aim::encode_float(value));
        meta.emplace_back(trace("last_step"), aim::encode_int(at));
        sequence.count = at + 1;
      }
      if (value > sequence.max) {
        meta.emplace_back(trace("max"), aim::encode_float(value));
        sequence.max = value;
      }
      if (value < sequence.min) {
        meta.emplace_back(trace("min"), aim::encode_float(value));
        sequence.min = value;
      }
      const std::string at_hash = aim::encode_path({aim::hash_number(static_cast<double>(at))});
      seqs.emplace_back(series("val") + at_hash, aim::encode_float(value));
      seqs.emplace_back(series("epoch") + at_hash, aim::encode_none());
      seqs.emplace_back(series("time") + at_hash, aim::encode_float(now));
      seqs.emplace_back(series("step") + at_hash, aim::encode_int(at));
    }
    seqs_->write(seqs);  // the values first: a trace's summary never names a step that is not there
    meta_->write(meta);
  }

  void finish() override {
    if (!meta_) return;
    meta_->write({{run_path({"end_time"}), aim::encode_float(unix_seconds())}});
    meta_.reset();
    seqs_.reset();
    SqliteDb db(sqlite_path_, "aim");
    const std::string now = sqlite_now();
    db.run("UPDATE run SET updated_at = ?1, finalized_at = ?1 WHERE hash = ?2", {now, hash_});
  }

 private:
  struct Sequence {
    bool started = false;
    int64_t count = 0;
    double max = -INFINITY, min = INFINITY;
  };

  // A repository-wide key of the meta tree.
  std::string path(std::initializer_list<PathKey> parts) const {
    std::vector<PathKey> full{std::string("meta")};
    full.insert(full.end(), parts);
    return aim::encode_path(full);
  }
  // A key of this run's part of the meta tree.
  std::string run_path(std::initializer_list<PathKey> parts) const {
    std::vector<PathKey> full{std::string("meta"), std::string("chunks"), hash_};
    full.insert(full.end(), parts);
    return aim::encode_path(full);
  }

  static void write_version(const std::string& file) {
    std::ofstream out(file);
    out << "1.3";  // aim 3.x's repository format
    require(out.good(), ErrorCode::IO, "aim: cannot write '" + file + "'");
  }

  // The run's row (and its experiment's, when new) in run_metadata.sqlite.
  void register_run(const std::string& file, const std::string& run_name) {
    sqlite_path_ = file;
    SqliteDb db(file, "aim");
    const bool empty =
        db.query_int("SELECT count(*) FROM sqlite_master WHERE name IN ('run', 'experiment')").value_or(0) == 0;
    if (empty) {
      db.exec(std::string("BEGIN;") + kSchema + "INSERT INTO alembic_version VALUES ('" + kAlembicRevision +
              "'); COMMIT;");
    }
    const std::string now = sqlite_now();
    std::optional<int64_t> experiment = db.query_int("SELECT id FROM experiment WHERE name = ?1", {experiment_});
    if (!experiment) {
      db.run("INSERT INTO experiment (uuid, name, created_at, updated_at, is_archived) VALUES (?1, ?2, ?3, ?3, 0)",
             {uuid4_text(), experiment_, now});
      experiment = db.last_insert_id();
    }
    db.run(
        "INSERT INTO run (hash, name, is_archived, created_at, updated_at, experiment_id) "
        "VALUES (?1, ?2, 0, ?3, ?3, ?4)",
        {hash_, run_name, now, *experiment});
  }

  std::string repo_, experiment_, hash_, sqlite_path_;
  std::unique_ptr<RocksDbWriter> meta_, seqs_;
  std::map<std::string, Sequence> sequences_;
  bool context_written_ = false;
};

}  // namespace

std::unique_ptr<Tracker> make_aim_tracker(const std::string& dir, const nlohmann::json& kwargs) {
  return std::make_unique<AimTracker>(dir, TrackerKwargs("aim", kwargs));
}

}  // namespace accel::detail
