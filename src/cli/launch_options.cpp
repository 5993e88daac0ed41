#include "cli/launch_options.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace accel::cli {

namespace {

// CLI11 2.1's usage line cannot show what prefix_command() leaves over; this
// adds it: "Usage: accel launch [OPTIONS] PROGRAM [ARGS...]".
class ProgramUsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string usage = CLI::Formatter::make_usage(app, std::move(name));
    usage.insert(usage.find_last_not_of('\n') + 1, " PROGRAM [ARGS...]");
    return usage;
  }
};

// CLI11's PositiveNumber and NonNegativeNumber quote the largest double in
// their error message; this says "must be at least 1, got 0".
CLI::Validator at_least(double minimum, const std::string& name) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        double value = 0;
        // A value that is not a number is left to the conversion, which says so.
        if (!CLI::detail::lexical_cast(text, value) || value >= minimum) return {};
        std::ostringstream message;
        message << "must be at least " << minimum << ", got " << text;
        return message.str();
      },
      name);
}

}  // namespace

void add_launch_options(CLI::App& app, LaunchConfig& config) {
  // Both spellings, as torchrun accepts: scripts written for it work unchanged.
  app.add_option("--nproc_per_node,--nproc-per-node", config.nproc_per_node, "Processes to start on this machine")
      ->check(at_least(1, "POSITIVE"))
      ->capture_default_str();
  app.add_option("--nnodes", config.nnodes, "Machines taking part")
      ->check(at_least(1, "POSITIVE"))
      ->capture_default_str();
  app.add_option("--node_rank,--node-rank", config.node_rank, "Rank of this machine; node 0 hosts the rendezvous")
      ->check(at_least(0, "NONNEGATIVE"))
      ->capture_default_str();
  app.add_option("--master_addr,--master-addr", config.master_addr, "Address of the machine with node rank 0")
      ->capture_default_str();
  app.add_option("--master_port,--master-port", config.master_port,
                 "Rendezvous port; 0 picks a free one (one machine only)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--grace_period", config.grace_period_s,
                 "Seconds a rank gets between SIGTERM and SIGKILL when the ranks are stopped")
      ->check(at_least(0, "NONNEGATIVE"))
      ->capture_default_str();
  app.add_flag("--dry_run", config.dry_run, "Print the resolved settings and each rank's environment; start nothing");
  // Parsing stops at PROGRAM: it and everything after it, dashes included,
  // belong to the program. take_program() picks them up.
  app.prefix_command();
  app.formatter(std::make_shared<ProgramUsageFormatter>());
  app.footer("PROGRAM is looked up on PATH; it and ARGS are passed to every rank unchanged.");
}

CommandLine split_command_line(int argc, const char* const* argv) {
  CommandLine split;
  for (int i = 1; i < argc; ++i) {
    if (!split.after_separator && std::string_view(argv[i]) == "--") {
      split.after_separator.emplace();
    } else {
      (split.after_separator ? *split.after_separator : split.options).emplace_back(argv[i]);
    }
  }
  return split;
}

void take_program(const CLI::App& app, const CommandLine& command_line, LaunchConfig& config) {
  std::vector<std::string> rest = app.remaining();
  // prefix_command() leaves an unknown flag here as if it were PROGRAM.
  if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') throw CLI::ExtrasError({rest.front()});
  if (command_line.after_separator) {
    // With PROGRAM before it, the "--" is one of the program's arguments.
    if (!rest.empty()) rest.emplace_back("--");
    rest.insert(rest.end(), command_line.after_separator->begin(), command_line.after_separator->end());
  }
  if (rest.empty()) throw CLI::RequiredError("PROGRAM (the program to launch)");
  config.program = rest.front();
  config.program_args.assign(rest.begin() + 1, rest.end());
}

void validate(const LaunchConfig& config) {
  if (config.node_rank >= config.nnodes) {
    throw CLI::ValidationError("--node_rank", std::to_string(config.node_rank) + " must be below --nnodes " +
                                                  std::to_string(config.nnodes));
  }
  if (config.master_port == 0 && config.nnodes > 1) {
    // Every machine would pick a different port; the ranks would never meet.
    throw CLI::ValidationError("--master_port", "0 (pick a free port) works on one machine only; give a port for "
                                                "--nnodes " + std::to_string(config.nnodes));
  }
}

}  // namespace accel::cli
