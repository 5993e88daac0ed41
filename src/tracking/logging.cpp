// Leveled, rank-aware logging (Accelerate's get_logger).
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "accel/error.hpp"
#include "accel/logging.hpp"
#include "tracking/rank_env.hpp"

namespace accel {

LogLevel parse_log_level(const std::string& text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "debug") return LogLevel::Debug;
  if (lower == "info") return LogLevel::Info;
  if (lower == "warning" || lower == "warn") return LogLevel::Warning;
  if (lower == "error") return LogLevel::Error;
  if (lower == "critical" || lower == "fatal") return LogLevel::Critical;
  if (!lower.empty() && lower.find_first_not_of("0123456789") == std::string::npos && lower.size() < 4)
    return static_cast<LogLevel>(std::stoi(lower));
  fail(ErrorCode::InvalidArgument,
       "unknown log level '" + text + "' (debug, info, warning, error, critical or a number)");
}

LogLevel default_log_level() {
  const char* env = std::getenv("ACCELERATE_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return LogLevel::Warning;
  try {
    return parse_log_level(env);
  } catch (const Error& e) {
    fail(ErrorCode::InvalidArgument, std::string("ACCELERATE_LOG_LEVEL: ") + e.what());
  }
}

Logger::Logger(std::string name) : name_(std::move(name)), level_(default_log_level()) {}
Logger::Logger(std::string name, LogLevel level) : name_(std::move(name)), level_(level) {}

namespace {
const char* level_name(LogLevel level) {
  int value = static_cast<int>(level);
  if (value >= 50) return "CRITICAL";
  if (value >= 40) return "ERROR";
  if (value >= 30) return "WARNING";
  if (value >= 20) return "INFO";
  return "DEBUG";
}
}  // namespace

void Logger::log(LogLevel level, const std::string& message, bool main_process_only) const {
  if (!enabled(level)) return;
  const auto ranks = detail::rank_from_env();
  if (main_process_only && ranks.rank != 0) return;
  // Under `accel launch` the launcher already starts each of this rank's lines with
  // "[rank N] "; elsewhere (torchrun, srun, mpirun) the logger says which rank speaks.
  const bool own_prefix = ranks.world_size > 1 && !ranks.launcher_prefixes_lines;
  std::string line = own_prefix ? "[rank " + std::to_string(ranks.rank) + "] " : std::string();
  line += std::string(level_name(level)) + " " + name_ + ": " + message + "\n";
  // One write per line, so lines of concurrent ranks do not interleave mid-line.
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace accel
