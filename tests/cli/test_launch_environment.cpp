#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "cli/launch_environment.hpp"

namespace {

using accel::cli::LaunchConfig;

TEST(LaunchEnvironment, FollowsTorchrunForEveryRankOfANode) {
  LaunchConfig config;
  config.nproc_per_node = 2;
  config.nnodes = 3;
  config.node_rank = 1;
  config.master_addr = "10.1.1.1";
  config.master_port = 4000;
  auto env = accel::cli::rank_environment(config, 1);
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["WORLD_SIZE"], "6");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["GROUP_WORLD_SIZE"], "3");
  EXPECT_EQ(env["MASTER_ADDR"], "10.1.1.1");
  EXPECT_EQ(env["MASTER_PORT"], "4000");
  EXPECT_EQ(env.count("OMP_NUM_THREADS"), 0u);

  config.omp_num_threads = 4;
  EXPECT_EQ(accel::cli::rank_environment(config, 0)["OMP_NUM_THREADS"], "4");
}

TEST(LaunchEnvironment, DebugTurnsOnAccelerateDebugModeOnly) {
  LaunchConfig config;
  EXPECT_EQ(accel::cli::rank_environment(config, 0).count("ACCELERATE_DEBUG_MODE"), 0u);  // inherited, not forced
  config.debug = true;
  EXPECT_EQ(accel::cli::rank_environment(config, 0)["ACCELERATE_DEBUG_MODE"], "true");
}

TEST(LaunchEnvironment, SharesHardwareThreadsLikeTorchrun) {
  using accel::cli::default_omp_num_threads;
  EXPECT_EQ(default_omp_num_threads(4, false, 16), 4u);
  EXPECT_EQ(default_omp_num_threads(3, false, 16), 5u);
  EXPECT_EQ(default_omp_num_threads(8, false, 2), 1u);             // never zero
  EXPECT_EQ(default_omp_num_threads(1, false, 16), std::nullopt);  // one rank owns the machine
  EXPECT_EQ(default_omp_num_threads(4, true, 16), std::nullopt);   // the user's choice stands
}

// Numeric only: a name would depend on the machine's resolver.
TEST(LaunchEnvironment, PicksAFreePort) {
  int port = accel::cli::pick_free_port("127.0.0.1");
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

// Binds 127.0.0.1:port, optionally with SO_REUSEADDR, and listens; the errno on failure, 0 on success.
int listen_error(int port, bool reuse_address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int on = 1;
  if (reuse_address) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int error =
      ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && ::listen(fd, 1) == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

// The picked port is reserved, not just free at the moment of picking: under
// parallel jobs a port that was merely free was taken by another process's
// connection before rank 0's store listened (EADDRINUSE in CI). Reserved means
// a plain bind is refused, as the kernel's own choices of a port (connect(),
// bind(0)) skip it, while c10d's store, which sets SO_REUSEADDR, still listens.
TEST(LaunchEnvironment, PickedPortIsReservedForAStoreThatReusesAddresses) {
  int port = accel::cli::pick_free_port("127.0.0.1");
  EXPECT_EQ(listen_error(port, false), EADDRINUSE);
  EXPECT_EQ(listen_error(port, true), 0);
}

TEST(LaunchEnvironment, ResolvesPortZeroAndKeepsAGivenPort) {
  LaunchConfig config;
  config.master_port = 0;
  std::ostringstream notices;
  accel::cli::resolve_defaults(config, notices);
  EXPECT_GT(config.master_port, 0);

  LaunchConfig given;
  given.master_port = 1234;
  accel::cli::resolve_defaults(given, notices);
  EXPECT_EQ(given.master_port, 1234);
}

TEST(LaunchEnvironment, PlanQuotesWhatAShellWouldSplit) {
  LaunchConfig config;
  config.nproc_per_node = 2;
  config.program = "train";
  config.program_args = {"--name", "my run", "it's"};
  std::ostringstream plan;
  accel::cli::print_launch_plan(config, plan);
  EXPECT_NE(plan.str().find("command: train --name 'my run' 'it'\\''s'\n"), std::string::npos) << plan.str();
  // Each rank's line can be pasted into a shell: its variables, then the command.
  EXPECT_NE(plan.str().find("rank 1: ACCELERATE_MIXED_PRECISION=no "), std::string::npos) << plan.str();
  EXPECT_NE(plan.str().find(" RANK=1 ROLE_NAME=default ROLE_RANK=1 ROLE_WORLD_SIZE=2 TORCHELASTIC_MAX_RESTARTS=0 "
                            "TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_RUN_ID=none WORLD_SIZE=2 "
                            "train --name 'my run' 'it'\\''s'\n"),
            std::string::npos)
      << plan.str();
}

}  // namespace
