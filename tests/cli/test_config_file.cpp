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
  EXPECT_NE(error_of("distributed_type: MEGATRON_LM\n").find("key 'distributed_type': MEGATRON_LM (Megatron-LM)"),
            std::string::npos);
  EXPECT_NE(error_of("distributed_type: XLA\n").find("TPUs"), std::string::npos);
  EXPECT_NE(error_of("distributed_type: WEIRD\n").find("unknown value 'WEIRD'"), std::string::npos);
  EXPECT_NE(error_of("compute_environment: AMAZON_SAGEMAKER\n").find("key 'compute_environment'"), std::string::npos);
  EXPECT_NE(error_of("mixed_precision: fp8\n").find("key 'mixed_precision': fp8"), std::string::npos);
  EXPECT_NE(error_of("num_processes: two\n").find("key 'num_processes': expected an integer, got 'two'"),
            std::string::npos);
  EXPECT_NE(error_of("num_machines: 0\n").find("key 'num_machines': must be at least 1"), std::string::npos);
  EXPECT_NE(error_of("use_cpu: [1]\n").find("key 'use_cpu': expected true or false, got a list"), std::string::npos);
  EXPECT_NE(error_of("a: [\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error_of("- just\n- a list\n").find("expected a mapping"), std::string::npos);
  EXPECT_THROW(load_config_file(dir_ + "/missing.yaml"), ConfigFileError);
}

TEST_F(ConfigFileTest, WarnsAboutWhatItIgnoresNamingTheKey) {
  auto file =
      load_config_file(write("num_processes: -1\nfuture_key: 3\ndebug: true\nrdzv_backend: c10d\n"
                             "fsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\ndynamo_config: {}\n"));
  EXPECT_FALSE(file.values.num_processes.has_value());  // Accelerate's "unset"
  std::string all;
  for (const auto& warning : file.warnings) all += warning + "\n";
  EXPECT_NE(all.find("ignoring unknown key 'future_key'"), std::string::npos) << all;
  EXPECT_NE(all.find("ignoring key 'debug'"), std::string::npos) << all;
  // rdzv_backend is read now (the c10d rendezvous of elastic jobs), not ignored.
  EXPECT_EQ(all.find("rdzv_backend"), std::string::npos) << all;
  EXPECT_EQ(file.values.rdzv_backend, "c10d");
  EXPECT_NE(all.find("ignoring key 'fsdp_config': not used: distributed_type is NO"), std::string::npos) << all;
  EXPECT_EQ(all.find("dynamo_config"), std::string::npos) << all;  // empty: nothing to ignore
  EXPECT_EQ(file.warnings.size(), 3u) << all;
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
    EXPECT_NE(error.find("config.yaml: not valid YAML: nested more than 499 levels deep"), std::string::npos) << error;
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

// Accelerate's fsdp_config and deepspeed_config map onto the variables the
// ranks read; each key it cannot honour is an error naming it.
TEST_F(ConfigFileTest, FsdpConfigMapsOntoTheShardingStrategy) {
  using Env = std::map<std::string, std::string>;
  auto env_of = [&](const std::string& text) { return load_config_file(write(text)).values.sharding_env; };
  EXPECT_EQ(env_of("distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n"),
            (Env{{"ACCELERATE_USE_FSDP", "true"}, {"FSDP_SHARDING_STRATEGY", "2"}}));
  EXPECT_EQ(env_of("distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: 3\n"),
            (Env{{"ACCELERATE_USE_FSDP", "true"}, {"FSDP_SHARDING_STRATEGY", "3"}}));
  EXPECT_TRUE(env_of("distributed_type: MULTI_CPU\n").empty());
  // What `accelerate config` writes for SHARD_GRAD_OP: every key accepted.
  auto file = load_config_file(
      write("distributed_type: FSDP\nfsdp_config:\n  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n"
            "  fsdp_backward_prefetch_policy: BACKWARD_PRE\n  fsdp_forward_prefetch: false\n"
            "  fsdp_min_num_params: 2000\n  fsdp_transformer_layer_cls_to_wrap: BertLayer\n"
            "  fsdp_offload_params: false\n  fsdp_sharding_strategy: 2\n  fsdp_state_dict_type: FULL_STATE_DICT\n"
            "  fsdp_sync_module_states: true\n  fsdp_use_orig_params: true\n  fsdp_cpu_ram_efficient_loading: true\n"
            "  fsdp_activation_checkpointing: false\n"));
  EXPECT_EQ(file.values.sharding_env,
            (Env{{"ACCELERATE_USE_FSDP", "true"},
                 {"FSDP_SHARDING_STRATEGY", "2"},
                 {"FSDP_AUTO_WRAP_POLICY", "SIZE_BASED_WRAP"},
                 {"FSDP_MIN_NUM_PARAMS", "2000"},
                 {"FSDP_STATE_DICT_TYPE", "FULL_STATE_DICT"},
                 {"FSDP_TRANSFORMER_CLS_TO_WRAP", "BertLayer"},  // read under TRANSFORMER_BASED_WRAP only
                 {"FSDP_BACKWARD_PREFETCH", "BACKWARD_PRE"},
                 {"FSDP_FORWARD_PREFETCH", "false"}}));
  std::string all;
  for (const auto& warning : file.warnings) all += warning + "\n";
  EXPECT_EQ(all.find("fsdp_backward_prefetch_policy"), std::string::npos) << all;  // honoured now

  // FULL_SHARD (FSDP's default, 1) with a sharded state dict.
  const std::string fsdp = "distributed_type: FSDP\nfsdp_config:\n";
  EXPECT_EQ(env_of(fsdp + "  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_state_dict_type: SHARDED_STATE_DICT\n"),
            (Env{{"ACCELERATE_USE_FSDP", "true"},
                 {"FSDP_SHARDING_STRATEGY", "1"},
                 {"FSDP_STATE_DICT_TYPE", "SHARDED_STATE_DICT"}}));
  EXPECT_EQ(env_of("distributed_type: FSDP\n").at("FSDP_SHARDING_STRATEGY"), "1");
  EXPECT_EQ(env_of(fsdp + "  fsdp_sharding_strategy: HYBRID_SHARD\n").at("FSDP_SHARDING_STRATEGY"), "4");
  EXPECT_NE(error_of(fsdp + "  fsdp_sharding_strategy: 5\n").find("5 (HYBRID_SHARD_ZERO2"), std::string::npos);
  EXPECT_NE(error_of(fsdp + "  fsdp_sharding_strategy: HYBRID_SHARD_ZERO2\n").find("HYBRID_SHARD_ZERO2"),
            std::string::npos);
  EXPECT_NE(error_of(fsdp + "  fsdp_sharding_strategy: ZERO9\n").find("unknown value 'ZERO9'"), std::string::npos);
  EXPECT_NE(
      error_of(fsdp + "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n")
          .find("'fsdp_config.fsdp_auto_wrap_policy': TRANSFORMER_BASED_WRAP needs fsdp_transformer_layer_cls_to_wrap"),
      std::string::npos);
  const Env by_class =
      env_of(fsdp +
             "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_transformer_layer_cls_to_wrap: GPT2Block,"
             "BertLayer\n");
  EXPECT_EQ(by_class.at("FSDP_AUTO_WRAP_POLICY"), "TRANSFORMER_BASED_WRAP");
  EXPECT_EQ(by_class.at("FSDP_TRANSFORMER_CLS_TO_WRAP"), "GPT2Block,BertLayer");
  EXPECT_NE(error_of(fsdp + "  fsdp_backward_prefetch: EARLY\n").find("unknown value 'EARLY'"), std::string::npos);
  EXPECT_EQ(env_of(fsdp + "  fsdp_backward_prefetch: NO_PREFETCH\n  fsdp_forward_prefetch: true\n")
                .at("FSDP_FORWARD_PREFETCH"),
            "true");
  EXPECT_NE(error_of(fsdp + "  fsdp_auto_wrap_policy: EVERYTHING\n").find("unknown value 'EVERYTHING'"),
            std::string::npos);
  EXPECT_NE(error_of(fsdp + "  fsdp_min_num_params: -5\n").find("'fsdp_config.fsdp_min_num_params': '-5' is not"),
            std::string::npos);
  EXPECT_NE(error_of(fsdp + "  fsdp_state_dict_type: LOCAL_STATE_DICT\n").find("LOCAL_STATE_DICT is not supported"),
            std::string::npos);
  const std::string grad_op = fsdp + "  fsdp_sharding_strategy: 2\n";
  EXPECT_EQ(env_of(grad_op + "  fsdp_offload_params: true\n").at("FSDP_OFFLOAD_PARAMS"), "true");
  EXPECT_NE(error_of(fsdp + "  fsdp_sharding_strategy: NO_SHARD\n  fsdp_offload_params: true\n")
                .find("'fsdp_config.fsdp_offload_params': true: offload moves a sharded model's state, and "
                      "fsdp_sharding_strategy is NO_SHARD (3)"),
            std::string::npos);
  EXPECT_NE(error_of(grad_op + "  fsdp_activation_checkpointing: true\n")
                .find("'fsdp_config.fsdp_activation_checkpointing': true: checkpointing runs per FULL_SHARD wrap unit, "
                      "and fsdp_sharding_strategy is 2"),
            std::string::npos);
  EXPECT_EQ(env_of(fsdp + "  fsdp_activation_checkpointing: true\n").at("FSDP_ACTIVATION_CHECKPOINTING"), "true");
  EXPECT_NE(error_of(grad_op + "  fsdp_sync_module_states: maybe\n").find("expected true or false, got 'maybe'"),
            std::string::npos);
  EXPECT_NE(error_of(grad_op + "  fsdp_flux: 1\n").find("'fsdp_config.fsdp_flux': unknown FSDP setting"),
            std::string::npos);
}

TEST_F(ConfigFileTest, DeepSpeedZeroStageMapsOntoTheShardingStrategy) {
  using Env = std::map<std::string, std::string>;
  auto env_of = [&](const std::string& text) { return load_config_file(write(text)).values.sharding_env; };
  const std::string ds = "distributed_type: DEEPSPEED\ndeepspeed_config:\n";
  EXPECT_EQ(env_of(ds + "  zero_stage: 1\n  offload_optimizer_device: none\n  offload_param_device: none\n"
                        "  gradient_accumulation_steps: 1\n  zero3_init_flag: false\n"),
            (Env{{"ACCELERATE_USE_DEEPSPEED", "true"}, {"ACCELERATE_DEEPSPEED_ZERO_STAGE", "1"}}));
  EXPECT_EQ(env_of("distributed_type: DEEPSPEED\n").at("ACCELERATE_DEEPSPEED_ZERO_STAGE"),
            "2");  // Accelerate's default
  std::ofstream(dir_ + "/ds.json") << R"({"zero_optimization": {"stage": 1, "offload_optimizer": {"device": "none"}}})";
  EXPECT_EQ(env_of(ds + "  deepspeed_config_file: " + dir_ + "/ds.json\n").at("ACCELERATE_DEEPSPEED_ZERO_STAGE"), "1");

  EXPECT_EQ(env_of(ds + "  zero_stage: 3\n").at("ACCELERATE_DEEPSPEED_ZERO_STAGE"), "3");  // FULL_SHARD
  EXPECT_NE(error_of(ds + "  zero3_init_flag: true\n").find("'deepspeed_config.zero3_init_flag': true"),
            std::string::npos);
  EXPECT_NE(error_of(ds + "  zero_stage: 7\n").find("unknown ZeRO stage '7'"), std::string::npos);
  // Offload to the CPU (docs/sharding.md); DeepSpeed's rules on which stage may offload what.
  EXPECT_EQ(env_of(ds + "  offload_optimizer_device: cpu\n"),
            (Env{{"ACCELERATE_USE_DEEPSPEED", "true"},
                 {"ACCELERATE_DEEPSPEED_ZERO_STAGE", "2"},
                 {"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "cpu"}}));
  EXPECT_EQ(
      env_of(ds + "  zero_stage: 3\n  offload_param_device: cpu\n").at("ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE"),
      "cpu");
  EXPECT_NE(error_of(ds + "  zero_stage: 2\n  offload_param_device: cpu\n")
                .find("'deepspeed_config.offload_param_device': cpu needs zero_stage 3, and it is 2"),
            std::string::npos);
  EXPECT_NE(error_of(ds + "  zero_stage: 0\n  offload_optimizer_device: cpu\n")
                .find("'deepspeed_config.offload_optimizer_device': cpu needs zero_stage 1, 2 or 3, and it is 0"),
            std::string::npos);
  EXPECT_NE(error_of(ds + "  offload_optimizer_device: nvme\n")
                .find("'deepspeed_config.offload_optimizer_device': 'nvme': offload to NVMe is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(ds + "  offload_param_device: disk\n").find("unknown device 'disk' (expected none, cpu or nvme)"),
            std::string::npos);
  EXPECT_NE(error_of(ds + "  gradient_accumulation_steps: 4\n").find("--gradient_accumulation_steps"),
            std::string::npos);
  EXPECT_NE(error_of(ds + "  zero_magic: 1\n").find("'deepspeed_config.zero_magic': unknown DeepSpeed setting"),
            std::string::npos);
  std::ofstream(dir_ + "/ds3.json") << R"({"zero_optimization": {"stage": 3}})";
  EXPECT_EQ(env_of(ds + "  deepspeed_config_file: " + dir_ + "/ds3.json\n").at("ACCELERATE_DEEPSPEED_ZERO_STAGE"),
            "3");  // ZeRO-3: FULL_SHARD
  std::ofstream(dir_ + "/off.json") << R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})";
  EXPECT_EQ(env_of(ds + "  deepspeed_config_file: " + dir_ + "/off.json\n")
                .at("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"),
            "cpu");
  std::ofstream(dir_ + "/nvme.json") << R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})";
  EXPECT_NE(error_of(ds + "  deepspeed_config_file: " + dir_ + "/nvme.json\n").find("'nvme': offload to NVMe"),
            std::string::npos);
}

}  // namespace

// Accelerate's parallelism_config section (what `accelerate config` writes)
// maps onto the variables the ranks read; other keys are named and ignored.
TEST_F(ConfigFileTest, ParallelismConfigSizesBecomeTheRanksVariables) {
  using Env = std::map<std::string, std::string>;
  auto file =
      load_config_file(write("distributed_type: MULTI_CPU\nparallelism_config:\n"
                             "  parallelism_config_dp_replicate_size: 2\n  parallelism_config_tp_size: 2\n"
                             "  parallelism_config_cp_comm_strategy: allgather\n"
                             "  parallelism_config_sp_backend: deepspeed\n"));
  EXPECT_EQ(file.values.parallelism_env, (Env{{"ACCELERATE_USE_PARALLELISM_CONFIG", "true"},
                                              {"PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "2"},
                                              {"PARALLELISM_CONFIG_TP_SIZE", "2"}}));
  // allgather is what context parallelism does; alltoall is not built.
  ASSERT_EQ(file.warnings.size(), 1u);
  EXPECT_NE(file.warnings[0].find("parallelism_config_sp_backend"), std::string::npos);
  EXPECT_NE(error_of("parallelism_config:\n  parallelism_config_cp_comm_strategy: alltoall\n")
                .find("\"alltoall\" is not built"),
            std::string::npos);
  EXPECT_TRUE(load_config_file(write("parallelism_config: {}\n")).values.parallelism_env.empty());
  EXPECT_NE(error_of("parallelism_config:\n  parallelism_config_tp_size: 0\n")
                .find("'parallelism_config_tp_size': expected a positive integer, got 0"),
            std::string::npos);
  EXPECT_NE(error_of("parallelism_config:\n  parallelism_config_tp_size: two\n").find("expected a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of("parallelism_config: 2\n").find("'parallelism_config': expected a mapping"), std::string::npos);
}
