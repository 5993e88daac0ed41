// The launcher's signal handling while it supervises ranks: the signals it
// forwards, and SIGCHLD, arrive as bytes on a pipe, so that the supervisor's
// poll() loop sees them next to the ranks' output and handles them outside a
// signal handler. SIGPIPE is ignored: a closed output must not kill the launcher
// and orphan the ranks.
#pragma once

#include <signal.h>

#include <map>
#include <vector>

namespace accel::cli {

class LauncherSignals {
 public:
  // The signals the launcher stops the ranks on and passes on to them.
  static constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

  // Installs the handlers; one instance at a time.
  LauncherSignals();
  // Restores the dispositions found at construction.
  ~LauncherSignals();
  LauncherSignals(const LauncherSignals&) = delete;
  LauncherSignals& operator=(const LauncherSignals&) = delete;

  // Readable when a signal has arrived.
  int fd() const { return read_fd_; }
  // The signals that arrived since the last call, oldest first.
  std::vector<int> take();

 private:
  int read_fd_ = -1;
  std::map<int, struct sigaction> previous_;
};

}  // namespace accel::cli
