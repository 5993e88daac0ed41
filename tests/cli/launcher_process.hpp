// Runs the real `accel` executable for the end-to-end tests: its stdout and
// stderr go to files, and a wait is bounded so that a hanging launcher fails
// the test instead of blocking the suite.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace accel::cli::testing {

// A fresh directory for a test's files, removed with its content on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct LauncherResult {
  bool finished = false;  // false: still running at the time limit, then killed
  int exit_code = -1;     // 128 + signal when the launcher itself was killed
  std::string out, err;
  std::chrono::duration<double> elapsed{};
};

class LauncherProcess {
 public:
  // Starts `accel ARGS...`. `env` sets variables (a value) or removes them (nullopt).
  explicit LauncherProcess(const std::vector<std::string>& args,
                           const std::map<std::string, std::optional<std::string>>& env = {});
  // Kills the launcher if it is still running.
  ~LauncherProcess();
  LauncherProcess(const LauncherProcess&) = delete;
  LauncherProcess& operator=(const LauncherProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits for the launcher to exit, killing it after `limit`.
  LauncherResult wait(std::chrono::duration<double> limit);

 private:
  TempDir output_dir_;
  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point started_;
};

// Starts `accel ARGS...` and waits for it (at most `limit`).
LauncherResult run_accel(const std::vector<std::string>& args,
                         const std::map<std::string, std::optional<std::string>>& env = {},
                         std::chrono::duration<double> limit = std::chrono::seconds(20));

// The content of a file, or nullopt when it is missing.
std::optional<std::string> read_file(const std::string& path);

// Waits until every one of `paths` exists and is non-empty (at most `limit`).
bool wait_for_files(const std::vector<std::string>& paths, std::chrono::duration<double> limit);

// True when no process is left in process group `pgid`.
bool process_group_gone(pid_t pgid);

}  // namespace accel::cli::testing
