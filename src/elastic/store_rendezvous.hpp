// An elastic job's rendezvous on a c10d TCPStore: torchrun's `c10d` rendezvous
// backend, with LibTorch's own store as the only transport. Every node's agent
// (the `accel-agent` behind `accel launch --rdzv_backend c10d`) holds one.
//
// The store lives at the rendezvous endpoint. The agent on that machine hosts
// it (the first one there to bind the port); the others connect. As with
// torchrun, the job cannot outlive the node hosting the store.
//
// Keys, under "accel/rdzv/<run id>/":
//   state            RendezvousState as JSON, changed only by compare-and-set
//   heartbeat/<node> a counter each agent bumps every keep_alive_interval
//   round/<r>/master "addr:port" of rank 0's store for round r's ranks
//
// Heartbeats are compared by each observer against its own clock (a counter
// that has not moved for keep_alive_interval * keep_alive_max_attempt), so clock
// skew between machines cannot remove a live node. Only the last call's deadline
// is wall-clock time, as in torchrun.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "elastic/rendezvous_state.hpp"
#include "state/c10d_adapter.hpp"

namespace accel::detail::elastic {

struct RendezvousOptions {
  std::string endpoint_host;  // where the store is (or will be)
  int endpoint_port = 29400;
  std::string run_id = "none";
  RendezvousLimits limits;
  std::chrono::milliseconds join_timeout{600000};       // torchrun's default: 600 s
  std::chrono::milliseconds keep_alive_interval{5000};  // torchrun's: 5 s
  int keep_alive_max_attempt = 3;                       // torchrun's: 3 missed beats
  std::chrono::milliseconds store_timeout{60000};       // connecting to the store, and reading round keys
  // Host the store here: true, false, or decided from the endpoint (nullopt;
  // torchrun's rdzv_conf is_host).
  std::optional<bool> is_host;
};

// One completed round, as this node sees it.
struct Round {
  int64_t round = 0;
  int group_rank = 0;
  int nnodes = 0;
  std::vector<std::string> nodes;  // by group rank
};

// What went wrong, for the agent to report and end on.
class RendezvousError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The rendezvous was closed by another agent (it gave up, or was stopped).
class RendezvousClosed : public RendezvousError {
 public:
  using RendezvousError::RendezvousError;
};

class StoreRendezvous {
 public:
  // Connects to the store, hosting it when this machine is the endpoint, and
  // starts heartbeats. Throws RendezvousError naming the endpoint when it does
  // not resolve or no store answers within store_timeout.
  explicit StoreRendezvous(RendezvousOptions options);
  ~StoreRendezvous();
  StoreRendezvous(const StoreRendezvous&) = delete;
  StoreRendezvous& operator=(const StoreRendezvous&) = delete;

  // This agent's id: "<address>_<pid>_<n>", unique among the agents of a run.
  const std::string& node_id() const { return node_; }
  // Whether this agent hosts the store (the job ends with it).
  bool hosts_store() const { return server_.defined(); }
  // The address of this machine that the endpoint sees: what rank 0 publishes.
  const std::string& local_address() const { return local_address_; }

  // Leaves the current round, if any, and joins the next; returns once that
  // round is complete with this node in it. `stop` is asked between polls: true
  // ends the wait with RendezvousError. Throws RendezvousClosed when the
  // rendezvous is closed, RendezvousError after join_timeout naming the nodes
  // that had arrived.
  Round next_round(const std::function<bool()>& stop);

  // Rank 0 of `round` publishes where its ranks' store listens; the others wait
  // for it (up to store_timeout).
  void publish_master(const Round& round, const std::string& addr, int port);
  std::pair<std::string, int> wait_for_master(const Round& round);

  // The reason this node's ranks must stop and re-rendezvous, or nullopt while
  // the round holds: the rendezvous was closed, a new round began, or nodes wait
  // to join. Also removes the nodes whose heartbeats have stopped.
  std::optional<std::string> membership_change();

  // Leaving for good once this node's ranks succeeded: out of the participants
  // (marked finished, so the others do not take it for lost), heartbeats stopped. The agent
  // hosting the store then waits (up to 5 minutes) until the other participants
  // have left or gone silent: their ranks may still be finishing.
  void leave();
  // Ends the rendezvous for every node (this agent gave up, or was stopped).
  void close(const std::string& reason);

  // Messages about other nodes (a node removed for missed heartbeats), taken
  // by the agent for its log.
  std::vector<std::string> take_events();

 private:
  RendezvousState read_state();
  // Applies `change` with compare-and-set until it holds; returns the state
  // stored (unchanged when `change` returned false).
  RendezvousState update(const std::function<bool(RendezvousState&)>& change);
  void remove_silent_nodes(const RendezvousState& state);
  void beat();

  RendezvousOptions options_;
  std::string local_address_;
  std::string node_;
  c10d_adapter::StorePtr server_;         // set when this agent hosts the store
  c10d_adapter::StorePtr store_;          // this thread's connection, keys under the run's prefix
  std::vector<std::string> round_nodes_;  // the nodes of the round this node completed last
  std::optional<int64_t> joined_round_;   // the round this node completed last
  // Heartbeats of the others, as this agent last saw them.
  struct Seen {
    int64_t count = -1;
    std::chrono::steady_clock::time_point changed;
  };
  std::map<std::string, Seen> seen_;
  std::vector<std::string> events_;
  // The heartbeat thread, with its own connection.
  std::atomic<bool> beating_{true};
  std::mutex beat_mutex_;
  std::condition_variable beat_wakeup_;
  std::thread beat_thread_;
};

}  // namespace accel::detail::elastic
