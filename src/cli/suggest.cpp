#include "cli/suggest.hpp"

#include <algorithm>

namespace accel::cli {
namespace {

// Optimal string alignment distance (Levenshtein plus adjacent swaps): the
// usual measure for typos.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> closest_name(const std::string& given, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const auto& candidate : candidates) {
    const size_t distance = edit_distance(given, candidate);
    const size_t allowed = std::max<size_t>(1, std::max(given.size(), candidate.size()) / 3);
    if (distance == 0 || distance > allowed) continue;
    if (!best || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::optional<std::string> suggest_for(const CLI::App& command, const std::string& given) {
  // "--flag=value": only the flag can be mistyped.
  const std::string name = given.substr(0, given.find('='));
  std::vector<std::string> candidates;
  for (const CLI::Option* option : command.get_options()) {
    for (const auto& long_name : option->get_lnames()) candidates.push_back("--" + long_name);
    for (const auto& short_name : option->get_snames()) candidates.push_back("-" + short_name);
  }
  for (const CLI::App* sub : command.get_subcommands([](const CLI::App*) { return true; })) {
    candidates.push_back(sub->get_name());
  }
  return closest_name(name, candidates);
}

}  // namespace accel::cli
