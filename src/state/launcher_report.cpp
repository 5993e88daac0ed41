#include "state/launcher_report.hpp"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace accel::detail {

namespace {

std::atomic<int> rounds_joined{0};

// The launcher's socket, or -1. A value that is not a number is ignored: the
// variable belongs to the launcher, not to the user, and a rank must run the
// same with or without it.
int report_fd() {
  const char* text = std::getenv("ACCEL_LAUNCHER_REPORT_FD");
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  errno = 0;
  long fd = std::strtol(text, &end, 10);
  return (errno != 0 || *end != '\0' || fd < 0 || fd > 1 << 20) ? -1 : static_cast<int>(fd);
}

void send_report(const std::string& message) {
  int fd = report_fd();
  if (fd < 0) return;
  // One datagram a report: the launcher reads whole messages. MSG_DONTWAIT: a
  // launcher that stopped reading must not stall the rank. Errors (the launcher
  // is gone, the fd is not a socket) change nothing for the rank.
  ssize_t sent = ::send(fd, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  (void)sent;
}

}  // namespace

LauncherReport::LauncherReport() : round_(++rounds_joined) { send_report("join " + std::to_string(round_)); }

void LauncherReport::done() { send_report("done " + std::to_string(round_)); }

}  // namespace accel::detail
