// The accel command. `accel launch` starts the processes of a training job.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "cli/launch_options.hpp"
#include "cli/supervisor.hpp"

namespace {

// Like torchrun: ranks sharing the cores should not each start one thread per core.
void default_thread_count(const accel::cli::LaunchConfig& config) {
  if (config.nproc_per_node <= 1 || std::getenv("OMP_NUM_THREADS") != nullptr) return;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned threads = std::max(1u, cores / static_cast<unsigned>(config.nproc_per_node));
  ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
  std::cerr << "accel launch: OMP_NUM_THREADS not set; using " << threads << " thread(s) per rank ("
            << cores << " cores / " << config.nproc_per_node << " ranks)\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"accel: run training programs written against libaccel on one or many processes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("accel ") + ACCEL_CLI_VERSION);

  accel::cli::LaunchConfig launch;
  CLI::App* launch_cmd = app.add_subcommand("launch", "Start PROGRAM on every rank of this machine");
  accel::cli::add_launch_options(*launch_cmd, launch);

  try {
    app.parse(argc, argv);
    if (launch_cmd->parsed()) {
      accel::cli::take_program(*launch_cmd, launch);
      accel::cli::validate(launch);
    }
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, the version, or the error
    if (code == 0) return 0;
    std::cerr << "usage: accel launch [OPTIONS] PROGRAM [ARGS...]\n";
    return 2;
  }

  if (launch_cmd->parsed()) {
    try {
      if (launch.master_port == 0) launch.master_port = accel::cli::pick_free_port(launch.master_addr);
      default_thread_count(launch);
      return accel::cli::supervise(launch);
    } catch (const std::exception& e) {
      std::cerr << "accel launch: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}
