#include "cli/launch_options.hpp"

#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace accel::cli {

void add_launch_options(CLI::App& app, LaunchConfig& config) {
  app.add_option("--nproc_per_node", config.nproc_per_node, "Processes to start on this machine")
      ->check(CLI::PositiveNumber);
  app.add_option("--nnodes", config.nnodes, "Machines taking part")->check(CLI::PositiveNumber);
  app.add_option("--node_rank", config.node_rank, "Rank of this machine, 0 hosts the rendezvous")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--master_addr", config.master_addr, "Address of the machine with node rank 0");
  app.add_option("--master_port", config.master_port, "Rendezvous port (0 picks a free one)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--grace_period", config.grace_seconds,
                 "Seconds between SIGTERM and SIGKILL when stopping the ranks")
      ->check(CLI::NonNegativeNumber);
  // PROGRAM and everything after it belong to the program, dashes included;
  // take_program() picks them up after parsing.
  app.prefix_command();
  app.footer("PROGRAM [ARGS...] follow the options and are passed to every rank unchanged.");
}

void take_program(const CLI::App& app, LaunchConfig& config) {
  std::vector<std::string> rest = app.remaining();
  if (rest.empty()) throw CLI::RequiredError("PROGRAM (the program to launch)");
  if (rest.front().size() > 1 && rest.front()[0] == '-') {
    throw CLI::ExtrasError({rest.front()});
  }
  config.program = rest.front();
  config.program_args.assign(rest.begin() + 1, rest.end());
}

void validate(const LaunchConfig& config) {
  if (config.node_rank >= config.nnodes) {
    throw CLI::ValidationError("--node_rank", std::to_string(config.node_rank) + " is not below --nnodes " +
                                                  std::to_string(config.nnodes));
  }
  if (config.master_port == 0 && config.nnodes > 1) {
    throw CLI::ValidationError("--master_port", "0 (pick a free port) works on one machine only; give a port with --nnodes " +
                                                    std::to_string(config.nnodes));
  }
  if (config.program.empty()) throw CLI::ValidationError("program", "no program to launch");
}

std::map<std::string, std::string> rank_environment(const LaunchConfig& config, int local_rank) {
  int rank = config.node_rank * config.nproc_per_node + local_rank;
  return {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(config.world_size())},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(config.nproc_per_node)},
      {"GROUP_RANK", std::to_string(config.node_rank)},
      {"MASTER_ADDR", config.master_addr},
      {"MASTER_PORT", std::to_string(config.master_port)},
  };
}

int pick_free_port(const std::string& addr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("cannot create a socket to find a free port");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (::inet_pton(AF_INET, addr == "localhost" ? "127.0.0.1" : addr.c_str(), &sa.sin_addr) != 1) {
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
  }
  socklen_t len = sizeof sa;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind a free port on " + addr);
  }
  int port = ntohs(sa.sin_port);
  ::close(fd);
  return port;
}

}  // namespace accel::cli
