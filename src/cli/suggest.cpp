#include "cli/suggest.hpp"

namespace accel::cli {

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
