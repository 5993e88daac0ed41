// `accel launch` with real processes: the ranks are small POSIX shell scripts,
// and signal_reporting_rank for the tests that signal the launcher. Each test is
// its own ctest entry (see CMakeLists.txt), so they run in parallel.
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/socket.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launcher_process.hpp"

namespace {

using accel::cli::testing::LauncherProcess;
using accel::cli::testing::process_group_gone;
using accel::cli::testing::read_file;
using accel::cli::testing::run_accel;
using accel::cli::testing::TempDir;
using accel::cli::testing::wait_for_files;
using namespace std::chrono_literals;

// The bound the launcher must stop a job in when a rank fails or it is signalled.
constexpr auto kPromptly = 10s;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& candidate : lines_of(text)) {
    if (candidate == line) return true;
  }
  return false;
}

// The pid each rank wrote to DIR/pid.RANK; each rank leads its process group.
std::vector<pid_t> rank_pids(const TempDir& dir, int ranks) {
  std::vector<pid_t> pids;
  for (int rank = 0; rank < ranks; ++rank) {
    pids.push_back(std::atoi(read_file(dir.path() + "/pid." + std::to_string(rank)).value_or("0").c_str()));
  }
  return pids;
}

// A rank script's first step: record its pid for the orphan checks.
std::string record_pid(const TempDir& dir) { return "echo $$ > " + dir.path() + "/pid.$RANK; "; }

// For a rank that ends the job: wait until rank 0 is set up (its pid recorded),
// so that the test sees how the launcher stops a running rank 0.
std::string await_rank0(const TempDir& dir) { return "until [ -s " + dir.path() + "/pid.0 ]; do sleep 0.01; done; "; }

TEST(LaunchEndToEnd, EnvironmentContract) {
  auto result =
      run_accel({"launch", "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", "29555", "sh", "-c",
                 "echo \"rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE group=$GROUP_RANK "
                 "master=$MASTER_ADDR:$MASTER_PORT omp=$OMP_NUM_THREADS\""},
                {{"OMP_NUM_THREADS", "3"}});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(has_line(result.out, "[rank 0] rank=0 world=2 local=0/2 group=0 master=127.0.0.1:29555 omp=3"))
      << result.out;
  EXPECT_TRUE(has_line(result.out, "[rank 1] rank=1 world=2 local=1/2 group=0 master=127.0.0.1:29555 omp=3"))
      << result.out;
  EXPECT_EQ(lines_of(result.out).size(), 2u) << result.out;
}

TEST(LaunchEndToEnd, DefaultsAndThreadShare) {
  auto result =
      run_accel({"launch", "--nproc_per_node", "2", "sh", "-c", "echo $MASTER_ADDR:$MASTER_PORT $OMP_NUM_THREADS"},
                {{"OMP_NUM_THREADS", std::nullopt}});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  unsigned share = std::max(1u, std::thread::hardware_concurrency() / 2);
  EXPECT_TRUE(has_line(result.out, "[rank 0] 127.0.0.1:29500 " + std::to_string(share))) << result.out;
  EXPECT_NE(result.err.find("OMP_NUM_THREADS is not set"), std::string::npos) << result.err;
}

TEST(LaunchEndToEnd, MasterPortZeroPicksOneFreePortForAllRanks) {
  auto result = run_accel({"launch", "--nproc_per_node", "3", "--master_port", "0", "sh", "-c", "echo $MASTER_PORT"});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::set<std::string> ports;
  std::regex rank_port(R"(\[rank [0-2]\] ([0-9]+))");
  for (const auto& line : lines_of(result.out)) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, rank_port)) << line;
    ports.insert(match[1]);
  }
  ASSERT_EQ(ports.size(), 1u) << result.out;
  int port = std::stoi(*ports.begin());
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

TEST(LaunchEndToEnd, ProgramArgumentsArePassedVerbatim) {
  auto result = run_accel({"launch", "--nproc_per_node", "1", "sh", "-c", "printf '<%s>\\n' \"$@\"", "sh",
                           "--nproc_per_node", "5", "--help", "--", "a b"});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "[rank 0] <--nproc_per_node>\n[rank 0] <5>\n[rank 0] <--help>\n[rank 0] <-->\n[rank 0] <a b>\n");
}

TEST(LaunchEndToEnd, OutputIsRelayedWholeLinesWithRankPrefix) {
  // Rank 0 writes one line in two pieces with a pause between; rank 1 writes a
  // whole line in that pause. Neither line may be cut by the other.
  auto result = run_accel({"launch", "--nproc_per_node", "2", "sh", "-c",
                           "if [ $RANK = 0 ]; then printf 'first half, '; sleep 0.5; echo 'second half'; "
                           "else sleep 0.2; echo 'whole line'; fi; "
                           "echo \"to stderr from $RANK\" >&2; printf 'unterminated from %s' $RANK"});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(has_line(result.out, "[rank 0] first half, second half")) << result.out;
  EXPECT_TRUE(has_line(result.out, "[rank 1] whole line")) << result.out;
  EXPECT_TRUE(has_line(result.out, "[rank 0] unterminated from 0")) << result.out;
  EXPECT_TRUE(has_line(result.out, "[rank 1] unterminated from 1")) << result.out;
  EXPECT_EQ(lines_of(result.out).size(), 4u) << result.out;
  EXPECT_TRUE(has_line(result.err, "[rank 0] to stderr from 0")) << result.err;
  EXPECT_TRUE(has_line(result.err, "[rank 1] to stderr from 1")) << result.err;
}

TEST(LaunchEndToEnd, ManyLinesFromAllRanksStayWhole) {
  const std::string payload(100, 'x');  // long lines make cut ones likelier
  const std::string loop =
      "i=0; while [ $i -lt 2000 ]; do echo \"rank $RANK line $i " + payload + "\"; i=$((i+1)); done";
  auto result = run_accel({"launch", "--nproc_per_node", "2", "sh", "-c", loop});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::regex whole(R"(\[rank ([01])\] rank \1 line ([0-9]+) )" + payload);
  auto lines = lines_of(result.out);
  EXPECT_EQ(lines.size(), 4000u);
  int next_line[2] = {0, 0};  // each rank's lines come whole and in order
  for (const auto& line : lines) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, whole)) << line;
    int rank = std::stoi(match[1]);
    EXPECT_EQ(std::stoi(match[2]), next_line[rank]++) << line;
  }
}

TEST(LaunchEndToEnd, FailingRankStopsTheOthersPromptly) {
  TempDir dir;
  auto result = run_accel({"launch", "--nproc_per_node", "2", "sh", "-c",
                           record_pid(dir) + "if [ $RANK = 1 ]; then " + await_rank0(dir) + "exit 3; fi; sleep 60"});
  ASSERT_TRUE(result.finished) << "still running after " << result.elapsed.count() << " s";
  EXPECT_LT(result.elapsed, kPromptly);
  EXPECT_EQ(result.exit_code, 3);
  std::regex report(R"(accel launch: rank 1 \(pid [0-9]+ on [^)]+\) exited with code 3; stopping the other ranks)");
  EXPECT_TRUE(std::regex_search(result.err, report)) << result.err;
  for (pid_t pid : rank_pids(dir, 2)) {
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(process_group_gone(pid)) << "rank with pid " << pid << " left behind";
  }
}

TEST(LaunchEndToEnd, RankKilledBySignalIsNamed) {
  auto result =
      run_accel({"launch", "--nproc_per_node", "2", "sh", "-c", "if [ $RANK = 0 ]; then kill -9 $$; fi; sleep 60"});
  ASSERT_TRUE(result.finished);
  EXPECT_LT(result.elapsed, kPromptly);
  EXPECT_EQ(result.exit_code, 128 + SIGKILL);
  EXPECT_TRUE(
      std::regex_search(result.err, std::regex(R"(rank 0 \(pid [0-9]+ on [^)]+\) was killed by signal 9 \(SIGKILL\))")))
      << result.err;
}

// SIGINT and SIGTERM to the launcher reach every rank, as the same signal; the
// launcher waits for the ranks and exits with 128 + signal, leaving nothing behind.
void expect_signal_stops_every_rank(int signo, const std::string& name) {
  TempDir dir;
  LauncherProcess launcher({"launch", "--nproc_per_node", "2", SIGNAL_REPORTING_RANK_PATH, dir.path()});
  ASSERT_TRUE(wait_for_files({dir.path() + "/pid.0", dir.path() + "/pid.1"}, kPromptly)) << "the ranks did not start";
  ASSERT_EQ(::kill(launcher.pid(), signo), 0);
  auto result = launcher.wait(kPromptly);
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 128 + signo);
  EXPECT_TRUE(has_line(result.err, "accel launch: got " + name + "; stopping every rank")) << result.err;
  EXPECT_TRUE(has_line(result.out, "[rank 0] got " + name)) << result.out;
  EXPECT_TRUE(has_line(result.out, "[rank 1] got " + name)) << result.out;
  for (pid_t pid : rank_pids(dir, 2)) EXPECT_TRUE(process_group_gone(pid)) << "rank with pid " << pid << " left behind";
}

TEST(LaunchEndToEnd, SigintStopsEveryRank) { expect_signal_stops_every_rank(SIGINT, "SIGINT"); }

TEST(LaunchEndToEnd, SigtermStopsEveryRank) { expect_signal_stops_every_rank(SIGTERM, "SIGTERM"); }

TEST(LaunchEndToEnd, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  TempDir dir;
  auto result = run_accel({"launch", "--nproc_per_node", "2", "sh", "-c",
                           "trap '' TERM; " + record_pid(dir) +  // sleep inherits the ignored SIGTERM
                               "if [ $RANK = 1 ]; then " + await_rank0(dir) + "exit 4; fi; sleep 60"});
  ASSERT_TRUE(result.finished);
  EXPECT_LT(result.elapsed, kPromptly);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("processes of rank(s) 0 still running 3 s after being told to stop; sending SIGKILL"),
            std::string::npos)
      << result.err;
  for (pid_t pid : rank_pids(dir, 2)) EXPECT_TRUE(process_group_gone(pid)) << "rank with pid " << pid << " left behind";
}

TEST(LaunchEndToEnd, HelpAndUsageErrors) {
  auto help = run_accel({"launch", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Usage: accel launch [OPTIONS] PROGRAM [ARGS...]"), std::string::npos) << help.out;
  for (const char* flag : {"--nproc_per_node", "--nnodes", "--node_rank", "--master_addr", "--master_port"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
  auto top_help = run_accel({"--help"});
  EXPECT_EQ(top_help.exit_code, 0);
  EXPECT_NE(top_help.out.find("launch"), std::string::npos) << top_help.out;

  auto bad_flag = run_accel({"launch", "--bogus", "sh"});
  EXPECT_EQ(bad_flag.exit_code, 2);
  EXPECT_NE(bad_flag.err.find("--bogus"), std::string::npos) << bad_flag.err;
  EXPECT_NE(bad_flag.err.find("Usage: accel launch [OPTIONS] PROGRAM [ARGS...]"), std::string::npos) << bad_flag.err;

  for (std::vector<std::string> args : {std::vector<std::string>{"launch", "--nproc_per_node", "0", "sh"},
                                        {"launch", "--nproc_per_node", "two", "sh"},
                                        {"launch", "--nnodes", "1", "--node_rank", "1", "sh"},
                                        {"launch"},
                                        {}}) {
    auto result = run_accel(args);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("Usage: accel"), std::string::npos) << result.err;
  }
}

TEST(LaunchEndToEnd, MissingProgramIsNamed) {
  auto result = run_accel({"launch", "--nproc_per_node", "2", "/nonexistent/program"});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 127);
  EXPECT_NE(result.err.find("cannot run /nonexistent/program: No such file or directory"), std::string::npos)
      << result.err;
}

TEST(LaunchEndToEnd, DryRunPrintsEachRankAndStartsNothing) {
  TempDir dir;
  auto result = run_accel({"launch", "--nproc_per_node", "2", "--master_port", "1234", "--dry_run", "sh", "-c",
                           "touch " + dir.path() + "/started"},
                          {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(has_line(
      result.out,
      "rank 1: ACCELERATE_MIXED_PRECISION=no ACCELERATE_USE_CPU=false ACCEL_LAUNCH_PREFIXES_LINES=1 "
      "GROUP_RANK=0 GROUP_WORLD_SIZE=1 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1234 RANK=1 "
      "ROLE_NAME=default ROLE_RANK=1 ROLE_WORLD_SIZE=2 TORCHELASTIC_MAX_RESTARTS=0 TORCHELASTIC_RESTART_COUNT=0 "
      "TORCHELASTIC_RUN_ID=none WORLD_SIZE=2 sh -c 'touch " +
          dir.path() + "/started'"))
      << result.out;
  EXPECT_FALSE(read_file(dir.path() + "/started"));
}

// --log_dir alone: each rank's stdout and stderr in DIR/rank_N.log, nothing of
// them on the terminal; --tee 3 puts them on the terminal too, prefixed as usual.
TEST(LaunchEndToEnd, LogDirWritesEachRanksOutputToItsFile) {
  TempDir dir;
  const std::string speak = "echo out-$RANK; echo err-$RANK >&2";
  auto quiet = run_accel(
      {"launch", "--nproc_per_node", "2", "--master_port", "0", "--log_dir", dir.path() + "/logs", "sh", "-c", speak},
      {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  for (int rank : {0, 1}) {
    auto log = read_file(dir.path() + "/logs/rank_" + std::to_string(rank) + ".log");
    ASSERT_TRUE(log) << "rank " << rank << " has no log file";
    EXPECT_TRUE(has_line(*log, "out-" + std::to_string(rank))) << *log;
    EXPECT_TRUE(has_line(*log, "err-" + std::to_string(rank))) << *log;
  }
  EXPECT_EQ(quiet.out.find("out-"), std::string::npos) << quiet.out;
  EXPECT_EQ(quiet.err.find("err-"), std::string::npos) << quiet.err;

  auto teed = run_accel({"launch", "--nproc_per_node", "2", "--master_port", "0", "--log_dir", dir.path() + "/logs",
                         "--tee", "3", "sh", "-c", speak},
                        {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(teed.exit_code, 0) << teed.err;
  EXPECT_TRUE(has_line(teed.out, "[rank 1] out-1")) << teed.out;
  EXPECT_TRUE(has_line(teed.err, "[rank 0] err-0")) << teed.err;
  auto appended = read_file(dir.path() + "/logs/rank_0.log");  // the second launch appends to the first's
  ASSERT_TRUE(appended);
  EXPECT_NE(appended->find("out-0"), appended->rfind("out-0")) << *appended;
}

// torchrun's per-rank, per-stream choices, without --log_dir (a fresh directory
// under $TMPDIR is named on stderr): rank 0's stdout teed, every stderr
// redirected, and only local rank 0 on the terminal.
TEST(LaunchEndToEnd, StreamsGoWhereRedirectsTeeAndFilterSay) {
  TempDir dir;
  auto result = run_accel({"launch", "--nproc_per_node", "2", "--master_port", "0", "--tee", "0:1", "--redirects", "2",
                           "--local_ranks_filter", "0", "sh", "-c", "echo out-$RANK; echo err-$RANK >&2"},
                          {{"OMP_NUM_THREADS", "1"}, {"TMPDIR", dir.path()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(has_line(result.out, "[rank 0] out-0")) << result.out;
  EXPECT_EQ(result.out.find("out-1"), std::string::npos) << result.out;  // filtered out
  EXPECT_EQ(result.err.find("err-"), std::string::npos) << result.err;   // redirected

  const std::string announced = "accel launch: the ranks' logs are in ";
  auto at = result.err.find(announced);
  ASSERT_NE(at, std::string::npos) << result.err;
  std::string logs = result.err.substr(at + announced.size());
  logs = logs.substr(0, logs.find('\n'));
  EXPECT_EQ(logs.rfind(dir.path() + "/accel-logs-", 0), 0u) << logs;
  auto rank0 = read_file(logs + "/rank_0.log");
  auto rank1 = read_file(logs + "/rank_1.log");
  ASSERT_TRUE(rank0 && rank1) << logs;
  EXPECT_TRUE(has_line(*rank0, "out-0") && has_line(*rank0, "err-0")) << *rank0;
  EXPECT_TRUE(has_line(*rank1, "err-1")) << *rank1;
  EXPECT_EQ(rank1->find("out-1"), std::string::npos) << *rank1;  // neither teed nor redirected
}

// Accelerate's config file at its default place, under the environment and the
// command line: the ranks see the resolved settings as ACCELERATE_* variables.
TEST(LaunchEndToEnd, ConfigFileEnvironmentAndFlagsReachTheRanks) {
  TempDir dir;
  ASSERT_EQ(std::system(("mkdir -p " + dir.path() +
                         "/accelerate && printf '"
                         "distributed_type: MULTI_CPU\nnum_processes: 2\nmixed_precision: fp16\nuse_cpu: true\n' > " +
                         dir.path() + "/accelerate/default_config.yaml")
                            .c_str()),
            0);
  std::string show =
      "echo $WORLD_SIZE $ACCELERATE_MIXED_PRECISION $ACCELERATE_USE_CPU "
      "${ACCELERATE_GRADIENT_ACCUMULATION_STEPS:-unset}";
  auto from_file = run_accel({"launch", "--master_port", "0", "sh", "-c", show},
                             {{"HF_HOME", dir.path()}, {"ACCELERATE_MIXED_PRECISION", std::nullopt}});
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_TRUE(has_line(from_file.out, "[rank 1] 2 fp16 true unset")) << from_file.out;

  auto from_env = run_accel({"launch", "--master_port", "0", "sh", "-c", show},
                            {{"HF_HOME", dir.path()}, {"ACCELERATE_MIXED_PRECISION", "bf16"}});
  EXPECT_TRUE(has_line(from_env.out, "[rank 1] 2 bf16 true unset")) << from_env.out;

  auto from_flags = run_accel({"launch", "--master_port", "0", "--num_processes", "3", "--mixed_precision", "no",
                               "--gradient_accumulation_steps", "2", "sh", "-c", show},
                              {{"HF_HOME", dir.path()}, {"ACCELERATE_MIXED_PRECISION", "bf16"}});
  EXPECT_TRUE(has_line(from_flags.out, "[rank 2] 3 no true 2")) << from_flags.out;

  auto dry = run_accel({"launch", "--dry_run", "--master_port", "1234", "prog"}, {{"HF_HOME", dir.path()}});
  EXPECT_TRUE(has_line(
      dry.out, "  mixed_precision = fp16  (" + dir.path() + "/accelerate/default_config.yaml: mixed_precision)"))
      << dry.out;
  EXPECT_TRUE(has_line(dry.out, "  master_port = 1234  (command line --master_port)")) << dry.out;
}

TEST(LaunchEndToEnd, ConfigFileSettingItCannotHonourIsNamed) {
  TempDir dir;
  std::string path = dir.path() + "/ds.yaml";
  ASSERT_EQ(std::system(("printf 'distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n  "
                         "offload_optimizer_device: nvme\nfuture_key: 1\n' > " +
                         path)
                            .c_str()),
            0);
  auto result = run_accel({"launch", "--config_file", path, "sh", "-c", "touch " + dir.path() + "/started"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find(path + ": key 'deepspeed_config.offload_optimizer_device': 'nvme': offload to NVMe is "
                                   "not supported (use cpu or none)"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(read_file(dir.path() + "/started"));
}

// A rank that fails in the first attempt only: the group is restarted and the
// job succeeds; each restart is announced with the failure that caused it.
// Rank 1 fails only once rank 0 has logged its first attempt (up to 10 s):
// failing at once, it could have the group stopped before rank 0's shell ran
// its first command, which a loaded 2-core machine did once.
TEST(LaunchEndToEnd, MaxRestartsRestartsTheWholeGroup) {
  TempDir dir;
  const std::string log = dir.path() + "/log.";
  const std::string rank_1_waits = "for i in $(seq 1000); do [ -s " + log + "0 ] && break; sleep 0.01; done; ";
  const std::string script = "echo attempt $TORCHELASTIC_RESTART_COUNT >> " + log + "$RANK; " +
                             "if [ $RANK = 1 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then " + rank_1_waits +
                             "exit 5; fi; "
                             "if [ $RANK = 0 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then sleep 60; fi; echo done";
  auto result =
      run_accel({"launch", "--nproc_per_node", "2", "--master_port", "0", "--max_restarts", "2", "sh", "-c", script});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::regex_search(result.err, std::regex(R"(rank 1 \(pid [0-9]+ on [^)]+\) exited with code 5)")))
      << result.err;
  EXPECT_NE(result.err.find("accel launch: restarting every rank (restart 1 of 2)"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("restart 2 of 2"), std::string::npos) << result.err;
  EXPECT_EQ(read_file(dir.path() + "/log.0"), "attempt 0\nattempt 1\n");
  EXPECT_EQ(read_file(dir.path() + "/log.1"), "attempt 0\nattempt 1\n");
  EXPECT_TRUE(has_line(result.out, "[rank 0] done")) << result.out;
}

TEST(LaunchEndToEnd, MaxRestartsGivesUpWithTheLastFailure) {
  auto result = run_accel({"launch", "--nproc_per_node", "2", "--master_port", "0", "--max_restarts", "1", "sh", "-c",
                           "if [ $RANK = 0 ]; then exit 4; fi; sleep 60"});
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("restarting every rank (restart 1 of 1)"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("giving up: every one of the 1 restart(s) is used"), std::string::npos) << result.err;
}

// A rank of a libaccel program that exits with code 0 before a rendezvous the
// other rank waits in has completed: the launcher stops the job at once rather
// than letting rank 0 wait out its 60 s timeout, says why, and exits with 1.
// Whether another host could reach a socket bound to every interface here.
bool machine_has_non_loopback_address() {
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return true;
  bool found = false;
  for (ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
    const bool usable = i->ifa_addr != nullptr && (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK);
    found = found || (usable && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6));
  }
  ::freeifaddrs(interfaces);
  return found;
}

// rank0_creates_group: whether rank 0 certainly builds its process group (and so reaches the
// warning) before the launcher stops it. In "early_exit" rank 1 leaves at once, and the launcher
// may stop rank 0 before it got there (seen on a 2-core AMD EPYC): then the first run cannot be
// asked to warn, only neither run to warn twice.
void expect_stopped_for_rendezvous(const std::string& mode, bool rank0_creates_group) {
  TempDir runtime;  // where rank 0 marks that it gave the exposed-store warning this boot
  auto result = run_accel({"launch", "--nproc_per_node", "2", "--master_port", "0", DIST_TIMEOUT_PATH, mode},
                          {{"OMP_NUM_THREADS", "1"}, {"XDG_RUNTIME_DIR", runtime.path()}}, 50s);
  ASSERT_TRUE(result.finished) << result.err;
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_LT(result.elapsed, 30s) << result.err;  // rank 0's own timeout is 60 s
  EXPECT_NE(result.err.find("accel launch: rank 1 exited with code 0 before completing the rendezvous that rank 0 "
                            "is waiting in, so it can never complete; stopping the other ranks"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find("the rendezvous completed without rank 1"), std::string::npos) << result.err;
  // MASTER_ADDR is 127.0.0.1: rank 0 warns where its store listens on every interface anyway.
  auto env = run_accel({"env"});
  bool everywhere = env.out.find("- Rendezvous store listens on: every interface") != std::string::npos;
  ASSERT_TRUE(everywhere || env.out.find("- Rendezvous store listens on: MASTER_ADDR only") != std::string::npos)
      << env.out;
  const std::string warning = "WARNING accel: MASTER_ADDR is 127.0.0.1, but the rendezvous store (rank 0, port ";
  bool warned = result.err.find(warning) != std::string::npos;
  // Only where other hosts could reach it, and once per boot (the mark in XDG_RUNTIME_DIR).
  const bool exposed = everywhere && machine_has_non_loopback_address();
  if (rank0_creates_group || !exposed) EXPECT_EQ(warned, exposed) << result.err;
  auto again = run_accel({"launch", "--nproc_per_node", "2", "--master_port", "0", DIST_TIMEOUT_PATH, mode},
                         {{"OMP_NUM_THREADS", "1"}, {"XDG_RUNTIME_DIR", runtime.path()}}, 50s);
  const bool warned_again = again.err.find(warning) != std::string::npos;
  EXPECT_FALSE(warned && warned_again) << "warned twice in one boot:\n" << again.err;
  EXPECT_FALSE(warned_again && !exposed) << again.err;
}

TEST(LaunchEndToEnd, RankExitingZeroBeforeTheRendezvousStopsTheJob) {
  expect_stopped_for_rendezvous("early_exit", false);
}

TEST(LaunchEndToEnd, RankExitingZeroBeforeASecondRendezvousStopsTheJob) {
  expect_stopped_for_rendezvous("second_rendezvous", true);
}

}  // namespace
