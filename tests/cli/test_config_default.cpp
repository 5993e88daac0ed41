// `accel config default` writes what Accelerate 0.22's `accelerate config
// default` (write_basic_config) writes: the same keys, values and format
// (JSON, sorted keys, indent 2) for a machine without GPU, with one and with
// several. test_config_default_matches_accelerate.py compares with Accelerate
// itself on the machine running the tests.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/config_command.hpp"
#include "cli/config_file.hpp"
#include "core/remove_tree.hpp"

namespace {

// `accelerate config default` on a CPU-only host (Accelerate 1.15.0; 0.22.0
// wrote the same without enable_cpu_affinity).
const char* kAccelerateCpuDefault = R"({
  "compute_environment": "LOCAL_MACHINE",
  "debug": false,
  "distributed_type": "NO",
  "downcast_bf16": false,
  "enable_cpu_affinity": false,
  "machine_rank": 0,
  "main_training_function": "main",
  "mixed_precision": "no",
  "num_machines": 1,
  "num_processes": 1,
  "rdzv_backend": "static",
  "same_network": false,
  "tpu_use_cluster": false,
  "tpu_use_sudo": false,
  "use_cpu": true
}
)";

class ConfigDefault : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("accel_config_default_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    accel::detail::remove_tree(dir_);
  }
  void TearDown() override { accel::detail::remove_tree(dir_); }

  std::string write(std::optional<int> gpus, const std::string& precision = "no") {
    std::string path = (dir_ / "sub" / "default_config.yaml").string();
    std::ostringstream out;
    EXPECT_TRUE(accel::cli::write_default_config(path, precision, gpus, out));
    EXPECT_EQ(out.str(), "accel configuration saved at " + path + "\n");
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::filesystem::path dir_;
};

TEST_F(ConfigDefault, CpuOnlyHostIsByteForByteAccelerates) {
  EXPECT_EQ(write(0), kAccelerateCpuDefault);
  // accel launch reads it back, without warnings about Accelerate's keys.
  auto file = accel::cli::load_config_file((dir_ / "sub" / "default_config.yaml").string());
  EXPECT_EQ(file.values.use_cpu, true);
  EXPECT_EQ(file.values.distributed_type, "NO");
  EXPECT_EQ(file.values.num_processes, 1);
  EXPECT_TRUE(file.warnings.empty()) << file.warnings.front();
}

TEST_F(ConfigDefault, OneGpuIsOneProcessOnIt) {
  std::string text = write(1, "bf16");
  std::string expected = kAccelerateCpuDefault;
  expected.replace(expected.find("\"use_cpu\": true"), 15, "\"use_cpu\": false");
  expected.replace(expected.find("\"mixed_precision\": \"no\""), 23, "\"mixed_precision\": \"bf16\"");
  EXPECT_EQ(text, expected);
}

TEST_F(ConfigDefault, SeveralGpusAreMultiGpuWithOneProcessEach) {
  std::string text = write(4);
  std::string expected = kAccelerateCpuDefault;
  expected.replace(expected.find("\"use_cpu\": true"), 15, "\"use_cpu\": false");
  expected.replace(expected.find("\"num_processes\": 1"), 18, "\"num_processes\": 4");
  expected.replace(expected.find("\"distributed_type\": \"NO\""), 24, "\"distributed_type\": \"MULTI_GPU\"");
  EXPECT_EQ(text, expected);
}

TEST_F(ConfigDefault, UnknownDevicesLeaveTheGpuUsableAndAnExistingFileAlone) {
  std::string text = write(std::nullopt);
  EXPECT_NE(text.find("\"use_cpu\": false"), std::string::npos) << text;
  std::ostringstream out;
  std::string path = (dir_ / "sub" / "default_config.yaml").string();
  EXPECT_FALSE(accel::cli::write_default_config(path, "fp16", 0, out));
  EXPECT_NE(out.str().find("Configuration already exists at " + path), std::string::npos);
}

}  // namespace
