#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli/launch_environment.hpp"
#include "cli/launch_options.hpp"
#include "cli/launch_settings.hpp"

namespace {

using accel::cli::LaunchConfig;

// Parses `accel launch ARGS...` the way main() does.
LaunchConfig parse_launch(std::vector<std::string> args) {
  args.insert(args.begin(), {"accel", "launch"});
  std::vector<const char*> argv;
  for (const auto& arg : args) argv.push_back(arg.c_str());
  auto command_line = accel::cli::split_command_line(static_cast<int>(argv.size()), argv.data());

  CLI::App app;
  accel::cli::LaunchFlags flags;
  accel::cli::add_launch_options(*app.add_subcommand("launch"), flags);
  std::vector<std::string> reversed(command_line.options.rbegin(), command_line.options.rend());
  app.parse(reversed);
  accel::cli::take_program(*app.get_subcommand("launch"), command_line, flags);
  // An empty environment: no config file, no PET_* or ACCELERATE_* variables.
  std::vector<std::string> warnings;
  auto no_env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  LaunchConfig config = accel::cli::resolve_settings(flags, no_env, warnings);
  accel::cli::validate(config);
  return config;
}

using Args = std::vector<std::string>;

TEST(LaunchOptions, Defaults) {
  auto config = parse_launch({"train"});
  EXPECT_EQ(config.nproc_per_node, 1);
  EXPECT_EQ(config.nnodes, 1);
  EXPECT_EQ(config.node_rank, 0);
  EXPECT_EQ(config.master_addr, "127.0.0.1");
  EXPECT_EQ(config.master_port, 29500);
  EXPECT_DOUBLE_EQ(config.grace_period_s, 3.0);
  EXPECT_FALSE(config.dry_run);
  EXPECT_EQ(config.program, "train");
  EXPECT_TRUE(config.program_args.empty());
}

TEST(LaunchOptions, ReadsEveryFlag) {
  auto config = parse_launch({"--nproc_per_node", "4", "--nnodes", "2", "--node_rank", "1", "--master_addr", "10.0.0.1",
                              "--master_port", "4000", "--grace_period", "0.5", "--dry_run", "train"});
  EXPECT_EQ(config.nproc_per_node, 4);
  EXPECT_EQ(config.nnodes, 2);
  EXPECT_EQ(config.node_rank, 1);
  EXPECT_EQ(config.master_addr, "10.0.0.1");
  EXPECT_EQ(config.master_port, 4000);
  EXPECT_DOUBLE_EQ(config.grace_period_s, 0.5);
  EXPECT_TRUE(config.dry_run);
  EXPECT_EQ(config.world_size(), 8);
  EXPECT_EQ(config.global_rank(3), 7);
}

TEST(LaunchOptions, AcceptsTorchrunDashSpellingsAndEqualsSigns) {
  auto config = parse_launch({"--nproc-per-node=3", "--master-port=0", "--master-addr", "localhost", "train"});
  EXPECT_EQ(config.nproc_per_node, 3);
  EXPECT_EQ(config.master_port, 0);
  EXPECT_EQ(config.master_addr, "localhost");
}

TEST(LaunchOptions, EverythingFromProgramOnBelongsToTheProgram) {
  auto config = parse_launch({"--nproc_per_node", "2", "train", "--nproc_per_node", "5", "--help", "-v", "--", "x"});
  EXPECT_EQ(config.nproc_per_node, 2);
  EXPECT_EQ(config.program, "train");
  EXPECT_EQ(config.program_args, (Args{"--nproc_per_node", "5", "--help", "-v", "--", "x"}));
}

TEST(LaunchOptions, DoubleDashEndsTheLauncherFlags) {
  auto config = parse_launch({"--nproc_per_node", "2", "--", "train", "--epochs", "1"});
  EXPECT_EQ(config.nproc_per_node, 2);
  EXPECT_EQ(config.program, "train");
  EXPECT_EQ(config.program_args, (Args{"--epochs", "1"}));

  auto dash_program = parse_launch({"--", "--weird-name"});
  EXPECT_EQ(dash_program.program, "--weird-name");
}

TEST(LaunchOptions, RejectsBadValues) {
  EXPECT_THROW(parse_launch({"--nproc_per_node", "0", "train"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--nproc_per_node", "two", "train"}), CLI::ConversionError);
  EXPECT_THROW(parse_launch({"--nnodes", "0", "train"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--node_rank", "-1", "train"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--master_port", "65536", "train"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--grace_period", "-1", "train"}), CLI::ValidationError);
}

TEST(LaunchOptions, RejectsInconsistentNodes) {
  EXPECT_THROW(parse_launch({"--nnodes", "2", "--node_rank", "2", "--master_port", "1234", "train"}),
               CLI::ValidationError);
  // Each machine would pick its own free port.
  EXPECT_THROW(parse_launch({"--nnodes", "2", "--master_port", "0", "train"}), CLI::ValidationError);
  EXPECT_NO_THROW(parse_launch({"--nnodes", "2", "--node_rank", "1", "--master_port", "1234", "train"}));
}

TEST(LaunchOptions, AccelerateNamesForTheSameSettings) {
  auto config = parse_launch({"--num_machines",
                              "2",
                              "--machine_rank",
                              "1",
                              "--main_process_ip",
                              "10.0.0.9",
                              "--main_process_port",
                              "4100",
                              "--num_processes",
                              "6",
                              "--mixed_precision",
                              "bf16",
                              "--gradient_accumulation_steps",
                              "4",
                              "--cpu",
                              "--max_restarts",
                              "2",
                              "--monitor_interval",
                              "1",
                              "--multi_gpu",
                              "--same_network",
                              "train"});
  EXPECT_EQ(config.nnodes, 2);
  EXPECT_EQ(config.node_rank, 1);
  EXPECT_EQ(config.master_addr, "10.0.0.9");
  EXPECT_EQ(config.master_port, 4100);
  EXPECT_EQ(config.nproc_per_node, 3);  // --num_processes is the total over the machines
  EXPECT_EQ(config.world_size(), 6);
  EXPECT_EQ(config.mixed_precision, "bf16");
  EXPECT_EQ(config.gradient_accumulation_steps, 4);
  EXPECT_TRUE(config.use_cpu);
  EXPECT_EQ(config.max_restarts, 2);
  EXPECT_DOUBLE_EQ(config.monitor_interval_s, 1.0);
}

TEST(LaunchOptions, RendezvousFlagsAsAccelerateAndTorchrunSpellThem) {
  auto config = parse_launch({"--rdzv-backend", "c10d", "--rdzv-endpoint", "node0:29400", "--rdzv-id", "job",
                              "--rdzv-conf", "join_timeout=9", "--nnodes", "1:4", "--nproc-per-node", "2", "t"});
  EXPECT_TRUE(config.elastic.enabled);
  EXPECT_EQ(config.elastic.nodes.min, 1);
  EXPECT_EQ(config.elastic.nodes.max, 4);
  EXPECT_EQ(config.elastic.endpoint_host, "node0");
  EXPECT_EQ(config.elastic.run_id, "job");
  EXPECT_EQ(config.elastic.join_timeout_s, 9);
  // --nnodes N with c10d is elastic too (a fixed size); --num_machines is Accelerate's spelling.
  config = parse_launch({"--rdzv_backend", "c10d", "--num_machines", "2", "--main_process_port", "4000", "t"});
  EXPECT_TRUE(config.elastic.enabled);
  EXPECT_EQ(config.elastic.endpoint_port, 4000);
  EXPECT_THROW(parse_launch({"--rdzv_backend", "etcd", "t"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--nnodes", "3:2", "--rdzv_backend", "c10d", "t"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--rdzv_backend", "c10d", "--rdzv_conf", "bogus=1", "t"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--rdzv_backend", "c10d", "--rdzv_endpoint", "host:99999", "t"}), CLI::ValidationError);
}

std::string refusal(std::vector<std::string> args) {
  try {
    parse_launch(std::move(args));
  } catch (const CLI::ValidationError& error) {
    return error.what();
  }
  return "accepted";
}

TEST(LaunchOptions, AccelerateFlagsWithNoMeaningHereSayWhy) {
  EXPECT_NE(refusal({"--tpu", "t"}).find("--tpu: is not supported: TPU only"), std::string::npos);
  EXPECT_NE(refusal({"--dynamo_backend", "inductor", "t"}).find("torch.compile (TorchDynamo) is Python only"),
            std::string::npos);
  EXPECT_NE(refusal({"--fp8_backend", "te", "t"}).find("FP8 training"), std::string::npos);
  EXPECT_NE(refusal({"--main_training_function", "main", "t"}).find("a script runs as __main__ here"),
            std::string::npos);
  EXPECT_NE(refusal({"--use_deepspeed", "--gradient_clipping", "1.0", "t"}).find("call clip_grad_norm_"),
            std::string::npos);
  EXPECT_NE(refusal({"--offload_param_nvme_path", "/nvme", "t"}).find("NVMe is not supported"), std::string::npos);
  // The value of a refused option is not taken for PROGRAM.
  EXPECT_NE(refusal({"--megatron_lm_tp_degree", "2", "t"}).find("Megatron-LM"), std::string::npos);
  // Context parallelism's one strategy is taken; the ring rotation is not built.
  EXPECT_EQ(refusal({"--parallelism_config_cp_size", "2", "--parallelism_config_cp_comm_strategy", "allgather", "t"}),
            "accepted");
  EXPECT_NE(refusal({"--parallelism_config_cp_comm_strategy", "alltoall", "t"}).find("\"alltoall\" is not supported"),
            std::string::npos);
  EXPECT_NE(refusal({"--parallelism_config_sp_size", "2", "t"}).find("Ulysses"), std::string::npos);
}

TEST(LaunchOptions, FsdpAndDeepSpeedFlagsFollowTheConfigFileRules) {
  auto config = parse_launch({"--use_fsdp", "--fsdp_sharding_strategy", "FULL_SHARD", "--fsdp_offload_params", "true",
                              "--fsdp_state_dict_type", "SHARDED_STATE_DICT", "--fsdp_forward_prefetch", "true", "t"});
  EXPECT_EQ(config.sharding_env.at("FSDP_OFFLOAD_PARAMS"), "true");
  EXPECT_EQ(config.sharding_env.at("FSDP_STATE_DICT_TYPE"), "SHARDED_STATE_DICT");
  EXPECT_EQ(config.sharding_env.at("FSDP_FORWARD_PREFETCH"), "true");
  EXPECT_NE(refusal({"--use_fsdp", "--fsdp_state_dict_type", "LOCAL_STATE_DICT", "t"})
                .find("--fsdp_state_dict_type: LOCAL_STATE_DICT is not supported"),
            std::string::npos);
  EXPECT_NE(refusal({"--fsdp_offload_params", "true", "t"}).find("needs --use_fsdp"), std::string::npos);
  config = parse_launch({"--use_deepspeed", "--zero_stage", "2", "--offload_optimizer_device", "cpu", "t"});
  EXPECT_EQ(config.sharding_env.at("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"), "cpu");
  EXPECT_NE(refusal({"--offload_optimizer_device", "cpu", "t"}).find("needs --use_deepspeed"), std::string::npos);
  EXPECT_NE(refusal({"--use_deepspeed", "--zero_stage", "0", "--offload_optimizer_device", "cpu", "t"})
                .find("cpu needs zero_stage 1, 2 or 3"),
            std::string::npos);
}

TEST(LaunchOptions, QuietAndRole) {
  auto config = parse_launch({"-q", "--role", "trainer", "t"});
  EXPECT_TRUE(config.quiet);
  EXPECT_EQ(config.role, "trainer");
  EXPECT_EQ(accel::cli::rank_environment(config, 0).at("ROLE_NAME"), "trainer");
  // The notice is given only when OMP_NUM_THREADS is unset: unset it for the check.
  const char* omp = std::getenv("OMP_NUM_THREADS");
  const std::string saved = omp != nullptr ? omp : "";
  ::unsetenv("OMP_NUM_THREADS");
  config.nproc_per_node = 2;
  std::ostringstream quiet_notices, notices;
  accel::cli::resolve_defaults(config, quiet_notices);
  config.quiet = false;
  config.omp_num_threads.reset();
  accel::cli::resolve_defaults(config, notices);
  if (omp != nullptr) ::setenv("OMP_NUM_THREADS", saved.c_str(), 1);
  EXPECT_EQ(quiet_notices.str(), "") << "--quiet leaves the OMP_NUM_THREADS notice out";
  EXPECT_NE(notices.str().find("OMP_NUM_THREADS is not set"), std::string::npos) << notices.str();
}

TEST(LaunchOptions, ProcessCountsMustAgree) {
  EXPECT_NO_THROW(
      parse_launch({"--nnodes", "2", "--master_port", "9", "--nproc_per_node", "2", "--num_processes", "4", "t"}));
  EXPECT_THROW(parse_launch({"--nproc_per_node", "2", "--num_processes", "3", "t"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--nnodes", "2", "--master_port", "9", "--num_processes", "3", "t"}),
               CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--mixed_precision", "fp8", "t"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--gradient_accumulation_steps", "0", "t"}), CLI::ValidationError);
  EXPECT_THROW(parse_launch({"--max_restarts", "-1", "t"}), CLI::ValidationError);
}

// torchrun's and Accelerate's spellings: `-t 3` must not take PROGRAM for its value.
TEST(LaunchOptions, OutputStreamChoices) {
  auto config = parse_launch(
      {"--nproc_per_node", "2", "--log-dir", "logs", "-r", "2", "-t", "0:1", "--local-ranks-filter", "0", "train"});
  EXPECT_EQ(config.output.log_dir, "logs");
  ASSERT_TRUE(config.output.redirects && config.output.tee && config.output.local_ranks_filter);
  EXPECT_EQ(config.output.redirects->streams_of(1), 2u);
  EXPECT_EQ(config.output.tee->streams_of(0), 1u);
  EXPECT_EQ(*config.output.local_ranks_filter, std::vector<int>{0});
  EXPECT_EQ(config.program, "train");

  auto accelerate_style = parse_launch({"--tee", "3", "--log_dir", "logs", "train", "--tee"});
  EXPECT_EQ(accelerate_style.output.tee->streams_of(5), 3u);
  EXPECT_EQ(accelerate_style.program_args, (Args{"--tee"}));

  auto none = parse_launch({"train"});
  EXPECT_FALSE(none.output.redirects || none.output.tee || none.output.local_ranks_filter);
}

TEST(LaunchOptions, RejectsBadStreamChoicesNamingTheFlagAndValue) {
  auto message_of = [](const Args& args) -> std::string {
    try {
      parse_launch(args);
    } catch (const CLI::ValidationError& error) {
      return error.what();
    }
    return "accepted";
  };
  auto bad_tee = message_of({"--tee", "train", "x"});
  EXPECT_NE(bad_tee.find("--tee"), std::string::npos) << bad_tee;
  EXPECT_NE(bad_tee.find("\"train\""), std::string::npos) << bad_tee;
  auto bad_rank = message_of({"--nproc_per_node", "2", "--redirects", "0:3,2:3", "train"});
  EXPECT_NE(bad_rank.find("--redirects"), std::string::npos) << bad_rank;
  EXPECT_NE(bad_rank.find("local rank 2"), std::string::npos) << bad_rank;
  auto bad_filter = message_of({"--local_ranks_filter", "0,1", "train"});
  EXPECT_NE(bad_filter.find("local rank 1"), std::string::npos) << bad_filter;
}

TEST(LaunchOptions, RejectsUnknownFlagsAndAMissingProgram) {
  EXPECT_THROW(parse_launch({"--bogus", "train"}), CLI::ExtrasError);
  EXPECT_THROW(parse_launch({}), CLI::RequiredError);
  EXPECT_THROW(parse_launch({"--nproc_per_node", "2"}), CLI::RequiredError);
  EXPECT_THROW(parse_launch({"--"}), CLI::RequiredError);
}

TEST(LaunchOptions, HelpShowsProgramInTheUsage) {
  CLI::App app{"accel"};
  accel::cli::LaunchFlags flags;
  CLI::App* launch = app.add_subcommand("launch");
  accel::cli::add_launch_options(*launch, flags);
  std::string help = launch->help("accel");
  EXPECT_NE(help.find("Usage: accel launch [OPTIONS] PROGRAM [ARGS...]"), std::string::npos) << help;
}

}  // namespace
