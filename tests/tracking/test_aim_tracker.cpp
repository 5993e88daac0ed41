// The aim tracker's repository beside another run, and its refusals. What Aim
// itself reads back (the run, hparams, every step) is checked with aim's SDK in
// tests/tracking/test_tracker_readers.py; the key and hash encodings in
// test_aim_encoding.cpp.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "accel/error.hpp"
#include "core/remove_tree.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/rocksdb_writer.hpp"

namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("accel_aim_" + name);
  accel::detail::remove_tree(dir);
  fs::create_directories(dir);
  return dir;
}

// SELECT rows as "a|b" strings.
std::vector<std::string> rows(const fs::path& db_path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<std::string> out;
  sqlite3_exec(
      db, sql,
      [](void* sink, int n, char** values, char**) {
        std::string row;
        for (int i = 0; i < n; ++i) row += (i ? "|" : "") + std::string(values[i] ? values[i] : "NULL");
        static_cast<std::vector<std::string>*>(sink)->push_back(row);
        return 0;
      },
      &out, nullptr);
  sqlite3_close(db);
  return out;
}

void run_once(const fs::path& repo, const std::string& project, const nlohmann::json& kwargs) {
  auto tracker = accel::detail::make_builtin_tracker("aim", repo.string(), kwargs);
  tracker->init(project, {{"lr", 0.5}, {"layers", 4.0}, {"optimizer", std::string("adamw")}});
  tracker->log({{"loss", 2.0}}, std::nullopt);
  tracker->log({{"loss", 1.0}}, std::nullopt);
  tracker->finish();
}

TEST(AimTracker, TwoRunsShareTheRepositoryAndTheirExperiment) {
  if (!accel::detail::rocksdb_available()) GTEST_SKIP() << "librocksdb is not installed";
  const fs::path repo = fresh_dir("two_runs");
  run_once(repo, "first", {{"experiment", "sweep"}});
  run_once(repo, "second", {{"experiment", "sweep"}});
  run_once(repo, "third", nullptr);
  const fs::path db = repo / ".aim" / "run_metadata.sqlite";
  EXPECT_EQ(rows(db, "SELECT name FROM experiment ORDER BY id"), (std::vector<std::string>{"sweep", "default"}));
  EXPECT_EQ(rows(db,
                 "SELECT run.name, experiment.name, finalized_at IS NOT NULL FROM run JOIN experiment "
                 "ON experiment.id = run.experiment_id ORDER BY run.id"),
            (std::vector<std::string>{"first|sweep|1", "second|sweep|1", "third|default|1"}));
  EXPECT_EQ(rows(db, "SELECT version_num FROM alembic_version"), (std::vector<std::string>{"46b89d830ad8"}));
  for (const auto& hash : rows(db, "SELECT hash FROM run")) {
    EXPECT_EQ(hash.size(), 24u);
    EXPECT_TRUE(fs::exists(repo / ".aim" / "meta" / "chunks" / hash / "CURRENT")) << hash;
    EXPECT_TRUE(fs::exists(repo / ".aim" / "seqs" / "chunks" / hash / "CURRENT")) << hash;
  }
  accel::detail::remove_tree(repo);
}

TEST(AimTracker, BadOptionsAndAnUnusableRepositoryAreNamed) {
  const fs::path repo = fresh_dir("refused");
  try {
    accel::detail::make_builtin_tracker("aim", repo.string(), {{"colour", "red"}});
    ADD_FAILURE() << "an unknown option was taken";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'colour'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(accel::detail::make_builtin_tracker("aim", repo.string(), {{"experiment", ""}}), accel::Error);
  EXPECT_THROW(accel::detail::make_builtin_tracker("aim", repo.string(), {{"experiment", 3}}), accel::Error);
  if (!accel::detail::rocksdb_available()) GTEST_SKIP() << "librocksdb is not installed";
  // The repository's place is a file: the error names it and no run is half made.
  const fs::path file = repo / "file";
  std::ofstream(file) << "not a directory";
  auto tracker = accel::detail::make_builtin_tracker("aim", file.string(), nullptr);
  try {
    tracker->init("demo", {});
    ADD_FAILURE() << "a file was taken as the repository";
  } catch (const accel::Error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  tracker->log({{"loss", 1.0}}, 0);  // nothing started: nothing written, no crash
  tracker->finish();
  accel::detail::remove_tree(repo);
}

}  // namespace
