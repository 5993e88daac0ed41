// The comet_ml tracker's archive and refusals. comet_ml's own reader and
// schemas check what it writes in tests/tracking/test_tracker_readers.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "accel/error.hpp"
#include "core/remove_tree.hpp"
#include "formats/torch_archive.hpp"
#include "tracking/builtin_trackers.hpp"

namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("accel_comet_" + name);
  accel::detail::remove_tree(dir.string());
  fs::create_directories(dir);
  return dir;
}

TEST(CometTracker, OneArchivePerRunWithTheExperimentAndItsMessages) {
  const fs::path dir = fresh_dir("archive");
  for (int run = 0; run < 2; ++run) {
    auto tracker = accel::detail::make_builtin_tracker("comet_ml", "", {{"offline_directory", dir.string()}});
    tracker->init("demo", {{"lr", 0.5}});
    tracker->log({{"loss", 1.0}}, 0);
    tracker->log({{"loss", std::nan("")}}, 1);
    tracker->finish();
    tracker->finish();  // once only
  }
  std::vector<fs::path> archives;
  for (const auto& entry : fs::directory_iterator(dir)) archives.push_back(entry.path());
  ASSERT_EQ(archives.size(), 2u);
  for (const auto& archive : archives) {
    std::ifstream in(archive, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto records = accel::detail::stored_records(accel::detail::StringArchiveBytes(bytes), archive.string());
    EXPECT_EQ(records.size(), 2u);
    EXPECT_EQ(records.count("experiment.json"), 1u);
    EXPECT_EQ(records.count("messages.json"), 1u);
    EXPECT_NE(bytes.find("\"metricValue\":\"NaN\""), std::string::npos) << "comet_ml's spelling of a NaN";
    EXPECT_NE(bytes.find("\"project_name\":\"demo\""), std::string::npos);
  }
  accel::detail::remove_tree(dir.string());
}

TEST(CometTracker, OnlineOptionsAndAnUnusableFolderAreNamed) {
  const fs::path dir = fresh_dir("refused");
  for (const auto& [kwargs, named] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"online", true}}, "'online'"}, {{{"api_key", "k"}}, "'api_key'"}, {{{"tags", {1}}}, "tags"}}) {
    try {
      accel::detail::make_builtin_tracker("comet_ml", "", kwargs);
      ADD_FAILURE() << kwargs.dump();
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
  const fs::path file = dir / "file";
  std::ofstream(file) << "not a folder";
  auto tracker = accel::detail::make_builtin_tracker("comet_ml", "", {{"offline_directory", (file / "runs").string()}});
  try {
    tracker->init("demo", {});
    ADD_FAILURE() << "a folder under a file was taken";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::IO);
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  tracker->log({{"loss", 1.0}}, 0);  // never started: nothing to write
  tracker->finish();
  accel::detail::remove_tree(dir.string());
}

}  // namespace
