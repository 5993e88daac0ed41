#include "cli/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string_view>

namespace accel::cli {

namespace {

// How long output held open by a process outside the ranks' groups (one that
// called setsid(), say) is still relayed once nothing in the groups is left.
constexpr auto kOutputDrainTime = std::chrono::seconds(1);

constexpr size_t kReadSize = 64 * 1024;
// Enough reads to empty a full pipe (1 MiB at most, Linux's default pipe-max-size).
constexpr int kReadsAtRankExit = (1 << 20) / kReadSize;

// Writes all of `text`, or what a closed output allows: the launcher must go on
// supervising (and stopping) the ranks even when nobody reads its output.
void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t written = ::write(fd, text.data(), text.size());
    if (written > 0) {
      text.remove_prefix(static_cast<size_t>(written));
    } else if (errno == EAGAIN) {
      // An output shared with a process that made it non-blocking: wait for room.
      pollfd room{fd, POLLOUT, 0};
      ::poll(&room, 1, -1);
    } else if (errno != EINTR) {
      return;
    }
  }
}

void say(const std::string& message) { write_all(STDERR_FILENO, "accel launch: " + message + "\n"); }

std::string prefix_for(int rank) { return "[rank " + std::to_string(rank) + "] "; }

// "3" rather than std::to_string's "3.000000".
std::string format_seconds(double seconds) {
  std::ostringstream text;
  text << seconds;
  return text.str();
}

std::chrono::steady_clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// The rank's log file, opened for appending so that a restarted group's output
// follows the earlier attempts'. An error names the file (a missing directory
// is created first).
int open_rank_log(const std::string& dir, int rank) {
  std::error_code ignored;  // open() below reports what went wrong
  std::filesystem::create_directories(dir, ignored);
  std::string path = dir + "/rank_" + std::to_string(rank) + ".log";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw SpawnError("cannot open " + path + " for the ranks' logs: " + std::strerror(errno), 1);
  return fd;
}

}  // namespace

Supervisor::Supervisor(LaunchConfig config) : config_(std::move(config)) {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) host_ = name;
}

Supervisor::~Supervisor() {
  // Only reached with ranks alive when run() was left by an exception: they
  // must not outlive the launcher.
  for (auto& rank : ranks_) {
    if (rank.running) {
      ::kill(-rank.process.pid, SIGKILL);
      ::waitpid(rank.process.pid, nullptr, 0);
    }
    for (Relay* relay : {&rank.out, &rank.err}) {
      if (relay->from_fd >= 0) ::close(relay->from_fd);
    }
    if (rank.log_fd >= 0) ::close(rank.log_fd);
    if (rank.process.report_fd >= 0) ::close(rank.process.report_fd);
  }
}

int Supervisor::run() {
  // Processes orphaned by a dying rank become the launcher's children rather
  // than init's: the launcher reaps them (in a container, init may not) and so
  // knows when a rank's process group is really empty.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  LauncherSignals signals;  // before the first rank starts, so no Ctrl-C is lost
  if (!choose_log_dir()) return 1;
  for (;;) {
    AttemptResult result = run_attempt(signals);
    // Only a rank's failure is worth another attempt: not Ctrl-C, not a PROGRAM that cannot start.
    if (result.end != AttemptEnd::kRankFailed) return result.exit_status;
    if (config_.restart_count >= config_.max_restarts) {
      if (config_.max_restarts > 0) {
        say("giving up: every one of the " + std::to_string(config_.max_restarts) + " restart(s) is used");
      }
      return result.exit_status;
    }
    ++config_.restart_count;
    say("restarting every rank (restart " + std::to_string(config_.restart_count) + " of " +
        std::to_string(config_.max_restarts) + ")");
  }
}

AttemptResult Supervisor::run_attempt(LauncherSignals& signals, const std::optional<AttemptMonitor>& monitor) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  begin_new_attempt();
  if (monitor) next_check_ = Clock::now() + to_duration(monitor->interval_s);
  start_ranks();
  while (has_work()) {
    wait_for_events(signals);
    for (int signo : signals.take()) on_launcher_signal(signo);
    reap();
    update_groups();
    enforce_deadlines();
    if (monitor) check_monitor(*monitor);
  }
  next_check_.reset();
  const int status = exit_status_.value_or(0);
  if (launcher_signal_ != 0) return {AttemptEnd::kSignalled, status};
  if (interrupted_) return {AttemptEnd::kInterrupted, status};
  if (rank_failed_) return {AttemptEnd::kRankFailed, status};
  return {status == 0 ? AttemptEnd::kSucceeded : AttemptEnd::kNotStarted, status};
}

void Supervisor::check_monitor(const AttemptMonitor& monitor) {
  if (!next_check_ || Clock::now() < *next_check_) return;
  next_check_ = Clock::now() + to_duration(monitor.interval_s);
  if (exit_status_) return;  // already stopping
  if (auto reason = monitor.check()) {
    say(*reason + "; stopping the ranks of this node to rendezvous again");
    interrupted_ = true;
    exit_status_ = 1;
    stop_ranks(SIGTERM);
  }
}

void Supervisor::begin_new_attempt() {
  // Everything of the last attempt has ended: has_work() was false.
  for (auto& rank : ranks_) {
    if (rank.log_fd >= 0) ::close(rank.log_fd);
    if (rank.process.report_fd >= 0) ::close(rank.process.report_fd);
  }
  ranks_.clear();
  watch_ = RendezvousWatch();
  exit_status_.reset();
  rank_failed_ = false;
  interrupted_ = false;
  kill_deadline_.reset();
  killed_ = false;
  abandon_output_at_.reset();
}

// torchrun's way when streams go to files without --log_dir: a fresh
// directory, named on stderr so the user finds the logs.
bool Supervisor::choose_log_dir() {
  OutputRouting& output = config_.output;
  if (!output.log_dir.empty() || !output.writes_files(config_.nproc_per_node)) return true;
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/accel-logs-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    say("cannot make a directory for the ranks' logs from " + dir + ": " + std::strerror(errno) + "; give --log_dir");
    return false;
  }
  output.log_dir = dir;
  if (!config_.quiet) say("the ranks' logs are in " + dir);
  return true;
}

void Supervisor::start_ranks() {
  const OutputRouting& output = config_.output;
  for (int local_rank = 0; local_rank < config_.nproc_per_node; ++local_rank) {
    int log_fd = -1;
    try {
      const auto out = output.route(local_rank, kStdout);
      const auto err = output.route(local_rank, kStderr);
      if (out.to_file || err.to_file) log_fd = open_rank_log(output.log_dir, config_.global_rank(local_rank));
      RankProcess process = spawn_rank(config_, local_rank);
      std::string prefix = prefix_for(process.rank);
      // A stream going nowhere is still read, so the rank never blocks on a full pipe.
      ranks_.push_back(Rank{process,
                            Relay{process.stdout_fd, out.to_terminal ? STDOUT_FILENO : -1, LinePrefixer(prefix),
                                  out.to_file ? log_fd : -1},
                            Relay{process.stderr_fd, err.to_terminal ? STDERR_FILENO : -1, LinePrefixer(prefix),
                                  err.to_file ? log_fd : -1},
                            log_fd});
    } catch (const SpawnError& error) {
      if (log_fd >= 0) ::close(log_fd);
      say(std::string(error.what()) + (ranks_.empty() ? "" : "; stopping the ranks already started"));
      exit_status_ = error.exit_code();
      stop_ranks(SIGTERM);
      return;
    }
  }
}

bool Supervisor::has_work() const {
  return std::any_of(ranks_.begin(), ranks_.end(),
                     [](const Rank& rank) { return rank.has_processes() || rank.has_output(); });
}

void Supervisor::wait_for_events(LauncherSignals& signals) {
  std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
  std::vector<Relay*> relays{nullptr};    // relays[i] reads fds[i], or nullptr
  std::vector<Rank*> reporters{nullptr};  // reporters[i] is the rank whose reports fds[i] carries, or nullptr
  for (auto& rank : ranks_) {
    for (Relay* relay : {&rank.out, &rank.err}) {
      if (relay->from_fd < 0) continue;
      fds.push_back({relay->from_fd, POLLIN, 0});
      relays.push_back(relay);
      reporters.push_back(nullptr);
    }
    if (rank.process.report_fd >= 0) {
      fds.push_back({rank.process.report_fd, POLLIN, 0});
      relays.push_back(nullptr);
      reporters.push_back(&rank);
    }
  }
  // Signals, SIGCHLD included, wake poll() through the signal pipe; the only
  // other reason to wake is a deadline.
  int timeout_ms = -1;
  if (auto deadline = next_deadline()) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
    timeout_ms = static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, left.count()));
  }
  if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    if (relays[i] != nullptr) relay_some(*relays[i]);
    if (reporters[i] != nullptr) read_reports(*reporters[i]);
  }
  check_rendezvous();
}

void Supervisor::read_reports(Rank& rank) {
  char message[64];
  ssize_t got;
  while ((got = ::recv(rank.process.report_fd, message, sizeof message, 0)) >= 0 || errno == EINTR) {
    if (got > 0) watch_.report(rank.process.rank, std::string_view(message, static_cast<size_t>(got)));
  }
}

void Supervisor::check_rendezvous() {
  if (exit_status_) return;  // already stopping
  auto stranded = watch_.stranded();
  if (!stranded) return;
  auto list = [](const std::vector<int>& ranks) {
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
    return text;
  };
  // Without this the waiting ranks would fail only after their whole timeout.
  say(list(stranded->gone) + " exited with code 0 before completing the rendezvous that " + list(stranded->waiting) +
      (stranded->waiting.size() == 1 ? " is" : " are") +
      " waiting in, so it can never complete; stopping the other ranks");
  rank_failed_ = true;
  exit_status_ = 1;
  stop_ranks(SIGTERM);
}

bool Supervisor::relay_some(Relay& relay) {
  char buffer[kReadSize];
  ssize_t got = ::read(relay.from_fd, buffer, sizeof buffer);
  if (got > 0) {
    std::string_view chunk(buffer, static_cast<size_t>(got));
    if (relay.log_fd >= 0) write_all(relay.log_fd, chunk);
    if (relay.to_fd >= 0) write_all(relay.to_fd, relay.lines.feed(chunk));
    return true;
  }
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  close_relay(relay);  // end of file: every process holding the pipe is done with it
  return false;
}

void Supervisor::close_relay(Relay& relay) {
  if (relay.to_fd >= 0) write_all(relay.to_fd, relay.lines.finish());
  ::close(relay.from_fd);
  relay.from_fd = -1;
}

void Supervisor::reap() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    auto rank = std::find_if(ranks_.begin(), ranks_.end(), [pid](const Rank& candidate) {
      return candidate.running && candidate.process.pid == pid;
    });
    // Otherwise an orphan a rank left behind, adopted as subreaper: reaped, nothing more.
    if (rank != ranks_.end()) on_rank_exit(*rank, status);
  }
}

void Supervisor::on_rank_exit(Rank& rank, int wait_status) {
  rank.running = false;
  // What it wrote before it ended comes before the launcher's words about it.
  // Bounded: a process it left behind may keep writing.
  for (Relay* relay : {&rank.out, &rank.err}) {
    for (int reads = 0; reads < kReadsAtRankExit && relay->from_fd >= 0 && relay_some(*relay); ++reads) {
    }
  }
  if (rank.process.report_fd >= 0) {
    read_reports(rank);  // a "done" it sent just before exiting counts
    ::close(rank.process.report_fd);
    rank.process.report_fd = -1;
  }
  RankExit exit{rank.process.rank, rank.process.pid, wait_status, host_};
  if (!exit.failed()) {
    watch_.exited(rank.process.rank);
    check_rendezvous();
    return;
  }
  if (exit_status_) return;  // later exits are the stop's consequences
  rank_failed_ = true;
  bool others_running = std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& other) { return other.running; });
  say(exit.describe() + (others_running ? "; stopping the other ranks" : ""));
  exit_status_ = exit.exit_code();
  stop_ranks(SIGTERM);
}

void Supervisor::update_groups() {
  // A group is empty once kill() finds no process in it. Its id can only be
  // reused after that, so from then on it is never signalled again.
  for (auto& rank : ranks_) {
    if (!rank.running && !rank.group_gone && ::kill(-rank.process.pid, 0) != 0 && errno == ESRCH) {
      rank.group_gone = true;
    }
  }
}

void Supervisor::on_launcher_signal(int signo) {
  if (signo == SIGCHLD) return;  // reap() follows every wake-up
  if (launcher_signal_ != 0) {
    // Asked twice: the user does not want to wait for the grace period.
    say("got " + signal_name(signo) + " again; killing every rank");
    signal_ranks(SIGKILL);
    killed_ = true;
    return;
  }
  launcher_signal_ = signo;
  say("got " + signal_name(signo) + "; stopping every rank");
  if (!exit_status_) exit_status_ = 128 + signo;
  stop_ranks(signo);
}

void Supervisor::stop_ranks(int signo) {
  if (!kill_deadline_) kill_deadline_ = Clock::now() + to_duration(config_.grace_period_s);
  signal_ranks(signo);
}

void Supervisor::signal_ranks(int signo) {
  // The whole process group: what a rank started stops with it.
  for (const auto& rank : ranks_) {
    if (!rank.has_processes()) continue;
    ::kill(-rank.process.pid, signo);
    // A stopped process (SIGSTOP, a debugger's) acts on SIGTERM only once continued:
    // without this a hung rank would hold the job for the whole grace period.
    if (signo != SIGKILL) ::kill(-rank.process.pid, SIGCONT);
  }
}

void Supervisor::enforce_deadlines() {
  auto now = Clock::now();
  auto has_processes = [](const Rank& rank) { return rank.has_processes(); };
  if (kill_deadline_ && !killed_ && now >= *kill_deadline_ &&
      std::any_of(ranks_.begin(), ranks_.end(), has_processes)) {
    std::string left;
    for (const auto& rank : ranks_) {
      if (rank.has_processes()) left += (left.empty() ? "" : ", ") + std::to_string(rank.process.rank);
    }
    say("processes of rank(s) " + left + " still running " + format_seconds(config_.grace_period_s) +
        " s after being told to stop; sending SIGKILL");
    signal_ranks(SIGKILL);
    killed_ = true;
  }
  if (std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& rank) { return rank.running; })) return;

  if (std::any_of(ranks_.begin(), ranks_.end(), has_processes)) {
    // The job is over when its ranks are; what they left running in their
    // groups is stopped like a rank.
    if (!kill_deadline_) {
      say("every rank has exited; stopping the processes they left running");
      stop_ranks(SIGTERM);
    }
  } else if (has_work() && !abandon_output_at_) {
    abandon_output_at_ = now + kOutputDrainTime;
  } else if (abandon_output_at_ && now >= *abandon_output_at_) {
    for (auto& rank : ranks_) {
      for (Relay* relay : {&rank.out, &rank.err}) {
        if (relay->from_fd >= 0) close_relay(*relay);
      }
    }
  }
}

std::optional<Supervisor::Clock::time_point> Supervisor::next_deadline() const {
  std::optional<Clock::time_point> next = abandon_output_at_;
  if (kill_deadline_ && !killed_ && (!next || *kill_deadline_ < *next)) next = kill_deadline_;
  if (next_check_ && !exit_status_ && (!next || *next_check_ < *next)) next = next_check_;
  return next;
}

}  // namespace accel::cli
