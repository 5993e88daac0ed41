// `accel launch` settings: the flags, their validation, and PROGRAM with its
// arguments, which belong to the program and are never parsed by the launcher.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace accel::cli {

struct LaunchConfig {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;  // 0 until resolved: pick a free port
  double grace_period_s = 3.0;  // between SIGTERM and SIGKILL when stopping the ranks
  bool dry_run = false;
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

// Registers the launch flags on `app` (the `launch` subcommand), writing into `config`.
void add_launch_options(CLI::App& app, LaunchConfig& config);

// After parsing: PROGRAM and its arguments, from what the flags left over or
// from after "--". Throws CLI::RequiredError without PROGRAM, CLI::ExtrasError
// for an unknown flag.
void take_program(const CLI::App& app, const CommandLine& command_line, LaunchConfig& config);

// Checks what single flags cannot: the flags against each other.
// Throws CLI::ValidationError naming the flag.
void validate(const LaunchConfig& config);

}  // namespace accel::cli
