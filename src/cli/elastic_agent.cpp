#include "cli/elastic_agent.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <ctime>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "cli/launch_environment.hpp"
#include "cli/rendezvous_client.hpp"
#include "cli/supervisor.hpp"

namespace accel::cli {

namespace {

// "accel launch [2026-11-27T07:40:01Z]: ..." on stderr: transitions with their time.
void log(const std::string& message) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::cerr << "accel launch [" << stamp << "]: " << message << std::endl;
}

std::string rank_span(const LaunchConfig& config) {
  const int first = config.global_rank(0), last = config.global_rank(config.nproc_per_node - 1);
  return first == last ? "rank " + std::to_string(first)
                       : "ranks " + std::to_string(first) + " to " + std::to_string(last);
}

class Agent {
 public:
  explicit Agent(LaunchConfig config) : supervisor_(std::move(config)) {}

  int run() {
    // Before the rendezvous helper and the ranks start: no Ctrl-C is lost, and
    // the helper's death cannot kill the agent with SIGPIPE.
    LauncherSignals signals;
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (!supervisor_.choose_log_dir()) return 1;
    LaunchConfig& config = supervisor_.config();
    const ElasticSettings& elastic = config.elastic;
    std::optional<RendezvousClient> rendezvous;
    try {
      rendezvous.emplace(elastic, find_selftest());
    } catch (const RendezvousFailure& error) {
      log(error.what());
      return 1;
    }
    log("node " + rendezvous->node_id() + " joins rendezvous '" + elastic.run_id + "' at " + elastic.endpoint_host +
        ":" + std::to_string(elastic.endpoint_port) + (rendezvous->hosts_store() ? " (hosting its store)" : "") +
        " for " + std::to_string(elastic.nodes.min) + " to " + std::to_string(elastic.nodes.max) + " node(s) of " +
        std::to_string(config.nproc_per_node) + " rank(s)");
    std::string reason = "start";
    for (;;) {
      int signo = 0;
      std::optional<RoundInfo> round;
      try {
        round = rendezvous->next_round(signals, signo);
        if (!round) {
          log("got " + signal_name(signo) + " while waiting for the rendezvous; closing it");
          close(*rendezvous, "node " + rendezvous->node_id() + " got " + signal_name(signo));
          return 128 + signo;
        }
        if (round->group_rank == 0) {
          config.master_addr = rendezvous->local_address();
          config.master_port = pick_free_port(config.master_addr);
          rendezvous->publish_master(*round, config.master_addr, config.master_port);
        } else {
          std::tie(config.master_addr, config.master_port) = rendezvous->wait_for_master(*round);
        }
      } catch (const RendezvousClosed& closed) {
        log("the rendezvous is closed (" + std::string(closed.what()) + "); this node stops");
        return 1;
      } catch (const std::exception& error) {
        log(std::string("rendezvous failed: ") + error.what());
        return 1;
      }
      config.nnodes = round->nnodes;
      config.node_rank = round->group_rank;
      config.restart_count = failures_;
      log_events(*rendezvous);
      log("round " + std::to_string(round->round) + " (" + reason + "): " + std::to_string(round->nnodes) +
          " node(s), world size " + std::to_string(config.world_size()) + "; this node is group rank " +
          std::to_string(round->group_rank) + " with " + rank_span(config) + "; rank 0 at " + config.master_addr + ":" +
          std::to_string(config.master_port));

      std::string fatal;
      AttemptMonitor monitor{config.monitor_interval_s, [&]() -> std::optional<std::string> {
                               try {
                                 auto change = rendezvous->check();
                                 log_events(*rendezvous);
                                 return change;
                               } catch (const std::exception& error) {
                                 fatal = error.what();
                                 return "the rendezvous failed (" + fatal + ")";
                               }
                             }};
      AttemptResult result = supervisor_.run_attempt(signals, monitor);
      switch (result.end) {
        case AttemptEnd::kSucceeded:
          log("every rank of this node exited 0; leaving the rendezvous");
          try {
            rendezvous->leave();
          } catch (const std::exception&) {
            // The job is done; a store gone with the node that hosted it changes nothing.
          }
          return 0;
        case AttemptEnd::kSignalled:
          close(*rendezvous, "node " + rendezvous->node_id() + " was stopped by a signal");
          return result.exit_status;
        case AttemptEnd::kNotStarted:
          close(*rendezvous, "node " + rendezvous->node_id() + " cannot start " + config.program);
          return result.exit_status;
        case AttemptEnd::kInterrupted:
          if (!fatal.empty()) {
            log("stopping: the rendezvous failed: " + fatal);
            return 1;
          }
          reason = "membership changed";
          continue;
        case AttemptEnd::kRankFailed:
          if (failures_ >= config.max_restarts) {
            log("giving up: a rank failed and " +
                (config.max_restarts == 0
                     ? std::string("--max_restarts is 0")
                     : "every one of the " + std::to_string(config.max_restarts) + " restart(s) is used") +
                "; closing the rendezvous");
            close(*rendezvous, "node " + rendezvous->node_id() + " gave up after a failed rank");
            return result.exit_status;
          }
          ++failures_;
          reason = "restart " + std::to_string(failures_) + " of " + std::to_string(config.max_restarts) +
                   " after a failed rank";
          continue;
      }
    }
  }

 private:
  static void close(RendezvousClient& rendezvous, const std::string& reason) {
    try {
      rendezvous.close(reason);
    } catch (const std::exception& error) {
      log(std::string("could not close the rendezvous: ") + error.what());
    }
  }

  static void log_events(RendezvousClient& rendezvous) {
    for (const auto& event : rendezvous.take_events()) log(event);
  }

  Supervisor supervisor_;
  int failures_ = 0;
};

}  // namespace

int run_elastic(LaunchConfig config) { return Agent(std::move(config)).run(); }

}  // namespace accel::cli
