// The trackio tracker's rows in trackio's SQLite store, read back with SQLite
// here; trackio's own CLI reads them in test_tracker_readers.py.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "accel/accelerator.hpp"
#include "core/remove_tree.hpp"

namespace {

namespace fs = std::filesystem;

struct TrackioStore : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("accel_trackio_" + std::to_string(::getpid()));
  std::string saved;
  void SetUp() override {
    accel::detail::remove_tree(dir);
    if (const char* old = std::getenv("TRACKIO_DIR")) saved = old;
    setenv("TRACKIO_DIR", dir.c_str(), 1);
  }
  void TearDown() override {
    if (saved.empty())
      unsetenv("TRACKIO_DIR");
    else
      setenv("TRACKIO_DIR", saved.c_str(), 1);
    accel::detail::remove_tree(dir);
  }
  static accel::Accelerator make() {
    accel::AcceleratorOptions options;
    options.cpu = true;
    options.log_with = {"trackio"};
    return accel::Accelerator(options);
  }
  // Every row of a query, each column as text (blobs included).
  std::vector<std::vector<std::string>> rows(const std::string& db, const std::string& sql) {
    sqlite3* handle = nullptr;
    EXPECT_EQ(sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* statement = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(handle, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sqlite3_errmsg(handle);
    std::vector<std::vector<std::string>> out;
    while (sqlite3_step(statement) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(statement); ++i) {
        const auto* text = static_cast<const char*>(sqlite3_column_blob(statement, i));
        row.emplace_back(text ? std::string(text, sqlite3_column_bytes(statement, i)) : "NULL");
      }
      out.push_back(row);
    }
    sqlite3_finalize(statement);
    sqlite3_close(handle);
    return out;
  }
};

TEST_F(TrackioStore, WritesConfigAndOneRowPerLogAsTrackioDoes) {
  auto accelerator = make();
  accelerator.init_trackers("my.project", {{"lr", 0.01}}, R"({"trackio": {"name": "r1"}})");
  accelerator.log({{"loss", 1.0}, {"step", 7.0}});  // "step" is one of trackio's reserved keys
  accelerator.log({{"loss", 0.5}}, 5);
  accelerator.log({{"loss", 0.25}});
  accelerator.end_training();
  const std::string db = (dir / "myproject.db").string();  // trackio's canonical project name
  EXPECT_EQ(rows(db, "PRAGMA user_version")[0][0], "2");
  const auto metrics = rows(db, "SELECT run_name, step, metrics, typeof(metrics) FROM metrics ORDER BY id");
  ASSERT_EQ(metrics.size(), 3u);
  EXPECT_EQ(metrics[0][1], "0");
  EXPECT_EQ(nlohmann::json::parse(metrics[0][2]), nlohmann::json::parse(R"({"loss": 1.0, "__step": 7.0})"));
  EXPECT_EQ(metrics[0][3], "blob");  // orjson's bytes, as trackio stores them
  EXPECT_EQ(metrics[1][1], "5");
  EXPECT_EQ(metrics[2][1], "6");  // after a given step, trackio continues from it
  for (const auto& row : metrics) EXPECT_EQ(row[0], "r1");
  const auto configs = rows(db, "SELECT run_name, config FROM configs");
  ASSERT_EQ(configs.size(), 1u);
  const auto config = nlohmann::json::parse(configs[0][1]);
  EXPECT_EQ(config["lr"], 0.01);
  EXPECT_TRUE(config["_Group"].is_null());
  EXPECT_TRUE(config.contains("_Created"));
}

TEST_F(TrackioStore, AStoreOfAnOlderSchemaIsRefusedByVersionAndLeftAlone) {
  fs::create_directories(dir);
  const std::string db = (dir / "old.db").string();
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(handle,
                         "CREATE TABLE metrics (id INTEGER PRIMARY KEY, timestamp TEXT, run_name TEXT, step INTEGER, "
                         "metrics TEXT); PRAGMA user_version = 1;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(handle);
  auto accelerator = make();
  try {
    accelerator.init_trackers("old");
    FAIL() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("schema version 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rows(db, "SELECT count(*) FROM sqlite_master WHERE name = 'configs'")[0][0], "0");
}

TEST_F(TrackioStore, UnsupportedKwargsAreNamed) {
  auto accelerator = make();
  try {
    accelerator.init_trackers("p", {}, R"({"trackio": {"space_id": "me/space"}})");
    FAIL() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'space_id'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "p.db"));
}

}  // namespace
