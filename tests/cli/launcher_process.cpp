#include "launcher_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include "core/remove_tree.hpp"

namespace accel::cli::testing {

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(10);

int exit_code_of(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

}  // namespace

LauncherProcess::LauncherProcess(const std::vector<std::string>& args,
                                 const std::map<std::string, std::optional<std::string>>& env) {
  std::string out_path = output_dir_.path() + "/out", err_path = output_dir_.path() + "/err";
  std::vector<std::string> argv_storage{ACCEL_PATH};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  started_ = std::chrono::steady_clock::now();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    for (const auto& [key, value] : env) {
      if (value) {
        ::setenv(key.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(key.c_str());
      }
    }
    ::dup2(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDOUT_FILENO);
    ::dup2(::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
}

LauncherProcess::~LauncherProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

LauncherResult LauncherProcess::wait(std::chrono::duration<double> limit) {
  LauncherResult result;
  auto deadline = started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit);
  int status = 0;
  while (pid_ > 0) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      result.finished = true;
      result.exit_code = exit_code_of(status);
      pid_ = -1;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    } else {
      std::this_thread::sleep_for(kPollInterval);
    }
  }
  result.elapsed = std::chrono::steady_clock::now() - started_;
  result.out = read_file(output_dir_.path() + "/out").value_or("");
  result.err = read_file(output_dir_.path() + "/err").value_or("");
  return result;
}

LauncherResult run_accel(const std::vector<std::string>& args,
                         const std::map<std::string, std::optional<std::string>>& env,
                         std::chrono::duration<double> limit) {
  return LauncherProcess(args, env).wait(limit);
}

TempDir::TempDir() {
  char directory[] = "/tmp/accel_cli_test.XXXXXX";
  if (::mkdtemp(directory) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = directory;
}

TempDir::~TempDir() { accel::detail::remove_tree(path_); }

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::ostringstream content;
  content << file.rdbuf();
  return content.str();
}

bool wait_for_files(const std::vector<std::string>& paths, std::chrono::duration<double> limit) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit);
  for (;;) {
    bool all_there = true;
    for (const auto& path : paths) all_there = all_there && !read_file(path).value_or("").empty();
    if (all_there) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
}

bool process_group_gone(pid_t pgid) { return ::kill(-pgid, 0) != 0 && errno == ESRCH; }

}  // namespace accel::cli::testing
