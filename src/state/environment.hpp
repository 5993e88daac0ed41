// The launcher's environment contract (torchrun's variables), read and validated once.
#pragma once

#include <optional>
#include <string>

namespace accel::detail {

struct LaunchEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;

  bool distributed() const { return world_size > 1; }
};

// The variable's value, or nullopt when unset or empty.
std::optional<std::string> get_env(const char* name);

// Reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
// With WORLD_SIZE unset the process runs alone. Throws InvalidArgument naming the
// variable and its value when one is malformed or inconsistent.
LaunchEnvironment read_launch_environment();

}  // namespace accel::detail
