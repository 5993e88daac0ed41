// The rank as the launcher's environment gives it, without an Accelerator.
#pragma once

#include <cstdlib>
#include <string>

namespace accel::detail {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
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
  return out;
}

}  // namespace accel::detail
