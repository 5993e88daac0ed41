// Small helpers every built-in tracker uses: environment variables read as
// text, and wall-clock time as the tools record it.
#pragma once

#include <chrono>
#include <cstdlib>
#include <string>

namespace accel::detail {

// The variable's value, or "" when unset.
inline std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// Seconds since the Unix epoch (TensorBoard's wall_time, wandb's _timestamp).
inline double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace accel::detail
