// `accel config` (through a pseudo-terminal, as a user at a terminal runs it),
// `accel config default`, `accel env`, `accel test`, and --help and usage
// errors for every command.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/config_file.hpp"
#include "launcher_process.hpp"

namespace {

using accel::cli::testing::read_file;
using accel::cli::testing::run_accel;
using accel::cli::testing::TempDir;
using namespace std::chrono_literals;

// `accel ARGS...` on a pseudo-terminal: what it writes is read back, and
// answers are typed once the expected prompt has appeared.
class Terminal {
 public:
  explicit Terminal(const std::vector<std::string>& args) {
    pid_ = ::forkpty(&master_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      std::vector<char*> argv{const_cast<char*>(ACCEL_PATH)};
      for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(ACCEL_PATH, argv.data());
      ::_exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }

  // Reads until `text` has appeared after what earlier calls consumed; false after 10 s.
  bool expect(const std::string& text) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      if (auto at = seen_.find(text, consumed_); at != std::string::npos) {
        consumed_ = at + text.size();
        return true;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd ready{master_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&ready, 1, static_cast<int>(left.count())) <= 0) return false;
      char buffer[1024];
      ssize_t got = ::read(master_, buffer, sizeof buffer);
      if (got <= 0) return false;  // EIO: the program closed the terminal
      seen_.append(buffer, static_cast<size_t>(got));
    }
  }
  void type(const std::string& line) {
    std::string text = line + "\n";
    ASSERT_EQ(::write(master_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  int wait_exit() {
    int status = 0;
    while (expect("\x01never")) {
    }  // drain the terminal, so the program never blocks writing
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& transcript() const { return seen_; }

 private:
  pid_t pid_ = -1;
  int master_ = -1;
  bool reaped_ = false;
  std::string seen_;
  size_t consumed_ = 0;
};

TEST(Commands, ConfigQuestionnaireOnATerminal) {
  TempDir dir;
  std::string path = dir.path() + "/cfg/config.yaml";
  Terminal terminal({"config", "--config_file", path});
  ASSERT_TRUE(terminal.expect("Which type of machine are you using?")) << terminal.transcript();
  ASSERT_TRUE(terminal.expect("Your choice [0]: ")) << terminal.transcript();
  terminal.type("7");  // not a choice: asked again
  ASSERT_TRUE(terminal.expect("Please enter a number from 0 to 2.")) << terminal.transcript();
  ASSERT_TRUE(terminal.expect("Your choice [0]: "));
  terminal.type("1");  // multi-CPU
  ASSERT_TRUE(terminal.expect("How many different machines will you use? [1]: ")) << terminal.transcript();
  terminal.type("2");
  ASSERT_TRUE(terminal.expect("What is the rank of this machine? [0]: "));
  terminal.type("1");
  ASSERT_TRUE(terminal.expect("host the main process? [127.0.0.1]: "));
  terminal.type("10.0.0.7");
  ASSERT_TRUE(terminal.expect("communicate with the main process? [29500]: "));
  terminal.type("");  // the default
  ASSERT_TRUE(terminal.expect("How many processes in total will you use (over all machines)? [2]: "));
  terminal.type("3");  // does not divide over 2 machines: asked again
  ASSERT_TRUE(terminal.expect("The processes must divide evenly over the 2 machines."));
  ASSERT_TRUE(terminal.expect("[2]: "));
  terminal.type("4");
  ASSERT_TRUE(terminal.expect("Do you wish to use mixed precision?"));
  ASSERT_TRUE(terminal.expect("Your choice [0]: "));
  terminal.type("bf16");
  ASSERT_TRUE(terminal.expect("accel configuration saved at " + path)) << terminal.transcript();
  EXPECT_EQ(terminal.wait_exit(), 0) << terminal.transcript();

  auto file = accel::cli::load_config_file(path);
  EXPECT_TRUE(file.warnings.empty());
  EXPECT_EQ(file.values.distributed_type, "MULTI_CPU");
  EXPECT_EQ(file.values.num_machines, 2);
  EXPECT_EQ(file.values.machine_rank, 1);
  EXPECT_EQ(file.values.main_process_ip, "10.0.0.7");
  EXPECT_EQ(file.values.main_process_port, 29500);
  EXPECT_EQ(file.values.num_processes, 4);
  EXPECT_EQ(file.values.use_cpu, true);
  EXPECT_EQ(file.values.mixed_precision, "bf16");
}

TEST(Commands, ConfigQuestionnaireEndingEarlyWritesNothing) {
  TempDir dir;
  std::string path = dir.path() + "/config.yaml";
  auto result = run_accel({"config", "--config_file", path});  // stdin is /dev/null
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("input ended; nothing was written"), std::string::npos) << result.err;
  EXPECT_FALSE(read_file(path));
}

TEST(Commands, ConfigDefaultWritesOnceAtTheDefaultPlace) {
  TempDir dir;
  auto first = run_accel({"config", "default", "--mixed_precision", "fp16"}, {{"HF_HOME", dir.path()}});
  std::string path = dir.path() + "/accelerate/default_config.yaml";
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("accel configuration saved at " + path), std::string::npos) << first.out;
  auto file = accel::cli::load_config_file(path);
  EXPECT_EQ(file.values.mixed_precision, "fp16");
  EXPECT_EQ(file.values.num_processes, 1);
  EXPECT_EQ(file.values.distributed_type, "NO");

  auto again = run_accel({"config", "default"}, {{"HF_HOME", dir.path()}});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("Configuration already exists at " + path), std::string::npos) << again.out;

  // accel launch picks the written file up.
  auto dry = run_accel({"launch", "--dry_run", "prog"}, {{"HF_HOME", dir.path()}});
  EXPECT_NE(dry.out.find("mixed_precision = fp16  (" + path + ": mixed_precision)"), std::string::npos) << dry.out;
}

TEST(Commands, EnvReportsVersionsDevicesAndTheConfig) {
  TempDir dir;
  ASSERT_EQ(run_accel({"config", "default", "--config_file", dir.path() + "/c.yaml"}).exit_code, 0);
  auto result = run_accel({"env", "--config_file", dir.path() + "/c.yaml"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* expected : {"- accel command: ", "- Platform: Linux", "- Compiler: ", "- LibTorch: ",
                               "- Gloo (CPU collectives): yes", "- CUDA available: ", "- CUDA devices: ",
                               "\"distributed_type\": \"NO\""}) {  // the config, as written: JSON like Accelerate's
    EXPECT_NE(result.out.find(expected), std::string::npos) << expected << " missing from:\n" << result.out;
  }
  EXPECT_NE(result.out.find("- Config file: " + dir.path() + "/c.yaml"), std::string::npos) << result.out;
  // Who can reach the rendezvous store: every host on LibTorch 1.x (docs/launch.md).
  EXPECT_NE(result.out.find("- Rendezvous store listens on: "), std::string::npos) << result.out;
  if (result.out.find("- LibTorch: 1.") != std::string::npos) {
    EXPECT_NE(result.out.find("- Rendezvous store listens on: every interface, whatever MASTER_ADDR is (LibTorch 1."),
              std::string::npos)
        << result.out;
  }

  auto none = run_accel({"env"}, {{"HF_HOME", dir.path() + "/empty"}});
  EXPECT_NE(none.out.find("- Config file: none (looked for " + dir.path() + "/empty/accelerate/default_config.yaml)"),
            std::string::npos)
      << none.out;
}

TEST(Commands, TestRunsTheSanityCheckUnderTheConfig) {
  TempDir dir;
  std::string path = dir.path() + "/c.yaml";
  ASSERT_EQ(std::system(("printf 'distributed_type: MULTI_CPU\nnum_processes: 2\nuse_cpu: true\n"
                         "mixed_precision: bf16\n' > " +
                         path)
                            .c_str()),
            0);
  // The file's precision and the environment's accumulation reach the library.
  auto result = run_accel({"test", "--config_file", path},
                          {{"OMP_NUM_THREADS", "1"}, {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "2"}}, 60s);
  ASSERT_TRUE(result.finished);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("running accel-selftest on 2 process(es) with " + path), std::string::npos) << result.out;
  for (const char* expected :
       {"2 process(es), device cpu, mixed precision bf16, gradient accumulation steps 2", "collectives ok",
        "training ok", "gather_for_metrics ok", "Test is a success! You are ready for your distributed training!"}) {
    EXPECT_NE(result.out.find(expected), std::string::npos) << expected << " missing from:\n" << result.out;
  }
}

TEST(Commands, HelpForEveryCommandAndShortUsageErrors) {
  for (std::vector<std::string> command :
       {std::vector<std::string>{"config"}, {"config", "default"}, {"env"}, {"test"}, {"launch"}}) {
    std::string name = "accel";
    for (const auto& word : command) name += " " + word;
    auto args = command;
    args.push_back("--help");
    auto help = run_accel(args);
    EXPECT_EQ(help.exit_code, 0) << name;
    EXPECT_NE(help.out.find("Usage: " + name), std::string::npos) << help.out;

    args.back() = "--bogus";
    auto wrong = run_accel(args);
    EXPECT_EQ(wrong.exit_code, 2) << name;
    EXPECT_NE(wrong.err.find(name + ": "), std::string::npos) << wrong.err;
    EXPECT_NE(wrong.err.find("Usage: " + name), std::string::npos) << wrong.err;
    EXPECT_NE(wrong.err.find("Run '" + name + " --help' for more information."), std::string::npos) << wrong.err;
  }
  auto bad_value = run_accel({"config", "default", "--mixed_precision", "fp8"});
  EXPECT_EQ(bad_value.exit_code, 2);
}

TEST(Commands, AMistypedFlagOrSubcommandSuggestsTheClosest) {
  auto flag = run_accel({"launch", "--nproc_per_nod", "2", "train"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.err.find("Did you mean '--nproc_per_node'?"), std::string::npos) << flag.err;
  auto command = run_accel({"lanch", "train"});
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_NE(command.err.find("Did you mean 'launch'?"), std::string::npos) << command.err;
  auto far = run_accel({"launch", "--frobnicate", "train"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("Did you mean"), std::string::npos) << far.err;
}

}  // namespace
