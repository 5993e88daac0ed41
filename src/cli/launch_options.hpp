// `accel launch` settings: the flags, their validation, and PROGRAM with its
// arguments, which belong to the program and are never parsed by the launcher.
// launch_settings.hpp merges the flags with the environment and config file.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/elastic_settings.hpp"
#include "cli/output_routing.hpp"

namespace CLI {
class App;
}

namespace accel::cli {

// What the command line said; unset when a flag was not given.
struct LaunchFlags {
  std::optional<std::string> config_file;
  std::optional<int> nproc_per_node, num_processes, node_rank, master_port;
  std::optional<std::string> nnodes;  // "N" or "MIN:MAX"
  // torchrun's rendezvous flags (elastic_settings.hpp).
  std::optional<std::string> rdzv_backend, rdzv_endpoint, rdzv_id, rdzv_conf;
  std::optional<std::string> master_addr;
  std::optional<std::string> mixed_precision;
  std::optional<int> gradient_accumulation_steps;
  bool cpu = false;
  bool debug = false;
  bool enable_cpu_affinity = false;
  std::optional<std::string> gpu_ids;
  // Accelerate's sharding flags (docs/sharding.md); they win over the config file.
  bool use_fsdp = false;
  std::optional<std::string> fsdp_sharding_strategy;
  std::optional<std::string> fsdp_auto_wrap_policy;
  std::optional<std::string> fsdp_min_num_params;
  std::optional<std::string> fsdp_transformer_layer_cls_to_wrap;
  // The other --fsdp_* flags (offload, state dict type, prefetch, ...), under
  // their fsdp_config key names; read as the config file's section.
  std::map<std::string, std::string> fsdp_flags;
  bool use_deepspeed = false;
  std::optional<int> zero_stage;
  // --offload_optimizer_device, --deepspeed_config_file, ... under their deepspeed_config key names.
  std::map<std::string, std::string> deepspeed_flags;
  // --use_parallelism_config and --parallelism_config_{dp_replicate,dp_shard,tp,cp}_size, by dimension.
  bool use_parallelism_config = false;
  std::map<std::string, int> parallelism_sizes;
  bool quiet = false;               // -q: the launcher's notices left out
  std::optional<std::string> role;  // torchrun's --role: ROLE_NAME
  std::optional<int> num_cpu_threads_per_process;
  std::optional<int> max_restarts;
  std::optional<double> monitor_interval_s;
  std::optional<double> grace_period_s;
  bool dry_run = false;
  std::optional<std::string> log_dir, redirects, tee, local_ranks_filter;
  // How PROGRAM runs (launch_program.hpp): -m/--module, --no_python, --python.
  bool module = false;
  bool no_python = false;
  std::optional<std::string> python;
  std::string program;
  std::vector<std::string> program_args;
};

// The resolved settings of one node's launch.
struct LaunchConfig {
  int nproc_per_node = 1;
  int nnodes = 1;  // elastic: set by the agent for each round
  int node_rank = 0;
  ElasticSettings elastic;  // enabled with the c10d rendezvous backend
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;       // 0 until resolved: pick a free port
  double grace_period_s = 3.0;   // between SIGTERM and SIGKILL when stopping the ranks
  bool quiet = false;            // the launcher's notices (not its errors) left out
  std::string role = "default";  // ROLE_NAME of every rank
  bool dry_run = false;
  // Reach the ranks as ACCELERATE_* variables (see rank_environment()).
  std::string mixed_precision = "no";
  std::optional<int> gradient_accumulation_steps;
  bool use_cpu = false;
  bool debug = false;  // ACCELERATE_DEBUG_MODE=true for the ranks
  // Each local rank pinned to its own share of the launcher's CPUs (rank_cpus()).
  bool enable_cpu_affinity = false;
  std::optional<std::string> gpu_ids;  // CUDA_VISIBLE_DEVICES unless "all"
  // The config file's fsdp_config / deepspeed_config as Accelerate's variables
  // (ACCELERATE_USE_FSDP, FSDP_SHARDING_STRATEGY, ACCELERATE_USE_DEEPSPEED, ...).
  std::map<std::string, std::string> sharding_env;
  // ParallelismConfig's variables (ACCELERATE_USE_PARALLELISM_CONFIG, PARALLELISM_CONFIG_*_SIZE).
  std::map<std::string, std::string> parallelism_env;
  int max_restarts = 0;           // times the whole group is restarted after a failure
  int restart_count = 0;          // this attempt's number of earlier attempts, set by the supervisor
  double monitor_interval_s = 5;  // how often an elastic agent checks the rendezvous; rank exits are noticed at once
  std::string config_file;        // empty when none was read
  OutputRouting output;           // where each rank's stdout and stderr go
  // For --dry_run: each setting with where its value came from, in order.
  std::vector<std::pair<std::string, std::string>> origins;
  // Set by resolve_defaults() when the launcher chooses it for the ranks.
  std::optional<unsigned> omp_num_threads;
  std::string program;
  std::vector<std::string> program_args;

  int world_size() const { return nproc_per_node * nnodes; }
  int global_rank(int local_rank) const { return node_rank * nproc_per_node + local_rank; }
};

// The command line split at its first "--". CLI11 hands a "--" met inside a
// subcommand back to the top level, where PROGRAM would be an unexpected
// argument; so the launcher takes what follows "--" itself.
struct CommandLine {
  std::vector<std::string> options;  // for CLI::App::parse(), without argv[0]
  std::optional<std::vector<std::string>> after_separator;
};
CommandLine split_command_line(int argc, const char* const* argv);

// Registers the launch flags on `app` (the `launch` subcommand), writing into `flags`.
void add_launch_options(CLI::App& app, LaunchFlags& flags);

// After parsing: PROGRAM and its arguments, from what the flags left over or
// from after "--". Throws CLI::RequiredError without PROGRAM, CLI::ExtrasError
// for an unknown flag.
void take_program(const CLI::App& app, const CommandLine& command_line, LaunchFlags& flags);

// Checks what single flags cannot: the flags against each other.
// Throws CLI::ValidationError naming the flag.
void validate(const LaunchConfig& config);

}  // namespace accel::cli
