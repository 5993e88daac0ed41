#include "cli/output_routing.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace accel::cli {

namespace {

// A whole non-negative decimal integer no larger than `maximum`, else nullopt.
std::optional<long> whole_number(const std::string& text, long maximum) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  errno = 0;
  long value = std::strtol(text.c_str(), nullptr, 10);
  if (errno != 0 || value > maximum) return std::nullopt;
  return value;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at = text.find(separator); at != std::string::npos; at = text.find(separator, start)) {
    parts.push_back(text.substr(start, at - start));
    start = at + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

constexpr long kMaxLocalRank = 1 << 20;

}  // namespace

StreamChoice StreamChoice::parse(const std::string& text) {
  const std::string expected =
      "\"" + text + "\" is not 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or LOCAL_RANK:0-3,... such as 0:1,1:2";
  StreamChoice choice;
  if (auto every_rank = whole_number(text, kBothStreams)) {
    choice.every_rank_ = static_cast<unsigned>(*every_rank);
    return choice;
  }
  for (const std::string& entry : split(text, ',')) {
    auto colon = entry.find(':');
    if (colon == std::string::npos) throw std::invalid_argument(expected);
    auto local_rank = whole_number(entry.substr(0, colon), kMaxLocalRank);
    auto streams = whole_number(entry.substr(colon + 1), kBothStreams);
    if (!local_rank || !streams) throw std::invalid_argument(expected);
    if (!choice.per_rank_.emplace(static_cast<int>(*local_rank), static_cast<unsigned>(*streams)).second) {
      throw std::invalid_argument("\"" + text + "\" names local rank " + std::to_string(*local_rank) + " twice");
    }
  }
  return choice;
}

unsigned StreamChoice::streams_of(int local_rank) const {
  auto found = per_rank_.find(local_rank);
  return found == per_rank_.end() ? every_rank_ : found->second;
}

std::vector<int> StreamChoice::named_local_ranks() const {
  std::vector<int> ranks;
  for (const auto& entry : per_rank_) ranks.push_back(entry.first);
  return ranks;
}

std::vector<int> parse_local_ranks(const std::string& text) {
  std::vector<int> ranks;
  for (const std::string& entry : split(text, ',')) {
    auto local_rank = whole_number(entry, kMaxLocalRank);
    if (!local_rank) throw std::invalid_argument("\"" + text + "\" is not a list of local ranks such as 0,2");
    ranks.push_back(static_cast<int>(*local_rank));
  }
  return ranks;
}

OutputRouting::Route OutputRouting::route(int local_rank, StdStream stream) const {
  Route route;
  if (!redirects && !tee) {
    route.to_file = !log_dir.empty();
    route.to_terminal = log_dir.empty();
  } else {
    const bool teed = tee && (tee->streams_of(local_rank) & stream) != 0;
    const bool redirected = redirects && (redirects->streams_of(local_rank) & stream) != 0;
    route.to_file = teed || redirected;
    route.to_terminal = teed || !redirected;
  }
  if (local_ranks_filter &&
      std::find(local_ranks_filter->begin(), local_ranks_filter->end(), local_rank) == local_ranks_filter->end()) {
    route.to_terminal = false;
  }
  return route;
}

bool OutputRouting::writes_files(int local_ranks) const {
  for (int local_rank = 0; local_rank < local_ranks; ++local_rank) {
    if (route(local_rank, kStdout).to_file || route(local_rank, kStderr).to_file) return true;
  }
  return false;
}

}  // namespace accel::cli
