#include "state/environment.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "accel/error.hpp"

namespace accel::detail {

std::optional<std::string> get_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

namespace {

int parse_int_env(const char* name, const std::string& text, int min_value, int max_value) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || value < min_value || value > max_value) {
    fail(ErrorCode::InvalidArgument, std::string("environment variable ") + name + "=\"" + text +
                                         "\" is not an integer in [" + std::to_string(min_value) + ", " +
                                         std::to_string(max_value) + "]");
  }
  return static_cast<int>(value);
}

int int_env_or(const char* name, int fallback, int min_value, int max_value) {
  auto text = get_env(name);
  return text ? parse_int_env(name, *text, min_value, max_value) : fallback;
}

}  // namespace

LaunchEnvironment read_launch_environment() {
  constexpr int kMaxInt = std::numeric_limits<int>::max();
  LaunchEnvironment env;
  env.world_size = int_env_or("WORLD_SIZE", 1, 1, kMaxInt);
  env.rank = int_env_or("RANK", 0, 0, kMaxInt);
  require_arg(env.rank < env.world_size, "environment variable RANK=" + std::to_string(env.rank) +
                                             " is not below WORLD_SIZE=" + std::to_string(env.world_size));
  env.local_world_size = int_env_or("LOCAL_WORLD_SIZE", env.world_size, 1, kMaxInt);
  env.local_rank = int_env_or("LOCAL_RANK", env.rank % env.local_world_size, 0, kMaxInt);
  require_arg(env.local_rank < env.local_world_size,
              "environment variable LOCAL_RANK=" + std::to_string(env.local_rank) +
                  " is not below LOCAL_WORLD_SIZE=" + std::to_string(env.local_world_size));
  if (env.distributed()) {
    auto addr = get_env("MASTER_ADDR");
    require_arg(addr.has_value(), "environment variable MASTER_ADDR is not set but WORLD_SIZE=" +
                                      std::to_string(env.world_size) + " asks for a process group");
    env.master_addr = *addr;
    auto port = get_env("MASTER_PORT");
    require_arg(port.has_value(), "environment variable MASTER_PORT is not set but WORLD_SIZE=" +
                                      std::to_string(env.world_size) + " asks for a process group");
    env.master_port = parse_int_env("MASTER_PORT", *port, 1, 65535);
  }
  return env;
}

}  // namespace accel::detail
