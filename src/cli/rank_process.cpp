#include "cli/rank_process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/launch_environment.hpp"

extern char** environ;

namespace accel::cli {

namespace {

// Owns a file descriptor: closes it unless released, so that no early exit
// from spawn_rank() leaks one.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

struct Pipe {
  UniqueFd read_end, write_end;
};

// Close-on-exec, so that no rank inherits another rank's pipes: a rank's output
// reaches end of file exactly when the rank (and what it started) is done.
Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SpawnError(std::string("pipe2: ") + std::strerror(errno), 1);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Why a socket pair, and datagrams: the rank's library sends one whole message
// per report and never blocks or gets SIGPIPE (send() with MSG_NOSIGNAL), and
// the launcher polls it with the output pipes. Watching the store's keys
// instead would need LibTorch's store protocol in the launcher, and a file
// would need polling. Both ends close-on-exec; the child clears it on its own.
struct ReportChannel {
  UniqueFd launcher_end, rank_end;
};
ReportChannel make_report_channel() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) {
    throw SpawnError(std::string("socketpair: ") + std::strerror(errno), 1);
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// "KEY=VALUE" entries: the launcher's environment, with `overrides` replacing
// or adding entries.
std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view key_value(*entry);
    if (overrides.count(std::string(key_value.substr(0, key_value.find('=')))) == 0) merged.emplace_back(key_value);
  }
  for (const auto& [key, value] : overrides) merged.push_back(key + "=" + value);
  return merged;
}

std::vector<char*> null_terminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// What the child does between fork() and exec. Everything it needs was built
// before fork(), so it makes system calls only (no allocation): safe even if
// the launcher one day runs threads.
[[noreturn]] void become_rank(char* const* argv, char* const* envp, int stdin_fd, int stdout_fd, int stderr_fd,
                              int report_fd, int exec_error_fd, pid_t launcher, const sigset_t& launcher_mask,
                              const cpu_set_t* cpus) {
  // Handlers would be reset by exec anyway; resetting them before the signals
  // are unblocked keeps a signal arriving now from running the launcher's handler.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int signo = 1; signo < NSIG; ++signo) {
    struct sigaction current {};
    if (::sigaction(signo, nullptr, &current) != 0) continue;
    bool has_handler =
        (current.sa_flags & SA_SIGINFO) != 0 || (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
    // SIGPIPE too: the launcher ignores it, a rank should not inherit that.
    if (has_handler || signo == SIGPIPE) ::sigaction(signo, &default_action, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &launcher_mask, nullptr);
  // If the launcher dies without stopping the ranks (SIGKILL, OOM killer), they stop too.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != launcher) ::_exit(127);  // it died before prctl() took effect
  ::setpgid(0, 0);
  if (cpus != nullptr) ::sched_setaffinity(0, sizeof(cpu_set_t), cpus);  // inherited by its threads and exec
  ::dup2(stdin_fd, STDIN_FILENO);
  ::dup2(stdout_fd, STDOUT_FILENO);
  ::dup2(stderr_fd, STDERR_FILENO);
  ::fcntl(report_fd, F_SETFD, 0);  // the one descriptor the rank inherits on purpose
  ::execvpe(argv[0], argv, envp);
  int exec_errno = errno;
  ssize_t written = ::write(exec_error_fd, &exec_errno, sizeof exec_errno);
  (void)written;  // nothing more to do if even this fails: the rank exits 127
  ::_exit(127);
}

// Blocks until the child has exec'd (0) or failed to (its errno): the status
// pipe is closed by a successful exec and carries errno otherwise.
int wait_for_exec(int exec_error_fd) {
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(exec_error_fd, &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  return got == static_cast<ssize_t>(sizeof exec_errno) ? exec_errno : 0;
}

}  // namespace

// --enable_cpu_affinity: local rank r of n gets the r-th of n equal runs of
// the CPUs the launcher may use (the remainder goes unused, so every rank has
// as many); with fewer CPUs than ranks, CPU r mod count.
static cpu_set_t rank_cpus(int local_rank, int local_world) {
  cpu_set_t allowed, mine;
  CPU_ZERO(&mine);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    throw SpawnError(std::string("--enable_cpu_affinity: cannot read the launcher's CPUs: ") + std::strerror(errno), 1);
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  const int count = static_cast<int>(cpus.size());
  if (count == 0) throw SpawnError("--enable_cpu_affinity: the launcher may use no CPU", 1);
  if (count < local_world) {
    CPU_SET(cpus[local_rank % count], &mine);
    return mine;
  }
  const int share = count / local_world;
  for (int i = local_rank * share; i < (local_rank + 1) * share; ++i) CPU_SET(cpus[i], &mine);
  return mine;
}

RankProcess spawn_rank(const LaunchConfig& config, int local_rank) {
  std::vector<std::string> args{config.program};
  args.insert(args.end(), config.program_args.begin(), config.program_args.end());
  ReportChannel report = make_report_channel();
  auto variables = rank_environment(config, local_rank);
  variables["ACCEL_LAUNCHER_REPORT_FD"] = std::to_string(report.rank_end.get());
  std::vector<std::string> env = merged_environment(variables);
  std::vector<char*> argv = null_terminated(args);
  std::vector<char*> envp = null_terminated(env);

  cpu_set_t cpus;
  if (config.enable_cpu_affinity) cpus = rank_cpus(local_rank, config.nproc_per_node);
  UniqueFd stdin_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (stdin_null.get() < 0) throw SpawnError(std::string("cannot open /dev/null: ") + std::strerror(errno), 1);
  Pipe out = make_pipe(), err = make_pipe(), exec_status = make_pipe();

  // Signals wait until the child has reset the launcher's handlers.
  sigset_t all, launcher_mask;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &launcher_mask);
  pid_t launcher = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    become_rank(argv.data(), envp.data(), stdin_null.get(), out.write_end.get(), err.write_end.get(),
                report.rank_end.get(), exec_status.write_end.get(), launcher, launcher_mask,
                config.enable_cpu_affinity ? &cpus : nullptr);
  }
  int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &launcher_mask, nullptr);
  if (pid < 0) throw SpawnError(std::string("cannot start a process: ") + std::strerror(fork_errno), 1);
  // Also here, so the group exists before the launcher may signal it.
  ::setpgid(pid, pid);
  // Only the child writes: our copies would keep the pipes from ever ending.
  out.write_end.reset();
  err.write_end.reset();
  exec_status.write_end.reset();
  report.rank_end.reset();

  if (int exec_errno = wait_for_exec(exec_status.read_end.get()); exec_errno != 0) {
    ::waitpid(pid, nullptr, 0);
    throw SpawnError("cannot run " + config.program + ": " + std::strerror(exec_errno),
                     exec_errno == ENOENT ? 127 : 126);
  }
  for (int fd : {out.read_end.get(), err.read_end.get()}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return RankProcess{config.global_rank(local_rank), pid, out.read_end.release(), err.read_end.release(),
                     report.launcher_end.release()};
}

bool RankExit::failed() const { return exit_code() != 0; }

int RankExit::exit_code() const {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

std::string RankExit::describe() const {
  std::string who =
      "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + (host.empty() ? "" : " on " + host) + ")";
  if (!WIFSIGNALED(wait_status)) return who + " exited with code " + std::to_string(WEXITSTATUS(wait_status));
  int signo = WTERMSIG(wait_status);
  std::string what = who + " was killed by signal " + std::to_string(signo) + " (" + signal_name(signo) + ")";
  return WCOREDUMP(wait_status) ? what + ", core dumped" : what;
}

std::string signal_name(int signo) {
  // A table rather than sigabbrev_np(), which needs glibc 2.32.
  static const std::map<int, const char*> names{
      {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},   {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"},     {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},     {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"},     {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"},   {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},   {SIGCHLD, "SIGCHLD"},
      {SIGCONT, "SIGCONT"},     {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"},   {SIGTTIN, "SIGTTIN"},
      {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"},   {SIGXFSZ, "SIGXFSZ"},
      {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"}, {SIGSYS, "SIGSYS"},
  };
  auto found = names.find(signo);
  return found != names.end() ? found->second : "signal " + std::to_string(signo);
}

}  // namespace accel::cli
