#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cli/config_file.hpp"
#include "cli/launch_settings.hpp"
#include "core/remove_tree.hpp"

namespace {

using accel::cli::ConfigFileError;
using accel::cli::load_config_file;

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/accel-config-test-XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  void TearDown() override { accel::detail::remove_tree(dir_); }

  std::string write(const std::string& text, const std::string& name = "config.yaml") {
    std::string path = dir_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }
  std::string error_of(const std::string& text) {
    try {
      load_config_file(write(text));
    } catch (const ConfigFileError& error) {
      return error.what();
    }
    return "no error";
  }

  std::string dir_;
};

// What `accelerate config default` 0.34 writes: JSON, which is YAML too.
const char* kAccelerateDefault = R"({
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
})";

// What `accelerate config` writes for two machines with two GPUs each.
const char* kAccelerateMultiMachine = R"(compute_environment: LOCAL_MACHINE
debug: false
distributed_type: MULTI_GPU
downcast_bf16: 'no'
enable_cpu_affinity: false
gpu_ids: all
machine_rank: 1
main_process_ip: 10.0.0.1
main_process_port: 29400
main_training_function: main
mixed_precision: bf16
num_machines: 2
num_processes: 4
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
)";

TEST_F(ConfigFileTest, ReadsWhatAccelerateWrites) {
  auto plain = load_config_file(write(kAccelerateDefault));
  EXPECT_TRUE(plain.warnings.empty()) << plain.warnings.front();
  EXPECT_EQ(plain.values.distributed_type, "NO");
  EXPECT_EQ(plain.values.num_processes, 1);
  EXPECT_EQ(plain.values.use_cpu, true);
  EXPECT_EQ(plain.values.mixed_precision, "no");

  auto multi = load_config_file(write(kAccelerateMultiMachine));
  EXPECT_TRUE(multi.warnings.empty());
  EXPECT_EQ(multi.values.num_machines, 2);
  EXPECT_EQ(multi.values.machine_rank, 1);
  EXPECT_EQ(multi.values.num_processes, 4);
  EXPECT_EQ(multi.values.main_process_ip, "10.0.0.1");
  EXPECT_EQ(multi.values.main_process_port, 29400);
  EXPECT_EQ(multi.values.mixed_precision, "bf16");
  EXPECT_EQ(multi.values.gpu_ids, "all");
  EXPECT_EQ(multi.values.use_cpu, false);
}

TEST_F(ConfigFileTest, RoundTripsWithAcceleratesKeys) {
  accel::cli::ConfigValues values;
  values.distributed_type = "MULTI_CPU";
  values.mixed_precision = "fp16";
  values.use_cpu = true;
  values.num_processes = 8;
  values.num_machines = 2;
  values.machine_rank = 1;
  values.main_process_ip = "192.168.0.4";
  values.main_process_port = 1234;
  values.gpu_ids = "0,1";
  std::string path = dir_ + "/new/folder/config.yaml";
  accel::cli::write_config_file(path, values);
  auto back = load_config_file(path);
  EXPECT_TRUE(back.warnings.empty());
  EXPECT_EQ(back.values.compute_environment, "LOCAL_MACHINE");
  EXPECT_EQ(back.values.distributed_type, values.distributed_type);
  EXPECT_EQ(back.values.mixed_precision, values.mixed_precision);
  EXPECT_EQ(back.values.use_cpu, values.use_cpu);
  EXPECT_EQ(back.values.num_processes, values.num_processes);
  EXPECT_EQ(back.values.num_machines, values.num_machines);
  EXPECT_EQ(back.values.machine_rank, values.machine_rank);
  EXPECT_EQ(back.values.main_process_ip, values.main_process_ip);
  EXPECT_EQ(back.values.main_process_port, values.main_process_port);
  EXPECT_EQ(back.values.gpu_ids, values.gpu_ids);

  // 'no', 'NO' and '0' are quoted: YAML 1.1 readers (PyYAML, so Accelerate)
  // would read a boolean or a number.
  accel::cli::ConfigValues one_gpu;
  one_gpu.gpu_ids = "0";
  accel::cli::write_config_file(path, one_gpu);
  std::ifstream defaults(path);
  std::string default_text((std::istreambuf_iterator<char>(defaults)), std::istreambuf_iterator<char>());
  EXPECT_NE(default_text.find("mixed_precision: 'no'"), std::string::npos) << default_text;
  EXPECT_NE(default_text.find("distributed_type: 'NO'"), std::string::npos) << default_text;
  EXPECT_NE(default_text.find("gpu_ids: '0'"), std::string::npos) << default_text;
  EXPECT_NE(default_text.find("compute_environment: LOCAL_MACHINE"), std::string::npos) << default_text;
  EXPECT_EQ(load_config_file(path).values.gpu_ids, "0");
}

TEST_F(ConfigFileTest, RefusesWhatWouldChangeTheJobNamingTheKey) {
  EXPECT_NE(error_of("distributed_type: DEEPSPEED\n").find("key 'distributed_type': DEEPSPEED (DeepSpeed)"),
            std::string::npos);
  EXPECT_NE(error_of("distributed_type: FSDP\n").find("key 'distributed_type': FSDP"), std::string::npos);
  EXPECT_NE(error_of("distributed_type: XLA\n").find("TPUs"), std::string::npos);
  EXPECT_NE(error_of("distributed_type: WEIRD\n").find("unknown value 'WEIRD'"), std::string::npos);
  EXPECT_NE(error_of("compute_environment: AMAZON_SAGEMAKER\n").find("key 'compute_environment'"),
            std::string::npos);
  EXPECT_NE(error_of("mixed_precision: fp8\n").find("key 'mixed_precision': fp8"), std::string::npos);
  EXPECT_NE(error_of("num_processes: two\n").find("key 'num_processes': expected an integer, got 'two'"),
            std::string::npos);
  EXPECT_NE(error_of("num_machines: 0\n").find("key 'num_machines': must be at least 1"), std::string::npos);
  EXPECT_NE(error_of("use_cpu: [1]\n").find("key 'use_cpu': expected true or false, got a list"),
            std::string::npos);
  EXPECT_NE(error_of("a: [\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error_of("- just\n- a list\n").find("expected a mapping"), std::string::npos);
  EXPECT_THROW(load_config_file(dir_ + "/missing.yaml"), ConfigFileError);
}

TEST_F(ConfigFileTest, WarnsAboutWhatItIgnoresNamingTheKey) {
  auto file = load_config_file(write("num_processes: -1\nfuture_key: 3\ndebug: true\nrdzv_backend: c10d\n"
                                     "fsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\ndynamo_config: {}\n"));
  EXPECT_FALSE(file.values.num_processes.has_value());  // Accelerate's "unset"
  std::string all;
  for (const auto& warning : file.warnings) all += warning + "\n";
  EXPECT_NE(all.find("ignoring unknown key 'future_key'"), std::string::npos) << all;
  EXPECT_NE(all.find("ignoring key 'debug'"), std::string::npos) << all;
  EXPECT_NE(all.find("ignoring key 'rdzv_backend': c10d"), std::string::npos) << all;
  EXPECT_NE(all.find("ignoring key 'fsdp_config'"), std::string::npos) << all;
  EXPECT_EQ(all.find("dynamo_config"), std::string::npos) << all;  // empty: nothing to ignore
  EXPECT_EQ(file.warnings.size(), 4u) << all;
  EXPECT_TRUE(load_config_file(write("")).warnings.empty());
}

TEST(ConfigLocation, FollowsAccelerate) {
  std::map<std::string, std::string> vars{{"HOME", "/home/u"}};
  auto lookup = [&vars](const std::string& name) -> std::optional<std::string> {
    auto found = vars.find(name);
    return found == vars.end() ? std::nullopt : std::optional<std::string>(found->second);
  };
  EXPECT_EQ(accel::cli::default_config_path(lookup), "/home/u/.cache/huggingface/accelerate/default_config.yaml");
  vars["XDG_CACHE_HOME"] = "/xdg";
  EXPECT_EQ(accel::cli::default_config_path(lookup), "/xdg/huggingface/accelerate/default_config.yaml");
  vars["HF_HOME"] = "/hf";
  EXPECT_EQ(accel::cli::default_config_path(lookup), "/hf/accelerate/default_config.yaml");
  vars.clear();
  EXPECT_EQ(accel::cli::default_config_path(lookup), std::nullopt);
}

// yaml-cpp parses nesting by recursion; a hostile file must be refused with
// a message, not overflow the stack of `accel launch`.
TEST_F(ConfigFileTest, RefusesDeepNestingNamingTheDepth) {
  const std::string deep_flow = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& text : {deep_flow + "\n", "num_processes: " + deep_flow + "\n"}) {
    std::string error = error_of(text);
    EXPECT_NE(error.find("config.yaml: not valid YAML: nested more than 499 levels deep"), std::string::npos)
        << error;
  }
  // Found by fuzz_config_yaml: a key that is a list escaped as yaml-cpp's exception.
  const std::string mapping_key = error_of("num_processes: 2\n{[1]: 2}: 3\n");
  EXPECT_NE(mapping_key.find("config.yaml: a key at line 2 is a mapping, not a setting name"), std::string::npos)
      << mapping_key;
  EXPECT_NE(error_of("[1]: 2\n").find("a key at line 1 is a list"), std::string::npos) << error_of("[1]: 2\n");
  std::string deep_block;
  for (int i = 0; i < 1000; ++i) deep_block += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  EXPECT_NE(error_of(deep_block).find("levels deep, yaml-cpp's limit"), std::string::npos);
}

}  // namespace
