#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>

#include <stdexcept>
#include <vector>

#include "cli/launcher_signals.hpp"

namespace {

using accel::cli::LauncherSignals;

void (*current_handler(int signo))(int) {
  struct sigaction action {};
  ::sigaction(signo, nullptr, &action);
  return action.sa_handler;
}

TEST(LauncherSignals, DeliversSignalsThroughItsPipe) {
  LauncherSignals signals;
  ASSERT_EQ(::raise(SIGHUP), 0);  // would end the test program without the handler
  ASSERT_EQ(::raise(SIGCHLD), 0);
  pollfd readable{signals.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&readable, 1, 1000), 1);
  EXPECT_EQ(signals.take(), (std::vector<int>{SIGHUP, SIGCHLD}));
  EXPECT_TRUE(signals.take().empty());
}

TEST(LauncherSignals, IgnoresSigpipeAndRestoresWhatItFound) {
  auto hup_before = current_handler(SIGHUP);
  auto pipe_before = current_handler(SIGPIPE);
  {
    LauncherSignals signals;
    EXPECT_EQ(current_handler(SIGPIPE), SIG_IGN);
    EXPECT_NE(current_handler(SIGHUP), hup_before);
    EXPECT_THROW(LauncherSignals second, std::logic_error);
  }
  EXPECT_EQ(current_handler(SIGHUP), hup_before);
  EXPECT_EQ(current_handler(SIGPIPE), pipe_before);
}

}  // namespace
