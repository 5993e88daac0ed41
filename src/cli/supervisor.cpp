#include "cli/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace accel::cli {

namespace {

int signal_pipe[2] = {-1, -1};

void on_signal(int signo) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  ssize_t ignored = ::write(signal_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved;
}

void install_signal_handlers() {
  if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2 failed");
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signo : {SIGINT, SIGTERM, SIGCHLD, SIGHUP}) ::sigaction(signo, &action, nullptr);
}

std::string signal_name(int signo) {
  const char* abbrev = ::sigabbrev_np(signo);
  return abbrev ? std::string("SIG") + abbrev : std::to_string(signo);
}

// One output stream of one rank, split into whole lines.
struct Stream {
  int fd = -1;
  FILE* sink = nullptr;
  std::string pending;
};

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int wait_status = 0;
  Stream out, err;
};

void emit_lines(Stream& stream, const std::string& prefix, bool flush_partial) {
  size_t start = 0, newline;
  while ((newline = stream.pending.find('\n', start)) != std::string::npos) {
    std::fprintf(stream.sink, "%s%.*s\n", prefix.c_str(), static_cast<int>(newline - start), stream.pending.data() + start);
    start = newline + 1;
  }
  stream.pending.erase(0, start);
  if (flush_partial && !stream.pending.empty()) {
    std::fprintf(stream.sink, "%s%s\n", prefix.c_str(), stream.pending.c_str());
    stream.pending.clear();
  }
  std::fflush(stream.sink);
}

// Reads what is there; closes the stream at end of file.
void drain(Stream& stream, const std::string& prefix) {
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(stream.fd, buffer, sizeof buffer);
    if (n > 0) {
      stream.pending.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    ::close(stream.fd);
    stream.fd = -1;
    emit_lines(stream, prefix, /*flush_partial=*/true);
    return;
  }
  emit_lines(stream, prefix, /*flush_partial=*/false);
}

Rank spawn(const LaunchConfig& config, int local_rank) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  auto env = rank_environment(config, local_rank);
  std::vector<std::string> argv_storage{config.program};
  argv_storage.insert(argv_storage.end(), config.program_args.begin(), config.program_args.end());

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // Own process group: the terminal's Ctrl-C reaches the launcher, which forwards it once.
    ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    struct sigaction dflt {};
    dflt.sa_handler = SIG_DFL;
    for (int signo : {SIGINT, SIGTERM, SIGCHLD, SIGHUP}) ::sigaction(signo, &dflt, nullptr);
    for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (auto& arg : argv_storage) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "accel launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  for (int fd : {out[0], err[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  Rank rank;
  rank.rank = config.node_rank * config.nproc_per_node + local_rank;
  rank.pid = pid;
  rank.running = true;
  rank.out = Stream{out[0], stdout, {}};
  rank.err = Stream{err[0], stderr, {}};
  return rank;
}

std::string describe_exit(const Rank& rank) {
  std::string who = "rank " + std::to_string(rank.rank) + " (pid " + std::to_string(rank.pid) + ")";
  if (WIFSIGNALED(rank.wait_status)) {
    int signo = WTERMSIG(rank.wait_status);
    return who + " was killed by signal " + std::to_string(signo) + " (" + signal_name(signo) + ")";
  }
  return who + " exited with code " + std::to_string(WEXITSTATUS(rank.wait_status));
}

bool failed(const Rank& rank) {
  return WIFSIGNALED(rank.wait_status) || (WIFEXITED(rank.wait_status) && WEXITSTATUS(rank.wait_status) != 0);
}

int exit_code_of(const Rank& rank) {
  if (WIFSIGNALED(rank.wait_status)) return 128 + WTERMSIG(rank.wait_status);
  return WEXITSTATUS(rank.wait_status);
}

class Supervisor {
 public:
  explicit Supervisor(const LaunchConfig& config) : config_(config) {}

  int run() {
    install_signal_handlers();
    for (int local = 0; local < config_.nproc_per_node; ++local) ranks_.push_back(spawn(config_, local));
    while (any_running() || any_open_stream()) {
      wait_for_events();
      reap();
      if (stopping_ && any_running() && std::chrono::steady_clock::now() >= kill_deadline_) signal_all(SIGKILL);
      // Output held open by a rank's own children must not keep us forever.
      if (!any_running() && any_open_stream() && ++idle_after_exit_ > 20) break;
    }
    for (auto& rank : ranks_) {
      for (Stream* s : {&rank.out, &rank.err}) {
        if (s->fd >= 0) emit_lines(*s, prefix(rank), /*flush_partial=*/true);
      }
    }
    if (launcher_signal_ != 0) return 128 + launcher_signal_;
    return first_failure_code_;
  }

 private:
  std::string prefix(const Rank& rank) const { return "[rank " + std::to_string(rank.rank) + "] "; }

  bool any_running() const {
    for (const auto& r : ranks_) {
      if (r.running) return true;
    }
    return false;
  }
  bool any_open_stream() const {
    for (const auto& r : ranks_) {
      if (r.out.fd >= 0 || r.err.fd >= 0) return true;
    }
    return false;
  }

  void wait_for_events() {
    std::vector<pollfd> fds{{signal_pipe[0], POLLIN, 0}};
    std::vector<std::pair<Rank*, Stream*>> owners{{nullptr, nullptr}};
    for (auto& rank : ranks_) {
      for (Stream* s : {&rank.out, &rank.err}) {
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          owners.emplace_back(&rank, s);
        }
      }
    }
    int ready = ::poll(fds.data(), fds.size(), 100);
    if (ready <= 0) return;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) drain(*owners[i].second, prefix(*owners[i].first));
    }
    if (fds[0].revents & POLLIN) {
      unsigned char signals[64];
      ssize_t n;
      while ((n = ::read(signal_pipe[0], signals, sizeof signals)) > 0) {
        for (ssize_t i = 0; i < n; ++i) handle_signal(signals[i]);
      }
    }
  }

  void handle_signal(int signo) {
    if (signo == SIGCHLD) return;  // reap() runs after every wake-up
    if (launcher_signal_ == 0) launcher_signal_ = signo == SIGHUP ? SIGTERM : signo;
    std::fprintf(stderr, "accel launch: got %s; stopping every rank\n", signal_name(signo).c_str());
    start_stopping(signo == SIGINT ? SIGINT : SIGTERM);
  }

  void reap() {
    for (auto& rank : ranks_) {
      if (!rank.running) continue;
      int status = 0;
      pid_t pid = ::waitpid(rank.pid, &status, WNOHANG);
      if (pid != rank.pid) continue;
      rank.running = false;
      rank.wait_status = status;
      // Flush what it wrote before it died, so its last words come before ours.
      for (Stream* s : {&rank.out, &rank.err}) {
        if (s->fd >= 0) drain(*s, prefix(rank));
      }
      if (failed(rank) && !stopping_) {
        std::fprintf(stderr, "accel launch: %s; stopping the other ranks\n", describe_exit(rank).c_str());
        first_failure_code_ = std::max(1, exit_code_of(rank));
        start_stopping(SIGTERM);
      }
    }
  }

  void start_stopping(int signo) {
    if (!stopping_) {
      stopping_ = true;
      kill_deadline_ = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(config_.grace_seconds * 1000));
    }
    signal_all(signo);
  }

  void signal_all(int signo) {
    for (const auto& rank : ranks_) {
      if (rank.running) ::kill(-rank.pid, signo);  // the rank's whole process group
    }
  }

  const LaunchConfig& config_;
  std::vector<Rank> ranks_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point kill_deadline_;
  int launcher_signal_ = 0;
  int first_failure_code_ = 0;
  int idle_after_exit_ = 0;
};

}  // namespace

int supervise(const LaunchConfig& config) { return Supervisor(config).run(); }

}  // namespace accel::cli
