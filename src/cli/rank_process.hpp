// Starting one rank, and telling how it ended.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>

#include "cli/launch_options.hpp"

namespace accel::cli {

// A started rank: the leader of its own process group (so that it and
// everything it starts can be signalled at once), with its stdout and stderr
// on pipes read by the launcher.
struct RankProcess {
  int rank = 0;  // global rank
  pid_t pid = -1;
  int stdout_fd = -1;  // read ends, non-blocking
  int stderr_fd = -1;
  // The launcher's end of the datagram socket pair whose other end the rank
  // finds in ACCEL_LAUNCHER_REPORT_FD: its rendezvous reports
  // (cli/rendezvous_watch.hpp). Non-blocking.
  int report_fd = -1;
};

// Why a rank could not be started, with the exit status a shell would give:
// 127 when PROGRAM is not found, 126 when it cannot be executed, 1 otherwise.
class SpawnError : public std::runtime_error {
 public:
  SpawnError(const std::string& what, int exit_code) : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// Starts PROGRAM as `local_rank` of this node, with rank_environment() and
// ACCEL_LAUNCHER_REPORT_FD on top of the launcher's environment and stdin from
// /dev/null. PROGRAM is looked up on
// PATH. Throws SpawnError when it cannot be started, naming the reason
// ("cannot run train: No such file or directory").
RankProcess spawn_rank(const LaunchConfig& config, int local_rank);

// How a rank ended, from its waitpid() status.
struct RankExit {
  int rank = 0;
  pid_t pid = -1;
  int wait_status = 0;
  std::string host;  // named in describe() when set

  // A non-zero exit code or death by a signal.
  bool failed() const;
  // The exit code, or 128 + the signal number like a shell's $?.
  int exit_code() const;
  // "rank 1 (pid 42) exited with code 3", "rank 0 (pid 41) was killed by signal 9 (SIGKILL)";
  // with a host: "rank 1 (pid 42 on node7) exited with code 3".
  std::string describe() const;
};

// "SIGKILL" for 9; "signal 64" for numbers without a usual name.
std::string signal_name(int signo);

}  // namespace accel::cli
