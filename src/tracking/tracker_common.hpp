// Small helpers every built-in tracker uses: environment variables read as
// text, and wall-clock time as the tools record it.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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

// The UTC time now as date_format (strftime) gives it, then ".<microseconds>"
// and suffix: "%Y-%m-%dT%H:%M:%S" with "+00:00" is Python's isoformat() of an
// aware UTC datetime, "%Y-%m-%d %H:%M:%S" with "" SQLAlchemy's DateTime.
inline std::string utc_now_text(const char* date_format, const char* suffix) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[48];
  std::strftime(text, sizeof text, date_format, &utc);
  char full[80];
  std::snprintf(full, sizeof full, "%s.%06lld%s", text, static_cast<long long>(micros), suffix);
  return full;
}

}  // namespace accel::detail
