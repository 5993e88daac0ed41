// Runs the ranks of one node to completion: starts them, relays their output
// line by line with a "[rank N] " prefix, stops all of them when one fails or
// when the launcher is signalled, and decides the launcher's exit status.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/launch_options.hpp"
#include "cli/launcher_signals.hpp"
#include "cli/line_prefixer.hpp"
#include "cli/rank_process.hpp"
#include "cli/rendezvous_watch.hpp"

namespace accel::cli {

// Asked every `interval_s` while an attempt runs (elastic_agent.hpp): a reason
// returned stops the ranks so that the node can rendezvous again.
struct AttemptMonitor {
  double interval_s = 5;
  std::function<std::optional<std::string>()> check;
};

// How one attempt ended.
enum class AttemptEnd {
  kSucceeded,    // every rank exited 0
  kRankFailed,   // a rank failed (or left a rendezvous stranded): worth a restart
  kNotStarted,   // PROGRAM could not be started: not worth one
  kSignalled,    // the launcher got SIGINT, SIGTERM, SIGHUP or SIGQUIT
  kInterrupted,  // AttemptMonitor::check gave a reason
};
struct AttemptResult {
  AttemptEnd end = AttemptEnd::kSucceeded;
  int exit_status = 0;  // what run() would return for it
};

class Supervisor {
 public:
  explicit Supervisor(LaunchConfig config);
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;
  ~Supervisor();

  // Returns when every rank, and every process a rank started in its process
  // group, has ended. The first event that stops the job decides the exit
  // status: a failing rank's exit code (128 + signal when it was killed),
  // 127/126 when PROGRAM cannot be run, 128 + signal when the launcher got
  // SIGINT, SIGTERM, SIGHUP or SIGQUIT. 0 when every rank exited 0.
  // A rank that exits with code 0 before a rendezvous the other ranks wait in
  // has completed also stops the job, with status 1 (cli/rendezvous_watch.hpp).
  // With max_restarts, a failed rank first stops the others as usual; then
  // every rank is started again, up to max_restarts times.
  int run();

  // One attempt: starts the ranks of config(), and returns once every one of
  // them (and what they started in their groups) has ended. run() is a loop of
  // these; the elastic agent sets the world of each attempt in config() first.
  AttemptResult run_attempt(LauncherSignals& signals, const std::optional<AttemptMonitor>& monitor = std::nullopt);
  LaunchConfig& config() { return config_; }
  // Makes a log directory when streams go to files and none was given; false
  // (after saying why) when that fails. Once, before the first attempt.
  bool choose_log_dir();

 private:
  using Clock = std::chrono::steady_clock;

  // One of a rank's output streams on its way to ours.
  struct Relay {
    int from_fd = -1;  // -1 once at end of file
    int to_fd = -1;    // the terminal (prefixed lines), or -1 when the stream is not shown
    LinePrefixer lines;
    int log_fd = -1;  // the rank's log file (raw output), or -1 when the stream is not logged
  };

  struct Rank {
    RankProcess process;  // process.pid is also its process group's id
    Relay out, err;
    int log_fd = -1;  // owned: closed when the attempt ends
    bool running = true;
    bool group_gone = false;  // set once the rank and all it started in its group have ended

    bool has_processes() const { return running || !group_gone; }
    bool has_output() const { return out.from_fd >= 0 || err.from_fd >= 0; }
  };

  void start_ranks();
  void begin_new_attempt();
  bool has_work() const;
  void wait_for_events(LauncherSignals& signals);
  // Reads once from a rank's stream and passes its complete lines on; false
  // when nothing more is there for now, or at end of file.
  bool relay_some(Relay& relay);
  // Passes an unterminated last line on and stops reading.
  void close_relay(Relay& relay);
  void reap();
  void on_rank_exit(Rank& rank, int wait_status);
  // Passes the rank's rendezvous reports to watch_.
  void read_reports(Rank& rank);
  // Stops the job when its rendezvous can no longer complete.
  void check_rendezvous();
  void update_groups();
  void on_launcher_signal(int signo);
  void stop_ranks(int signo);
  void signal_ranks(int signo);
  void enforce_deadlines();
  std::optional<Clock::time_point> next_deadline() const;
  void check_monitor(const AttemptMonitor& monitor);

  LaunchConfig config_;
  std::vector<Rank> ranks_;
  RendezvousWatch watch_;                        // this attempt's
  std::string host_;                             // this machine's name, for failure messages
  std::optional<int> exit_status_;               // set by the first event that stops the job
  bool rank_failed_ = false;                     // this attempt was stopped by a failing rank
  bool interrupted_ = false;                     // this attempt was stopped by the monitor
  std::optional<Clock::time_point> next_check_;  // the monitor's
  int launcher_signal_ = 0;
  std::optional<Clock::time_point> kill_deadline_;  // SIGKILL for what is left after the grace period
  bool killed_ = false;                             // SIGKILL sent: nothing stronger is left
  // Output held open by processes that left the ranks' groups is not waited for past this.
  std::optional<Clock::time_point> abandon_output_at_;
};

}  // namespace accel::cli
