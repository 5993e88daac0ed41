// libaccel C++ API: leveled logging and progress bars for multi-process runs
// (Accelerate's get_logger and its main-process-only tqdm).
//
// Both read the rank from the launch environment (RANK, WORLD_SIZE), so they
// work before or without an Accelerator.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace accel {

enum class LogLevel : int { Debug = 10, Info = 20, Warning = 30, Error = 40, Critical = 50 };

// "debug", "INFO", "warning"/"warn", "error", "critical" or a number; throws
// InvalidArgument naming the value.
LogLevel parse_log_level(const std::string& text);

// ACCELERATE_LOG_LEVEL when set (throws InvalidArgument naming a bad value), else Warning.
LogLevel default_log_level();

// A named logger. Lines go to stderr as "LEVEL name: message", prefixed with
// "[rank N] " when several processes run. With main_process_only (the default)
// only rank 0 writes, as Accelerate's MultiProcessAdapter does.
class Logger {
 public:
  explicit Logger(std::string name);
  Logger(std::string name, LogLevel level);
  void set_level(LogLevel level) { level_ = level; }
  LogLevel level() const { return level_; }
  bool enabled(LogLevel level) const { return static_cast<int>(level) >= static_cast<int>(level_); }
  void log(LogLevel level, const std::string& message, bool main_process_only = true) const;
  void debug(const std::string& m, bool main_process_only = true) const { log(LogLevel::Debug, m, main_process_only); }
  void info(const std::string& m, bool main_process_only = true) const { log(LogLevel::Info, m, main_process_only); }
  void warning(const std::string& m, bool main_process_only = true) const {
    log(LogLevel::Warning, m, main_process_only);
  }
  void error(const std::string& m, bool main_process_only = true) const { log(LogLevel::Error, m, main_process_only); }
  // Where lines go; stderr unless redirected (tests).
  void set_output(std::FILE* out) { out_ = out; }

 private:
  std::string name_;
  LogLevel level_;
  std::FILE* out_ = stderr;
};

// A progress bar over `total` steps. On a terminal it redraws one line in
// place; otherwise (logs, CI) it writes a plain line at every 10% and at the
// end. Silent on ranks other than 0 (unless main_process_only is false) and
// when ACCEL_DISABLE_PROGRESS_BAR is set to anything but "0" or "".
class ProgressBar {
 public:
  ProgressBar(int64_t total, std::string description, bool main_process_only = true, std::FILE* out = stderr);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void update(int64_t steps = 1);
  // Finishes the line (also done by the destructor).
  void close();
  int64_t position() const { return position_; }
  bool active() const { return active_; }

 private:
  void draw();

  int64_t total_;
  std::string description_;
  std::FILE* out_;
  bool active_ = false;
  bool tty_ = false;
  bool closed_ = false;
  int64_t position_ = 0;
  int last_decile_ = 0;
  double start_seconds_ = 0;
};

}  // namespace accel
