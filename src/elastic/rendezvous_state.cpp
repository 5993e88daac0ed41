#include "elastic/rendezvous_state.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/json.hpp"

namespace accel::detail::elastic {

namespace {

void mark_complete(RendezvousState& state) {
  state.complete = true;
  state.last_call_deadline_ms = 0;
  int rank = 0;
  for (auto& [node, node_rank] : state.participants) node_rank = rank++;
}

}  // namespace

std::string RendezvousState::to_json() const {
  nlohmann::json participant_ranks = nlohmann::json::object();
  for (const auto& [node, rank] : participants) participant_ranks[node] = rank;
  return nlohmann::json{{"round", round},
                        {"complete", complete},
                        {"closed", closed},
                        {"closed_reason", closed_reason},
                        {"participants", participant_ranks},
                        {"wait_list", wait_list},
                        {"finished", finished},
                        {"last_call_deadline_ms", last_call_deadline_ms}}
      .dump();
}

RendezvousState RendezvousState::from_json(const std::string& text) {
  nlohmann::json value = parse_json(text, "the rendezvous state in the store", ErrorCode::InvalidArgument, 4);
  RendezvousState state;
  try {
    state.round = value.at("round").get<int64_t>();
    state.complete = value.at("complete").get<bool>();
    state.closed = value.at("closed").get<bool>();
    state.closed_reason = value.at("closed_reason").get<std::string>();
    for (const auto& [node, rank] : value.at("participants").items()) state.participants[node] = rank.get<int>();
    state.wait_list = value.at("wait_list").get<std::set<std::string>>();
    state.finished = value.at("finished").get<std::set<std::string>>();
    state.last_call_deadline_ms = value.at("last_call_deadline_ms").get<int64_t>();
  } catch (const nlohmann::json::exception& error) {
    // Another program wrote this key, or a different libaccel version.
    throw std::runtime_error("the rendezvous state in the store is not libaccel's (" + std::string(error.what()) +
                             "): " + describe_json(value));
  }
  return state;
}

bool RendezvousState::operator==(const RendezvousState& other) const {
  return round == other.round && complete == other.complete && closed == other.closed &&
         closed_reason == other.closed_reason && participants == other.participants && wait_list == other.wait_list &&
         finished == other.finished && last_call_deadline_ms == other.last_call_deadline_ms;
}

JoinStep join_step(RendezvousState& state, const std::string& node, const RendezvousLimits& limits, int64_t now_ms) {
  if (state.closed) return JoinStep::kClosed;
  const bool participant = state.participants.count(node) != 0;
  const int joined = static_cast<int>(state.participants.size());
  if (state.complete) {
    if (participant) return JoinStep::kDone;
    // Too late for this round: wait for the next one, when there is room for us.
    if (joined < limits.max_nodes && state.wait_list.insert(node).second) return JoinStep::kChanged;
    return JoinStep::kWait;
  }
  if (participant) {
    if (joined >= limits.min_nodes && state.last_call_deadline_ms != 0 && now_ms >= state.last_call_deadline_ms) {
      mark_complete(state);
      return JoinStep::kChanged;
    }
    return JoinStep::kWait;
  }
  if (joined >= limits.max_nodes) return JoinStep::kWait;  // full; a participant completes it
  state.participants[node] = -1;
  state.wait_list.erase(node);
  if (joined + 1 == limits.max_nodes) {
    mark_complete(state);
  } else if (joined + 1 >= limits.min_nodes && state.last_call_deadline_ms == 0) {
    state.last_call_deadline_ms = now_ms + limits.last_call_ms;
  }
  return JoinStep::kChanged;
}

bool remove_node(RendezvousState& state, const std::string& node, const RendezvousLimits& limits, bool finished) {
  bool was_waiting = state.wait_list.erase(node) != 0;
  if (state.participants.erase(node) == 0) return was_waiting;
  if (state.complete) {
    if (finished) state.finished.insert(node);
    if (state.participants.empty()) {
      // Everybody has left the round: the next one opens.
      state.complete = false;
      state.finished.clear();
      ++state.round;
    }
  } else if (static_cast<int>(state.participants.size()) < limits.min_nodes) {
    state.last_call_deadline_ms = 0;  // the last call restarts once enough nodes are back
  }
  return true;
}

void close(RendezvousState& state, const std::string& reason) {
  if (state.closed) return;
  state.closed = true;
  state.closed_reason = reason;
}

}  // namespace accel::detail::elastic
