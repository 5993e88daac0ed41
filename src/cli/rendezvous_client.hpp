// The elastic agent's side of the rendezvous: a child process
// (`accel-selftest --rendezvous`, rendezvous_helper.cpp) holds the c10d store
// connection and the heartbeats, because the accel command has no LibTorch;
// this class speaks its line protocol.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli/elastic_settings.hpp"
#include "cli/launcher_signals.hpp"

namespace accel::cli {

// The rendezvous failed (store unreachable, join timeout, helper gone): the message says why.
class RendezvousFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Another agent closed the rendezvous: the job is over.
class RendezvousClosed : public RendezvousFailure {
 public:
  using RendezvousFailure::RendezvousFailure;
};

struct RoundInfo {
  int64_t round = 0;
  int group_rank = 0;
  int nnodes = 0;
  std::vector<std::string> nodes;  // node ids by group rank
};

class RendezvousClient {
 public:
  // Starts `helper` (accel-selftest) and waits for it to connect to the store.
  // Throws RendezvousFailure with the helper's reason.
  RendezvousClient(const ElasticSettings& settings, const std::string& helper);
  ~RendezvousClient();
  RendezvousClient(const RendezvousClient&) = delete;
  RendezvousClient& operator=(const RendezvousClient&) = delete;

  const std::string& node_id() const { return node_id_; }
  const std::string& local_address() const { return local_address_; }
  bool hosts_store() const { return hosts_store_; }

  // Joins the next round. A launcher signal while waiting stops the wait: nullopt,
  // with the signal in `signo`. Throws RendezvousClosed or RendezvousFailure.
  std::optional<RoundInfo> next_round(LauncherSignals& signals, int& signo);
  void publish_master(const RoundInfo& round, const std::string& addr, int port);
  std::pair<std::string, int> wait_for_master(const RoundInfo& round);
  // A reason to re-rendezvous, or nullopt.
  std::optional<std::string> check();
  void leave();
  void close(const std::string& reason);
  // Lines about other nodes since the last call (a node removed for missed heartbeats).
  std::vector<std::string> take_events() { return std::exchange(events_, {}); }

 private:
  void send(const std::string& line);
  // Reads until the answer (events are kept); `signals`, when given, also wakes
  // the wait and the signal is returned instead.
  std::string answer(LauncherSignals* signals = nullptr, int* signo = nullptr);
  std::string read_line(LauncherSignals* signals, int* signo);
  std::string expect(const std::string& prefix, const std::string& reply);

  pid_t pid_ = -1;
  int to_helper_ = -1;
  int from_helper_ = -1;
  std::string buffer_;
  std::string node_id_, local_address_;
  bool hosts_store_ = false;
  std::vector<std::string> events_;
};

}  // namespace accel::cli
