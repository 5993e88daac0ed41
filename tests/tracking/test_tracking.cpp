// Tracker plumbing without the Python readers: CRC32C vectors, the registry,
// and jsonl records through the C++ API.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "accel/accelerator.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/crc32c.hpp"
#include "tracking/rocksdb_writer.hpp"
#include "tracking/tracker_registry.hpp"
#include "core/number_text.hpp"
#include "core/remove_tree.hpp"

namespace {

TEST(Crc32c, MatchesTheStandardCheckValues) {
  EXPECT_EQ(accel::detail::crc32c("123456789", 9), 0xE3069283u);  // RFC 3720 check value
  const std::string zeros(32, '\0');
  EXPECT_EQ(accel::detail::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(TrackerNames, AllExpandsAndUnknownNamesAreReported) {
  // "all": every built-in tracker that can run here (aim needs librocksdb), in order.
  std::vector<std::string> available;
  for (const auto& name : accel::builtin_tracker_names())
    if (accel::detail::builtin_tracker_available(name)) available.push_back(name);
  EXPECT_EQ(accel::detail::resolve_tracker_names({"all"}), available);
  EXPECT_EQ(available.size() + (accel::detail::rocksdb_available() ? 0 : 1), accel::builtin_tracker_names().size());
  EXPECT_EQ(accel::detail::resolve_tracker_names({"csv", "csv"}), std::vector<std::string>{"csv"});
  try {
    accel::detail::resolve_tracker_names({"jsonl", "comet"});
    FAIL() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'comet'"), std::string::npos);
  }
}

// Expected texts are Python's str(v) (whole numbers without ".0", see number_text.hpp).
TEST(TrackerNumbers, ShortestTextThatRoundTripsLaidOutAsPython) {
  using accel::detail::shortest_number_text;
  EXPECT_EQ(shortest_number_text(0.1), "0.1");
  EXPECT_EQ(shortest_number_text(3e-4), "0.0003");
  EXPECT_EQ(shortest_number_text(1e-4), "0.0001");
  EXPECT_EQ(shortest_number_text(1e-5), "1e-05");
  EXPECT_EQ(shortest_number_text(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(shortest_number_text(-2.5e-300), "-2.5e-300");
  EXPECT_EQ(shortest_number_text(123456.789), "123456.789");
  EXPECT_EQ(shortest_number_text(3.0), "3");
  EXPECT_EQ(shortest_number_text(1e15), "1000000000000000");
  EXPECT_EQ(shortest_number_text(1e16), "1e+16");
  EXPECT_EQ(shortest_number_text(1.5e16), "1.5e+16");
  EXPECT_EQ(shortest_number_text(0.0), "0");
  EXPECT_EQ(shortest_number_text(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(shortest_number_text(std::nan("")), "nan");
  EXPECT_EQ(shortest_number_text(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  EXPECT_EQ(shortest_number_text(std::numeric_limits<double>::denorm_min()), "5e-324");
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(TrackerNumbers, CsvAndMlflowWriteParamsAsPythonDoes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("accel_tracking_numbers_" + std::to_string(::getpid()));
  accel::detail::remove_tree(dir);
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.log_with = {"csv", "mlflow"};
  options.project.project_dir = dir.string();
  accel::Accelerator accelerator(options);
  accelerator.init_trackers("run", {{"lr", 0.1}, {"wd", 3e-4}});
  accelerator.log({{"loss", 0.3}}, 1);
  accelerator.end_training();
  EXPECT_EQ(read_all(dir / "logs" / "run" / "params.csv"), "name,value\nlr,0.1\nwd,0.0003\n");
  EXPECT_EQ(read_all(dir / "logs" / "run" / "metrics.csv"), "step,tag,value\n1,loss,0.3\n");
  int runs = 0;
  for (const auto& experiment : fs::directory_iterator(dir / "logs" / "mlruns"))
    for (const auto& run : fs::directory_iterator(experiment.path()))
      if (fs::exists(run.path() / "params" / "lr")) {
        ++runs;
        EXPECT_EQ(read_all(run.path() / "params" / "lr"), "0.1");
        EXPECT_EQ(read_all(run.path() / "params" / "wd"), "0.0003");
      }
  EXPECT_EQ(runs, 1);
  accel::detail::remove_tree(dir);
}

struct Counting : accel::Tracker {
  int logs = 0;
  std::string name() const override { return "counting"; }
  void init(const std::string&, const accel::TrackerConfig&) override {}
  void log(const accel::Scalars& values, std::optional<int64_t>) override { logs += static_cast<int>(values.size()); }
  void finish() override {}
};

TEST(Accelerator, LogsToBuiltinAndAddedTrackers) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("accel_tracking_" + std::to_string(::getpid()));
  accel::detail::remove_tree(dir);
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.log_with = {"jsonl"};
  options.project.project_dir = dir.string();
  accel::Accelerator accelerator(options);
  auto counting = std::make_shared<Counting>();
  accelerator.add_tracker(counting);
  EXPECT_EQ(accelerator.get_tracker("jsonl"), nullptr);
  accelerator.init_trackers("run", {{"lr", 0.5}, {"opt", std::string("adam")}});
  ASSERT_NE(accelerator.get_tracker("jsonl"), nullptr);
  EXPECT_EQ(accelerator.get_tracker("counting"), counting.get());
  accelerator.log({{"loss", 2.5}}, 4);
  accelerator.log({{"loss", 1.5}, {"acc", 0.5}});
  accelerator.end_training();
  EXPECT_EQ(counting->logs, 3);
  std::ifstream in(dir / "logs" / "run" / "metrics.jsonl");
  std::string first, second, third;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, R"({"loss":2.5,"step":4})");
  EXPECT_EQ(second, R"({"acc":0.5,"loss":1.5,"step":null})");
  EXPECT_FALSE(std::getline(in, third));
  accel::detail::remove_tree(dir);
}

struct FailingFinish : accel::Tracker {
  std::string name() const override { return "failing"; }
  void init(const std::string&, const accel::TrackerConfig&) override {}
  void log(const accel::Scalars&, std::optional<int64_t>) override {}
  void finish() override { accel::fail(accel::ErrorCode::IO, "failing: server gone"); }
};

struct Finishing : Counting {
  bool finished = false;
  std::string name() const override { return "finishing"; }
  void finish() override { finished = true; }
};

TEST(Accelerator, EndTrainingFinishesEveryTrackerAndReportsTheFirstFailure) {
  accel::AcceleratorOptions options;
  options.cpu = true;
  accel::Accelerator accelerator(options);
  auto finishing = std::make_shared<Finishing>();
  accelerator.add_tracker(std::make_shared<FailingFinish>());
  accelerator.add_tracker(finishing);
  accelerator.init_trackers("run");
  try {
    accelerator.end_training();
    FAIL() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::IO);
    EXPECT_NE(std::string(e.what()).find("server gone"), std::string::npos);
  }
  EXPECT_TRUE(finishing->finished);
}

}  // namespace
