#include "cli/launcher_signals.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace accel::cli {

namespace {

// The handler's only state: where to write. A global because handlers get no context.
int signal_write_fd = -1;

void on_signal(int signo) {
  int saved_errno = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  // Non-blocking: should the pipe ever be full, the wake-up is already pending.
  ssize_t written = ::write(signal_write_fd, &byte, 1);
  (void)written;
  errno = saved_errno;
}

}  // namespace

LauncherSignals::LauncherSignals() {
  if (signal_write_fd != -1) throw std::logic_error("LauncherSignals: one instance at a time");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
  read_fd_ = fds[0];
  signal_write_fd = fds[1];

  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;  // SIGCHLD when a child ends, not when it stops
  std::vector<int> caught(std::begin(kForwarded), std::end(kForwarded));
  caught.push_back(SIGCHLD);
  for (int signo : caught) ::sigaction(signo, &action, &previous_[signo]);

  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, &previous_[SIGPIPE]);
}

LauncherSignals::~LauncherSignals() {
  for (const auto& [signo, action] : previous_) ::sigaction(signo, &action, nullptr);
  ::close(signal_write_fd);
  ::close(read_fd_);
  signal_write_fd = -1;
}

std::vector<int> LauncherSignals::take() {
  std::vector<int> arrived;
  unsigned char bytes[64];
  ssize_t got;
  while ((got = ::read(read_fd_, bytes, sizeof bytes)) > 0) arrived.insert(arrived.end(), bytes, bytes + got);
  return arrived;
}

}  // namespace accel::cli
