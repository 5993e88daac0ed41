#include "cli/rendezvous_watch.hpp"

#include <algorithm>
#include <charconv>

namespace accel::cli {

void RendezvousWatch::report(int rank, std::string_view message) {
  size_t space = message.find(' ');
  if (space == std::string_view::npos) return;
  std::string_view verb = message.substr(0, space), number = message.substr(space + 1);
  int round = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), round);
  if (error != std::errc() || end != number.data() + number.size() || round < 1) return;
  State& state = ranks_[rank];
  if (verb == "join") {
    state.joined = std::max(state.joined, round);
  } else if (verb == "done") {
    state.done = std::max(state.done, round);
    completed_ = std::max(completed_, round);
  }
}

void RendezvousWatch::exited(int rank) { ranks_[rank].exited = true; }

std::optional<RendezvousWatch::Stranded> RendezvousWatch::stranded() const {
  Stranded result;
  int round = 0;  // the earliest rendezvous a running rank waits in
  for (const auto& [rank, state] : ranks_) {
    if (!state.exited && state.joined > completed_) {
      result.waiting.push_back(rank);
      round = round == 0 ? state.joined : std::min(round, state.joined);
    }
  }
  if (result.waiting.empty()) return std::nullopt;
  for (const auto& [rank, state] : ranks_) {
    if (state.exited && state.done < round) result.gone.push_back(rank);
  }
  if (result.gone.empty()) return std::nullopt;
  return result;
}

}  // namespace accel::cli
