// The shared state of an elastic job's rendezvous, and the moves an agent makes
// on it. These are torchrun's rules (torch.distributed.elastic's dynamic
// rendezvous), so a libaccel job behaves as a torchrun job would:
//
// - A round gathers nodes until max_nodes have joined, or until min_nodes have
//   joined and the last call (last_call_timeout after the min_nodes-th node)
//   has passed. Then it is complete, and its nodes get their group ranks.
// - A node arriving at a complete round with room left waits in the wait list;
//   the round's nodes see it at their next monitor check, stop their ranks and
//   leave the round. Once the last has left, the next round opens and everybody
//   joins it: this is how a job grows, and how a failed node comes back.
// - A node that stops sending heartbeats is removed as if it had left
//   (store_rendezvous.hpp): this is how a job shrinks.
// - A closed rendezvous takes nobody any more: the job is over.
//
// Pure data and rules, with no store and no clock of its own: the caller passes
// the time, so the rules are tested without waiting.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace accel::detail::elastic {

struct RendezvousLimits {
  int min_nodes = 1;
  int max_nodes = 1;
  int64_t last_call_ms = 30000;  // torchrun's default last_call_timeout: 30 s
};

struct RendezvousState {
  int64_t round = 0;
  bool complete = false;
  bool closed = false;
  std::string closed_reason;
  // Node id -> group rank; -1 until the round completes. Ranks follow the ids'
  // order, so they do not depend on who arrived first.
  std::map<std::string, int> participants;
  std::set<std::string> wait_list;
  // Nodes of the complete round whose ranks all succeeded and that left: the
  // others finish too, rather than taking it for a lost node.
  std::set<std::string> finished;
  // Wall-clock time (ms since the epoch) the last call ends; 0 when none runs.
  // Wall clock, because it is compared on every node (torchrun does the same).
  int64_t last_call_deadline_ms = 0;

  // The form kept in the store: JSON.
  std::string to_json() const;
  // Throws std::runtime_error naming what is malformed.
  static RendezvousState from_json(const std::string& text);
  bool operator==(const RendezvousState& other) const;
};

enum class JoinStep {
  kChanged,  // the state was changed: store it, then take the next step
  kWait,     // nothing to do until somebody else changes the state (or time passes)
  kDone,     // this node is in the complete round: its rank is participants[node]
  kClosed,   // the rendezvous is closed
};

// The next move of `node` joining the next round at wall-clock time `now_ms`.
JoinStep join_step(RendezvousState& state, const std::string& node, const RendezvousLimits& limits, int64_t now_ms);

// Takes `node` out of the state (participants and wait list): an agent leaving
// (`finished` when its ranks succeeded), or one whose heartbeats stopped. A
// complete round that nobody is left in gives way to the next round. False when
// the node was not in the state.
bool remove_node(RendezvousState& state, const std::string& node, const RendezvousLimits& limits,
                 bool finished = false);

// Ends the rendezvous for every node; the first reason stays.
void close(RendezvousState& state, const std::string& reason);

}  // namespace accel::detail::elastic
