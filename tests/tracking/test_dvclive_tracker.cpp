// The dvclive tracker's files, byte for byte as DVCLive 3.49 writes them for
// Accelerate's DVCLiveTracker (checked against dvclive itself; dvc reads them in
// test_tracker_readers.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <iterator>
#include <string>

#include "accel/accelerator.hpp"
#include "core/remove_tree.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct DvcLiveRun : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("accel_dvclive_" + std::to_string(::getpid()));
  void SetUp() override { accel::detail::remove_tree(dir); }
  void TearDown() override { accel::detail::remove_tree(dir); }
  accel::Accelerator make() {
    accel::AcceleratorOptions options;
    options.cpu = true;
    options.log_with = {"dvclive"};
    options.project.logging_dir = dir.string();
    return accel::Accelerator(options);
  }
};

TEST_F(DvcLiveRun, WritesParamsPlotsAndTheLatestMetrics) {
  auto accelerator = make();
  accelerator.init_trackers("proj", {{"lr", 0.01}, {"opt", std::string("adam")}, {"eps", 1e-5}});
  for (int step = 0; step < 3; ++step) accelerator.log({{"train/loss", 1.0 / (step + 1)}, {"acc", 0.5}});
  accelerator.end_training();
  const fs::path live = dir / "dvclive";
  EXPECT_EQ(read_all(live / "params.yaml"), "\"eps\": 1.0e-05\n\"lr\": 0.01\n\"opt\": \"adam\"\n");
  EXPECT_EQ(read_all(live / "plots/metrics/acc.tsv"), "step\tacc\n0\t0.5\n1\t0.5\n2\t0.5\n");
  EXPECT_EQ(read_all(live / "plots/metrics/train/loss.tsv"), "step\tloss\n0\t1.0\n1\t0.5\n2\t0.3333333333333333\n");
  EXPECT_EQ(nlohmann::json::parse(read_all(live / "metrics.json")),
            nlohmann::json::parse(R"({"train": {"loss": 0.3333333333333333}, "acc": 0.5, "step": 2})"));
  EXPECT_NE(read_all(live / "dvc.yaml").find("plots/metrics"), std::string::npos);
}

// Accelerate sets live.step to the given step before logging, then next_step().
TEST_F(DvcLiveRun, AGivenStepIsUsedAndTheNextCallContinuesFromIt) {
  auto accelerator = make();
  accelerator.init_trackers("proj", {}, R"({"dvclive": {"dir": ")" + (dir / "out").string() + R"("}})");
  accelerator.log({{"loss", 2.0}}, 10);
  accelerator.log({{"loss", 1.0}});
  accelerator.end_training();
  EXPECT_EQ(read_all(dir / "out/plots/metrics/loss.tsv"), "step\tloss\n10\t2.0\n11\t1.0\n");
  EXPECT_EQ(nlohmann::json::parse(read_all(dir / "out/metrics.json"))["step"], 11);
  EXPECT_FALSE(fs::exists(dir / "out/params.yaml"));  // no config, no params file
}

TEST_F(DvcLiveRun, NamesThatLeaveTheFolderOrClashAreRefusedBeforeAnyWrite) {
  auto accelerator = make();
  accelerator.init_trackers("proj");
  accelerator.log({{"a", 1.0}}, 0);
  for (const std::string bad : {"../escape", "x//y", "/abs", "a/b", "step", "."}) {
    try {
      accelerator.log({{"ok", 1.0}, {bad, 2.0}}, 1);
      FAIL() << bad;
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(dir / "dvclive/plots/metrics/ok.tsv"));  // nothing of a refused call was written
  EXPECT_FALSE(fs::exists(dir / "escape.tsv"));
  EXPECT_EQ(nlohmann::json::parse(read_all(dir / "dvclive/metrics.json"))["step"], 0);
  accelerator.end_training();
}

}  // namespace
