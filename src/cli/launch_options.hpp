// `accel launch` settings: what the command line says, validated, and the
// environment each rank is started with (torchrun's contract).
#pragma once

#include <map>
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
  int master_port = 29500;  // 0: pick a free port
  double grace_seconds = 3.0;  // between SIGTERM and SIGKILL when stopping ranks
  std::string program;
  std::vector<std::string> program_args;

  int world_size() const { return nproc_per_node * nnodes; }
};

// Registers the launch flags on `app`, writing into `config`.
void add_launch_options(CLI::App& app, LaunchConfig& config);

// After parsing: PROGRAM and its arguments from what the options left over.
// Throws a CLI::ParseError for a missing PROGRAM or an unknown option before it.
void take_program(const CLI::App& app, LaunchConfig& config);

// Throws CLI::ValidationError naming a bad or inconsistent value.
void validate(const LaunchConfig& config);

// The environment variables rank `local_rank` of this node gets, on top of the
// launcher's own environment.
std::map<std::string, std::string> rank_environment(const LaunchConfig& config, int local_rank);

// A TCP port that is free on `addr` right now.
int pick_free_port(const std::string& addr);

}  // namespace accel::cli
