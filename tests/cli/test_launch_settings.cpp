// Precedence of accel launch's settings: command line > environment > config file > defaults.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cli/launch_environment.hpp"
#include "cli/launch_settings.hpp"
#include "core/remove_tree.hpp"

namespace {

using accel::cli::LaunchConfig;
using accel::cli::LaunchFlags;

class LaunchSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/accel-settings-test-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    vars_["HF_HOME"] = dir_;
  }
  void TearDown() override { accel::detail::remove_tree(dir_); }

  void write_default_config(const std::string& text) {
    std::filesystem::create_directories(dir_ + "/accelerate");
    std::ofstream(dir_ + "/accelerate/default_config.yaml") << text;
  }
  LaunchConfig resolve(const LaunchFlags& flags) {
    warnings_.clear();
    auto lookup = [this](const std::string& name) -> std::optional<std::string> {
      auto found = vars_.find(name);
      return found == vars_.end() ? std::nullopt : std::optional<std::string>(found->second);
    };
    return accel::cli::resolve_settings(flags, lookup, warnings_);
  }
  static std::string origin_of(const LaunchConfig& config, const std::string& setting) {
    for (const auto& [name, value] : config.origins) {
      if (name == setting) return value;
    }
    return "missing";
  }

  std::string dir_;
  std::map<std::string, std::string> vars_;
  std::vector<std::string> warnings_;
};

TEST_F(LaunchSettingsTest, DefaultsWithoutAConfigFile) {
  auto config = resolve({});
  EXPECT_EQ(config.config_file, "");
  EXPECT_EQ(config.nproc_per_node, 1);
  EXPECT_EQ(config.mixed_precision, "no");
  EXPECT_FALSE(config.use_cpu);
  EXPECT_FALSE(config.gradient_accumulation_steps.has_value());
  EXPECT_EQ(origin_of(config, "master_port"), "29500  (default)");
}

TEST_F(LaunchSettingsTest, CommandLineBeatsEnvironmentBeatsConfigFile) {
  write_default_config(
      "num_processes: 4\nnum_machines: 2\nmixed_precision: fp16\nmain_process_port: 1111\n"
      "use_cpu: false\nunknown_thing: 1\n");
  auto from_file = resolve({});
  std::string file = dir_ + "/accelerate/default_config.yaml";
  EXPECT_EQ(from_file.config_file, file);
  EXPECT_EQ(from_file.nnodes, 2);
  EXPECT_EQ(from_file.nproc_per_node, 2);  // 4 in all over 2 machines
  EXPECT_EQ(from_file.mixed_precision, "fp16");
  EXPECT_EQ(from_file.master_port, 1111);
  EXPECT_EQ(origin_of(from_file, "mixed_precision"), "fp16  (" + file + ": mixed_precision)");
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_EQ(warnings_[0], file + ": ignoring unknown key 'unknown_thing'");

  vars_["ACCELERATE_MIXED_PRECISION"] = "bf16";
  vars_["PET_MASTER_PORT"] = "2222";
  vars_["ACCELERATE_USE_CPU"] = "True";
  vars_["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] = "3";
  vars_["PET_NPROC_PER_NODE"] = "3";  // torchrun's per-node count beats the file's total
  auto from_env = resolve({});
  EXPECT_EQ(from_env.mixed_precision, "bf16");
  EXPECT_EQ(from_env.master_port, 2222);
  EXPECT_TRUE(from_env.use_cpu);
  EXPECT_EQ(from_env.gradient_accumulation_steps, 3);
  EXPECT_EQ(from_env.nproc_per_node, 3);
  EXPECT_EQ(origin_of(from_env, "master_port"), "2222  (environment PET_MASTER_PORT)");

  LaunchFlags flags;
  flags.mixed_precision = "no";
  flags.master_port = 3333;
  flags.num_processes = 2;
  flags.gradient_accumulation_steps = 5;
  auto from_flags = resolve(flags);
  EXPECT_EQ(from_flags.mixed_precision, "no");
  EXPECT_EQ(from_flags.master_port, 3333);
  EXPECT_EQ(from_flags.nproc_per_node, 1);  // 2 in all over the file's 2 machines
  EXPECT_EQ(from_flags.gradient_accumulation_steps, 5);
  EXPECT_EQ(origin_of(from_flags, "master_port"), "3333  (command line --master_port)");

  auto env = accel::cli::rank_environment(from_flags, 0);
  EXPECT_EQ(env["ACCELERATE_MIXED_PRECISION"], "no");
  EXPECT_EQ(env["ACCELERATE_USE_CPU"], "true");
  EXPECT_EQ(env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"], "5");
  EXPECT_EQ(env["WORLD_SIZE"], "2");
}

TEST_F(LaunchSettingsTest, ConfigFileFlagAndItsSettings) {
  std::string path = dir_ + "/other.yaml";
  std::ofstream(path) << "distributed_type: MULTI_CPU\ngpu_ids: 0,1\n";
  LaunchFlags flags;
  flags.config_file = path;
  auto config = resolve(flags);
  EXPECT_EQ(config.config_file, path);
  EXPECT_TRUE(config.use_cpu);  // MULTI_CPU means the CPU
  EXPECT_EQ(accel::cli::rank_environment(config, 0)["CUDA_VISIBLE_DEVICES"], "0,1");

  flags.config_file = dir_ + "/missing.yaml";
  EXPECT_THROW(resolve(flags), accel::cli::ConfigFileError);
}

// Accelerate's sharding flags and config sections reach every rank as the
// variables Accelerate's launcher sets; the command line wins over the file.
TEST_F(LaunchSettingsTest, ShardingFromFlagsAndConfigFile) {
  write_default_config("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 1\n");
  auto from_file = accel::cli::rank_environment(resolve({}), 1);
  EXPECT_EQ(from_file["ACCELERATE_USE_DEEPSPEED"], "true");
  EXPECT_EQ(from_file["ACCELERATE_DEEPSPEED_ZERO_STAGE"], "1");

  LaunchFlags flags;
  flags.use_fsdp = true;
  flags.fsdp_sharding_strategy = "SHARD_GRAD_OP";
  auto config = resolve(flags);
  auto env = accel::cli::rank_environment(config, 0);
  EXPECT_EQ(env["ACCELERATE_USE_FSDP"], "true");
  EXPECT_EQ(env["FSDP_SHARDING_STRATEGY"], "2");
  EXPECT_EQ(env.count("ACCELERATE_USE_DEEPSPEED"), 0u);
  EXPECT_EQ(origin_of(config, "FSDP_SHARDING_STRATEGY"), "2  (command line)");

  auto error_of = [&](const LaunchFlags& bad) -> std::string {
    try {
      resolve(bad);
    } catch (const CLI::ValidationError& error) {
      return error.what();
    }
    return "no error";
  };
  flags.fsdp_sharding_strategy = "FULL_SHARD";
  EXPECT_EQ(accel::cli::rank_environment(resolve(flags), 0)["FSDP_SHARDING_STRATEGY"], "1");
  flags.fsdp_sharding_strategy = "HYBRID_SHARD";
  EXPECT_EQ(accel::cli::rank_environment(resolve(flags), 0)["FSDP_SHARDING_STRATEGY"], "4");
  flags.fsdp_sharding_strategy = "HYBRID_SHARD_ZERO2";
  EXPECT_NE(error_of(flags).find(
                "--fsdp_sharding_strategy: HYBRID_SHARD_ZERO2 (HYBRID_SHARD_ZERO2, SHARD_GRAD_OP within a node"),
            std::string::npos)
      << error_of(flags);
  flags.fsdp_sharding_strategy = "FULL_SHARD";
  // Accelerate's wrap-policy flags, as the config file's keys.
  flags.fsdp_auto_wrap_policy = "TRANSFORMER_BASED_WRAP";
  flags.fsdp_transformer_layer_cls_to_wrap = "GPT2Block";
  auto wrapped = accel::cli::rank_environment(resolve(flags), 0);
  EXPECT_EQ(wrapped["FSDP_AUTO_WRAP_POLICY"], "TRANSFORMER_BASED_WRAP");
  EXPECT_EQ(wrapped["FSDP_TRANSFORMER_CLS_TO_WRAP"], "GPT2Block");
  flags.fsdp_transformer_layer_cls_to_wrap.reset();
  EXPECT_NE(
      error_of(flags).find("--fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP needs fsdp_transformer_layer_cls_to_wrap"),
      std::string::npos)
      << error_of(flags);
  flags.fsdp_auto_wrap_policy = "SIZE_BASED_WRAP";
  flags.fsdp_min_num_params = "many";
  EXPECT_NE(error_of(flags).find("--fsdp_min_num_params: 'many' is not a parameter count"), std::string::npos)
      << error_of(flags);
  flags.fsdp_min_num_params = "2000";
  EXPECT_EQ(accel::cli::rank_environment(resolve(flags), 0)["FSDP_MIN_NUM_PARAMS"], "2000");
  flags.use_fsdp = false;
  EXPECT_NE(error_of(flags).find("needs --use_fsdp"), std::string::npos);
  flags.fsdp_auto_wrap_policy.reset();
  flags.fsdp_min_num_params.reset();
  EXPECT_NE(error_of(flags).find("--fsdp_sharding_strategy needs --use_fsdp"), std::string::npos);
  LaunchFlags deepspeed;
  deepspeed.use_deepspeed = true;
  deepspeed.zero_stage = 3;
  EXPECT_EQ(accel::cli::rank_environment(resolve(deepspeed), 0)["ACCELERATE_DEEPSPEED_ZERO_STAGE"], "3");
  deepspeed.zero_stage = 4;
  EXPECT_NE(error_of(deepspeed).find("--zero_stage: unknown ZeRO stage '4'"), std::string::npos) << error_of(deepspeed);
  deepspeed.zero_stage = 2;
  deepspeed.use_fsdp = true;
  EXPECT_NE(error_of(deepspeed).find("exclude each other"), std::string::npos);
}

TEST_F(LaunchSettingsTest, BadEnvironmentValuesAreNamed) {
  vars_["PET_NNODES"] = "many";
  try {
    resolve({});
    ADD_FAILURE() << "no error";
  } catch (const CLI::ValidationError& error) {
    EXPECT_NE(std::string(error.what()).find("PET_NNODES: the node count \"many\" is not a whole number"),
              std::string::npos)
        << error.what();
  }
  vars_.erase("PET_NNODES");
  vars_["ACCELERATE_MIXED_PRECISION"] = "fp8";
  EXPECT_THROW(resolve({}), CLI::ValidationError);
  vars_["ACCELERATE_MIXED_PRECISION"] = "no";
  vars_["ACCELERATE_USE_CPU"] = "perhaps";
  EXPECT_THROW(resolve({}), CLI::ValidationError);
}

TEST_F(LaunchSettingsTest, UnevenTotalFromTheFileIsNamed) {
  write_default_config("num_processes: 3\nnum_machines: 2\n");
  try {
    resolve({});
    ADD_FAILURE() << "no error";
  } catch (const CLI::ValidationError& error) {
    EXPECT_NE(std::string(error.what()).find("num_processes"), std::string::npos) << error.what();
  }
}

}  // namespace

// ParallelismConfig from --parallelism_config_* and the config file's section;
// the command line's sizes replace the file's.
TEST_F(LaunchSettingsTest, ParallelismFromFlagsAndConfigFile) {
  write_default_config("distributed_type: MULTI_CPU\nparallelism_config:\n  parallelism_config_dp_shard_size: 2\n");
  auto from_file = accel::cli::rank_environment(resolve({}), 0);
  EXPECT_EQ(from_file["ACCELERATE_USE_PARALLELISM_CONFIG"], "true");
  EXPECT_EQ(from_file["PARALLELISM_CONFIG_DP_SHARD_SIZE"], "2");
  LaunchFlags flags;
  flags.parallelism_sizes["tp"] = 2;
  auto from_flags = accel::cli::rank_environment(resolve(flags), 0);
  EXPECT_EQ(from_flags["ACCELERATE_USE_PARALLELISM_CONFIG"], "true");
  EXPECT_EQ(from_flags["PARALLELISM_CONFIG_TP_SIZE"], "2");
  EXPECT_EQ(from_flags.count("PARALLELISM_CONFIG_DP_SHARD_SIZE"), 0u);
}
