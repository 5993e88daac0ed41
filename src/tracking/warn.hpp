// A warning that a bad ACCELERATE_LOG_LEVEL must not hide: the named logger at
// its configured level, or at Warning when the variable does not parse (the
// bad value is reported where the level is read, not here).
#pragma once

#include <string>

#include "accel/error.hpp"
#include "accel/logging.hpp"

namespace accel::detail {

inline void warn(const std::string& logger, const std::string& message) {
  try {
    Logger(logger).warning(message);
  } catch (const Error&) {
    Logger(logger, LogLevel::Warning).warning(message);
  }
}

}  // namespace accel::detail
