#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/rank_process.hpp"
#include "cli/rendezvous_watch.hpp"

namespace {

using accel::cli::RankExit;

// Real wait statuses, from a child that exits or is killed.
int wait_status_of_child(void (*child)()) {
  pid_t pid = ::fork();
  if (pid == 0) child();
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}
int exited_with_0() {
  return wait_status_of_child([] { ::_exit(0); });
}
int exited_with_3() {
  return wait_status_of_child([] { ::_exit(3); });
}
int killed_by_sigkill() {
  return wait_status_of_child([] {
    ::raise(SIGKILL);
    ::_exit(0);
  });
}

TEST(RankExit, ZeroIsSuccess) {
  RankExit exit{0, 100, exited_with_0(), ""};
  ASSERT_TRUE(WIFEXITED(exit.wait_status));
  EXPECT_FALSE(exit.failed());
  EXPECT_EQ(exit.exit_code(), 0);
  EXPECT_EQ(exit.describe(), "rank 0 (pid 100) exited with code 0");
}

TEST(RankExit, NamesTheRankAndItsCode) {
  RankExit exit{1, 1234, exited_with_3(), ""};
  EXPECT_TRUE(exit.failed());
  EXPECT_EQ(exit.exit_code(), 3);
  EXPECT_EQ(exit.describe(), "rank 1 (pid 1234) exited with code 3");
}

TEST(RankExit, NamesTheSignal) {
  RankExit exit{2, 77, killed_by_sigkill(), ""};
  ASSERT_TRUE(WIFSIGNALED(exit.wait_status));
  EXPECT_TRUE(exit.failed());
  EXPECT_EQ(exit.exit_code(), 128 + SIGKILL);
  EXPECT_EQ(exit.describe(), "rank 2 (pid 77) was killed by signal 9 (SIGKILL)");
}

TEST(RankExit, SignalNames) {
  EXPECT_EQ(accel::cli::signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(accel::cli::signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(accel::cli::signal_name(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
}

using accel::cli::RendezvousWatch;

// The ranks' reports as the launcher reads them (src/state/launcher_report.cpp).
TEST(RendezvousWatch, RankExitingBeforeJoiningStrandsTheWaitingRanks) {
  RendezvousWatch watch;
  watch.report(0, "join 1");
  watch.report(2, "join 1");
  EXPECT_FALSE(watch.stranded());  // rank 1 may still come
  watch.exited(1);
  auto stranded = watch.stranded();
  ASSERT_TRUE(stranded);
  EXPECT_EQ(stranded->gone, std::vector<int>{1});
  EXPECT_EQ(stranded->waiting, (std::vector<int>{0, 2}));
}

TEST(RendezvousWatch, JoiningAfterARankExitedIsStrandedToo) {
  RendezvousWatch watch;
  watch.exited(1);
  EXPECT_FALSE(watch.stranded());  // nobody waits: a program without a rendezvous
  watch.report(0, "join 1");
  ASSERT_TRUE(watch.stranded());
  EXPECT_EQ(watch.stranded()->gone, std::vector<int>{1});
}

TEST(RendezvousWatch, ExitAfterTheRendezvousCompletedIsNormal) {
  RendezvousWatch watch;
  watch.report(0, "join 1");
  watch.report(1, "join 1");
  watch.report(1, "done 1");
  watch.exited(1);  // before rank 0 said done: the rendezvous had completed all the same
  EXPECT_FALSE(watch.stranded());
  watch.report(0, "done 1");
  EXPECT_FALSE(watch.stranded());
}

TEST(RendezvousWatch, ALaterRendezvousNeedsEveryRankAgain) {
  RendezvousWatch watch;
  for (int rank : {0, 1}) watch.report(rank, "join 1");
  for (int rank : {0, 1}) watch.report(rank, "done 1");
  watch.exited(1);
  EXPECT_FALSE(watch.stranded());
  watch.report(0, "join 2");
  ASSERT_TRUE(watch.stranded());
  EXPECT_EQ(watch.stranded()->waiting, std::vector<int>{0});
}

TEST(RendezvousWatch, MalformedReportsAreIgnored) {
  RendezvousWatch watch;
  for (const char* junk : {"", "join", "join x", "join 0", "join -1", "join 1x", "leave 1", "join 99999999999"}) {
    watch.report(0, junk);
  }
  watch.exited(1);
  EXPECT_FALSE(watch.stranded()) << "no valid join was reported";
}

}  // namespace
