// The rank as the launcher's environment gives it, without an Accelerator.
#pragma once

#include <cstdlib>
#include <string>

namespace accel::detail {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  // ACCEL_LAUNCH_PREFIXES_LINES=1: `accel launch` starts each of this rank's
  // output lines with "[rank N] " itself (src/cli/supervisor.cpp).
  bool launcher_prefixes_lines = false;
};

inline RankEnv rank_from_env() {
  RankEnv out;
  auto read = [](const char* name, int fallback) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return fallback;
    char* end = nullptr;
    long parsed = std::strtol(value, &end, 10);
    return (end != nullptr && *end == '\0' && parsed >= 0) ? static_cast<int>(parsed) : fallback;
  };
  out.rank = read("RANK", 0);
  out.world_size = read("WORLD_SIZE", 1);
  out.launcher_prefixes_lines = read("ACCEL_LAUNCH_PREFIXES_LINES", 0) == 1;
  return out;
}

}  // namespace accel::detail
