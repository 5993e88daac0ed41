#include "cli/launch_options.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace accel::cli {

namespace {

// CLI11 2.1's usage line cannot show what prefix_command() leaves over; this
// adds it: "Usage: accel launch [OPTIONS] PROGRAM [ARGS...]".
class ProgramUsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string usage = CLI::Formatter::make_usage(app, std::move(name));
    usage.insert(usage.find_last_not_of('\n') + 1, " PROGRAM [ARGS...]");
    return usage;
  }
};

// CLI11's PositiveNumber and NonNegativeNumber quote the largest double in
// their error message; this says "must be at least 1, got 0".
CLI::Validator at_least(double minimum, const std::string& name) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        double value = 0;
        // A value that is not a number is left to the conversion, which says so.
        if (!CLI::detail::lexical_cast(text, value) || value >= minimum) return {};
        std::ostringstream message;
        message << "must be at least " << minimum << ", got " << text;
        return message.str();
      },
      name);
}

}  // namespace

namespace {

// An option that stores into an optional, so that resolution knows whether it
// was given (command line > environment > config file > defaults).
template <typename T>
CLI::Option* add_optional(CLI::App& app, const std::string& names, std::optional<T>& target, const std::string& help) {
  return app.add_option_function<T>(
      names, [&target](const T& value) { target = value; }, help);
}

// `accelerate launch` flags with no meaning here: each is an error saying why,
// rather than CLI11's "not expected". docs/accelerate-differences.md lists them.
struct RefusedFlag {
  const char* names;
  bool takes_value;
  const char* why;
};
constexpr const char* kTpu = "TPU only; libaccel runs on CPUs and CUDA GPUs";
constexpr const char* kDynamo = "torch.compile (TorchDynamo) is Python only; LibTorch has no compiler to call";
constexpr const char* kFp8 = "FP8 training (Transformer Engine, MS-AMP, torchao) is not supported; use bf16";
constexpr const char* kMegatron = "Megatron-LM is a Python framework; libaccel does not drive it";
constexpr const char* kSequenceParallel =
    "DeepSpeed's Ulysses sequence parallelism is not built (context parallelism is: --parallelism_config_cp_size)";
constexpr const char* kDeepSpeedLauncher =
    "DeepSpeed's own launcher (pdsh, hostfiles) is not used: run accel launch on each machine, or under srun/mpirun";
const RefusedFlag kRefusedFlags[] = {
    {"--tpu", false, kTpu},
    {"--tpu_cluster", false, kTpu},
    {"--no_tpu_cluster", false, kTpu},
    {"--tpu_use_sudo", false, kTpu},
    {"--vm", true, kTpu},
    {"--env", true, kTpu},
    {"--main_training_function", true, "TPU only (xla_spawn calls that function); a script runs as __main__ here"},
    {"--downcast_bf16", false, kTpu},
    {"--dynamo_backend", true, kDynamo},
    {"--dynamo_mode", true, kDynamo},
    {"--dynamo_use_fullgraph", false, kDynamo},
    {"--dynamo_use_dynamic", false, kDynamo},
    {"--dynamo_use_regional_compilation", false, kDynamo},
    {"--fp8_backend", true, kFp8},
    {"--fp8_use_autocast", false, kFp8},
    {"--fp8_margin", true, kFp8},
    {"--fp8_interval", true, kFp8},
    {"--fp8_format", true, kFp8},
    {"--fp8_amax_history_len", true, kFp8},
    {"--fp8_amax_compute_algo", true, kFp8},
    {"--fp8_override_linear_precision", true, kFp8},
    {"--fp8_opt_level", true, kFp8},
    {"--use_megatron_lm", false, kMegatron},
    {"--megatron_lm_tp_degree", true, kMegatron},
    {"--megatron_lm_pp_degree", true, kMegatron},
    {"--megatron_lm_num_micro_batches", true, kMegatron},
    {"--megatron_lm_sequence_parallelism", true, kMegatron},
    {"--megatron_lm_recompute_activations", true, kMegatron},
    {"--megatron_lm_use_distributed_optimizer", true, kMegatron},
    {"--megatron_lm_gradient_clipping", true, kMegatron},
    {"--ipex", false, "Intel Extension for PyTorch is Python only"},
    {"--use_xpu", false, "Intel XPUs are not supported; libaccel runs on CPUs and CUDA GPUs"},
    {"--mpirun_hostfile", true, "Accelerate's mpirun launcher is not used: start accel's ranks with mpirun directly"},
    {"--mpirun_ccl", true, "oneCCL is not supported; CPU collectives use Gloo"},
    {"--aws_access_key_id", true, "SageMaker launching is not supported"},
    {"--aws_secret_access_key", true, "SageMaker launching is not supported"},
    {"--deepspeed_hostfile", true, kDeepSpeedLauncher},
    {"--deepspeed_exclusion_filter", true, kDeepSpeedLauncher},
    {"--deepspeed_inclusion_filter", true, kDeepSpeedLauncher},
    {"--deepspeed_moe_layer_cls_names", true, "mixture-of-experts layers are not supported"},
    {"--offload_optimizer_nvme_path", true, "offload to NVMe is not supported (use --offload_optimizer_device cpu)"},
    {"--offload_param_nvme_path", true, "offload to NVMe is not supported"},
    {"--gradient_clipping", true,
     "DeepSpeed's engine clips inside its step, and libaccel has no engine: call clip_grad_norm_ before the "
     "optimizer step, as without DeepSpeed"},
    {"--fsdp_version", true, "FSDP2 (fully_shard) is not supported yet; FULL_SHARD follows FSDP1's rules"},
    {"--fsdp_reshard_after_forward", true, "an FSDP2 setting; use --fsdp_sharding_strategy"},
    {"--parallelism_config_cp_backend", true, kSequenceParallel},
    {"--parallelism_config_sp_size", true, kSequenceParallel},
    {"--parallelism_config_sp_backend", true, kSequenceParallel},
    {"--parallelism_config_sp_seq_length", true, kSequenceParallel},
    {"--parallelism_config_sp_seq_length_is_variable", false, kSequenceParallel},
    {"--parallelism_config_sp_attn_implementation", true, kSequenceParallel},
};

void add_refused_accelerate_flags(CLI::App& app) {
  for (const RefusedFlag& flag : kRefusedFlags) {
    const std::string name = flag.names, why = flag.why;
    auto refuse = [name, why] { throw CLI::ValidationError(name, "is not supported: " + why); };
    CLI::Option* option = flag.takes_value
                              ? app.add_option_function<std::string>(name, [refuse](const std::string&) { refuse(); })
                              : app.add_flag_function(name, [refuse](std::int64_t) { refuse(); });
    option->group("");  // left out of --help; docs/accelerate-differences.md lists them
  }
}

}  // namespace

void add_launch_options(CLI::App& app, LaunchFlags& flags) {
  // torchrun's flags, with both its spellings, and Accelerate's names for the
  // same settings: scripts written for either work unchanged.
  app.add_option("--config_file", flags.config_file,
                 "Accelerate config file (default: $HF_HOME/accelerate/default_config.yaml when it exists)");
  add_optional(app, "--nproc_per_node,--nproc-per-node", flags.nproc_per_node, "Processes to start on this machine")
      ->check(at_least(1, "POSITIVE"))
      ->default_str("1");
  add_optional(app, "--num_processes", flags.num_processes,
               "Processes over all machines (Accelerate's meaning); nproc_per_node = num_processes / nnodes")
      ->check(at_least(1, "POSITIVE"));
  add_optional(app, "--nnodes,--num_machines", flags.nnodes,
               "Machines taking part: N, or MIN:MAX for an elastic job (with --rdzv_backend c10d)")
      ->default_str("1");
  add_optional(app, "--rdzv_backend,--rdzv-backend", flags.rdzv_backend,
               "static (--node_rank and --master_addr place each machine) or c10d (machines join a rendezvous "
               "and may come and go)")
      ->default_str("static");
  add_optional(app, "--rdzv_endpoint,--rdzv-endpoint", flags.rdzv_endpoint,
               "HOST[:PORT] of the c10d rendezvous store (default: --master_addr:--master_port; port 29400 when "
               "none is given); the machine it names hosts the store");
  add_optional(app, "--rdzv_id,--rdzv-id", flags.rdzv_id, "Name of the job in the rendezvous store")
      ->default_str("none");
  add_optional(app, "--rdzv_conf,--rdzv-conf", flags.rdzv_conf,
               "key=value,...: join_timeout, last_call_timeout, keep_alive_interval, keep_alive_max_attempt, "
               "timeout, is_host (seconds; torchrun's keys and defaults)");
  add_optional(app, "--node_rank,--node-rank,--machine_rank", flags.node_rank,
               "Rank of this machine; node 0 hosts the rendezvous")
      ->check(at_least(0, "NONNEGATIVE"))
      ->default_str("0");
  add_optional(app, "--master_addr,--master-addr,--main_process_ip", flags.master_addr,
               "Address of the machine with node rank 0")
      ->default_str("127.0.0.1");
  add_optional(app, "--master_port,--master-port,--main_process_port", flags.master_port,
               "Rendezvous port; 0 picks a free one (one machine only)")
      ->check(CLI::Range(0, 65535))
      ->default_str("29500");
  add_optional(app, "--mixed_precision", flags.mixed_precision, "no, fp16 or bf16 (ACCELERATE_MIXED_PRECISION)")
      ->check(CLI::IsMember({"no", "fp16", "bf16"}))
      ->default_str("no");
  add_optional(app, "--gradient_accumulation_steps", flags.gradient_accumulation_steps,
               "Steps to accumulate gradients over (ACCELERATE_GRADIENT_ACCUMULATION_STEPS)")
      ->check(at_least(1, "POSITIVE"));
  app.add_flag("--cpu", flags.cpu, "Train on the CPU even where a GPU is available (ACCELERATE_USE_CPU)");
  app.add_flag("--debug", flags.debug,
               "Check that collectives get matching shapes on every process, at one extra collective per "
               "reduce or broadcast (ACCELERATE_DEBUG_MODE)");
  add_optional(app, "--gpu_ids", flags.gpu_ids, "GPUs to use, such as 0,1 (CUDA_VISIBLE_DEVICES), or all");
  app.add_flag("--enable_cpu_affinity", flags.enable_cpu_affinity,
               "Pin each process on this machine to its own share of the CPUs the launcher may use");
  app.add_flag("--use_fsdp", flags.use_fsdp, "Sharded data parallel as FSDP (ACCELERATE_USE_FSDP)");
  add_optional(app, "--fsdp_sharding_strategy", flags.fsdp_sharding_strategy,
               "With --use_fsdp: FULL_SHARD (1), SHARD_GRAD_OP (2) or NO_SHARD (3) (FSDP_SHARDING_STRATEGY)");
  add_optional(app, "--fsdp_auto_wrap_policy", flags.fsdp_auto_wrap_policy,
               "With --use_fsdp: NO_WRAP, SIZE_BASED_WRAP or TRANSFORMER_BASED_WRAP (FSDP_AUTO_WRAP_POLICY)");
  add_optional(app, "--fsdp_min_num_params", flags.fsdp_min_num_params,
               "With --use_fsdp and SIZE_BASED_WRAP: parameters per wrap unit (FSDP_MIN_NUM_PARAMS)");
  add_optional(app, "--fsdp_transformer_layer_cls_to_wrap", flags.fsdp_transformer_layer_cls_to_wrap,
               "With --use_fsdp and TRANSFORMER_BASED_WRAP: layer classes, comma-separated "
               "(FSDP_TRANSFORMER_CLS_TO_WRAP)");
  app.add_flag("--use_parallelism_config", flags.use_parallelism_config,
               "N-D parallelism as Accelerate's ParallelismConfig (ACCELERATE_USE_PARALLELISM_CONFIG); the sizes "
               "below imply it");
  for (const char* dim : {"dp_replicate", "dp_shard", "tp", "cp"}) {
    const std::string key = std::string(dim);
    app.add_option_function<int>(
           "--parallelism_config_" + key + "_size", [&flags, key](int size) { flags.parallelism_sizes[key] = size; },
           "ParallelismConfig's " + key + "_size (PARALLELISM_CONFIG_" +
               (key == "dp_replicate" ? "DP_REPLICATE"
                : key == "dp_shard"   ? "DP_SHARD"
                : key == "tp"         ? "TP"
                                      : "CP") +
               "_SIZE)")
        ->check(at_least(1, "POSITIVE"));
  }
  // Accelerate's default, and the one strategy built (docs/parallelism.md).
  app.add_option_function<std::string>(
         "--parallelism_config_cp_comm_strategy",
         [](const std::string& strategy) {
           if (strategy != "allgather") {
             throw CLI::ValidationError("--parallelism_config_cp_comm_strategy",
                                        "\"" + strategy +
                                            "\" is not supported: context parallelism all-gathers the keys and values "
                                            "(\"allgather\", Accelerate's default)");
           }
         },
         "Context parallelism's strategy: allgather (the only one built, Accelerate's default)")
      ->group("");
  app.add_flag("--use_deepspeed", flags.use_deepspeed,
               "Sharded data parallel as DeepSpeed ZeRO (ACCELERATE_USE_DEEPSPEED)");
  add_optional(app, "--zero_stage", flags.zero_stage,
               "With --use_deepspeed: ZeRO stage 0, 1 or 2 (ACCELERATE_DEEPSPEED_ZERO_STAGE)");
  // Accelerate's other FSDP and DeepSpeed flags take the config file's rules
  // (sharding_config.cpp) under the section's key names.
  for (const char* key : {"fsdp_offload_params", "fsdp_state_dict_type", "fsdp_forward_prefetch",
                          "fsdp_backward_prefetch", "fsdp_backward_prefetch_policy", "fsdp_activation_checkpointing",
                          "fsdp_sync_module_states", "fsdp_use_orig_params", "fsdp_cpu_ram_efficient_loading"}) {
    app.add_option_function<std::string>(
        std::string("--") + key, [&flags, key](const std::string& value) { flags.fsdp_flags[key] = value; },
        std::string("With --use_fsdp: the config file's fsdp_config ") + key);
  }
  for (const char* key : {"deepspeed_config_file", "offload_optimizer_device", "offload_param_device",
                          "zero3_init_flag", "zero3_save_16bit_model", "deepspeed_multinode_launcher"}) {
    app.add_option_function<std::string>(
        std::string("--") + key, [&flags, key](const std::string& value) { flags.deepspeed_flags[key] = value; },
        std::string("With --use_deepspeed: the config file's deepspeed_config ") + key);
  }
  app.add_flag("-q,--quiet", flags.quiet,
               "Leave out the launcher's notices (OMP_NUM_THREADS, log directory); errors stay");
  add_optional(app, "--role", flags.role, "Role of the ranks (ROLE_NAME, torchrun's --role)")->default_str("default");
  add_refused_accelerate_flags(app);
  add_optional(app, "--num_cpu_threads_per_process", flags.num_cpu_threads_per_process, "OMP_NUM_THREADS of every rank")
      ->check(at_least(1, "POSITIVE"));
  add_optional(app, "--max_restarts,--max-restarts", flags.max_restarts, "Times to restart every rank after one fails")
      ->check(at_least(0, "NONNEGATIVE"))
      ->default_str("0");
  add_optional(app, "--monitor_interval,--monitor-interval", flags.monitor_interval_s,
               "Seconds between an elastic agent's checks of the rendezvous (nodes waiting, lost or gone); rank exits "
               "are noticed at once")
      ->check(at_least(0, "NONNEGATIVE"))
      ->default_str("5");
  add_optional(app, "--grace_period", flags.grace_period_s,
               "Seconds a rank gets between SIGTERM and SIGKILL when the ranks are stopped")
      ->check(at_least(0, "NONNEGATIVE"))
      ->default_str("3");
  // Accelerate chooses between master_addr (same network) and rdzv_endpoint with it;
  // both default to --main_process_ip:--main_process_port here.
  app.add_flag("--same_network",
               "Accepted for Accelerate compatibility: the rendezvous is at --main_process_ip:--main_process_port "
               "either way");
  // Accelerate's way to ask for several GPUs; the process count says it here.
  app.add_flag("--multi_gpu", "Accepted for Accelerate compatibility; --num_processes decides");
  add_optional(app, "--log_dir,--log-dir", flags.log_dir,
               "Directory of the ranks' log files DIR/rank_N.log; alone, both streams of every rank go there "
               "instead of the terminal");
  add_optional(app, "-r,--redirects", flags.redirects,
               "Streams to send to the log file only: 0 none, 1 stdout, 2 stderr, 3 both, or per local rank "
               "such as 0:1,1:2 (torchrun's format)");
  add_optional(app, "-t,--tee", flags.tee, "Streams to send to the log file and the terminal (format of --redirects)");
  add_optional(app, "--local_ranks_filter,--local-ranks-filter", flags.local_ranks_filter,
               "Local ranks whose output reaches the terminal, such as 0 or 0,2 (log files keep all)");
  app.add_flag("--dry_run", flags.dry_run,
               "Print the resolved settings, where each came from, and each rank's command; start nothing");
  // How PROGRAM runs, with torchrun's and Accelerate's spellings.
  app.add_flag("-m,--module", flags.module, "Run PROGRAM as a Python module, as python -m PROGRAM does");
  app.add_flag("--no_python,--no-python", flags.no_python,
               "Run PROGRAM as is, even a .py script (which otherwise runs with Python)");
  add_optional(app, "--python", flags.python,
               "Python interpreter for a .py PROGRAM or -m (default: the one accel was installed with: "
               "$ACCEL_PYTHON or python3 beside accel; else $VIRTUAL_ENV/bin/python, else python3 on PATH)");
  // Parsing stops at PROGRAM: it and everything after it, dashes included,
  // belong to the program. take_program() picks them up.
  app.prefix_command();
  app.formatter(std::make_shared<ProgramUsageFormatter>());
  app.footer(
      "PROGRAM is looked up on PATH; it and ARGS are passed to every rank unchanged. A PROGRAM ending in .py\n"
      "runs with Python (--python, else the one accel was installed with, else the active venv's, else python3\n"
      "on PATH), as torchrun and accelerate launch run sys.executable.\n"
      "Precedence: command line > environment (PET_*, ACCELERATE_*) > config file > defaults.");
}

CommandLine split_command_line(int argc, const char* const* argv) {
  CommandLine split;
  for (int i = 1; i < argc; ++i) {
    if (!split.after_separator && std::string_view(argv[i]) == "--") {
      split.after_separator.emplace();
    } else {
      (split.after_separator ? *split.after_separator : split.options).emplace_back(argv[i]);
    }
  }
  return split;
}

void take_program(const CLI::App& app, const CommandLine& command_line, LaunchFlags& flags) {
  std::vector<std::string> rest = app.remaining();
  // prefix_command() leaves an unknown flag here as if it were PROGRAM.
  if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') throw CLI::ExtrasError({rest.front()});
  if (command_line.after_separator) {
    // With PROGRAM before it, the "--" is one of the program's arguments.
    if (!rest.empty()) rest.emplace_back("--");
    rest.insert(rest.end(), command_line.after_separator->begin(), command_line.after_separator->end());
  }
  if (rest.empty()) throw CLI::RequiredError("PROGRAM (the program to launch)");
  flags.program = rest.front();
  flags.program_args.assign(rest.begin() + 1, rest.end());
}

void validate(const LaunchConfig& config) {
  if (!config.elastic.enabled && config.node_rank >= config.nnodes) {
    throw CLI::ValidationError(
        "--node_rank", std::to_string(config.node_rank) + " must be below --nnodes " + std::to_string(config.nnodes));
  }
  // A local rank this node does not start is most likely a typo for one it does.
  auto check_local_ranks = [&config](const std::string& flag, const std::vector<int>& local_ranks) {
    for (int local_rank : local_ranks) {
      if (local_rank >= config.nproc_per_node) {
        throw CLI::ValidationError(flag, "names local rank " + std::to_string(local_rank) + ", but --nproc_per_node " +
                                             std::to_string(config.nproc_per_node) + " starts local ranks 0 to " +
                                             std::to_string(config.nproc_per_node - 1));
      }
    }
  };
  const OutputRouting& output = config.output;
  if (output.redirects) check_local_ranks("--redirects", output.redirects->named_local_ranks());
  if (output.tee) check_local_ranks("--tee", output.tee->named_local_ranks());
  if (output.local_ranks_filter) check_local_ranks("--local_ranks_filter", *output.local_ranks_filter);
  if (config.master_port == 0 && config.nnodes > 1 && !config.elastic.enabled) {
    // Every machine would pick a different port; the ranks would never meet.
    throw CLI::ValidationError("--master_port",
                               "0 (pick a free port) works on one machine only; give a port for "
                               "--nnodes " +
                                   std::to_string(config.nnodes));
  }
}

}  // namespace accel::cli
