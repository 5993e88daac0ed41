// The accel command. `accel launch` starts the processes of a training job on
// this machine and watches them (see docs/launch.md).
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/launch_environment.hpp"
#include "cli/launch_options.hpp"
#include "cli/supervisor.hpp"

namespace {

constexpr int kUsageError = 2;  // like most Unix commands

// Started with stdin, stdout or stderr closed, the launcher's own pipes could
// take those numbers and be confused with them; /dev/null holds the place.
void open_standard_streams() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
  }
}

// The "Usage: ..." line of the help of `app`, whose parents are called
// `parents` ("accel" for the launch command), to go with an error message.
std::string usage_line(const CLI::App& app, const std::string& parents) {
  std::istringstream help(app.help(parents));
  for (std::string line; std::getline(help, line);) {
    if (line.rfind("Usage:", 0) == 0) return line;
  }
  return {};
}

int launch(accel::cli::LaunchConfig config) {
  accel::cli::resolve_defaults(config, std::cerr);
  if (config.dry_run) {
    accel::cli::print_launch_plan(config, std::cout);
    return 0;
  }
  return accel::cli::Supervisor(std::move(config)).run();
}

}  // namespace

int main(int argc, char** argv) {
  open_standard_streams();
  CLI::App app{"accel: run programs written against libaccel on one or many processes"};
  app.name("accel");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("accel ") + ACCEL_CLI_VERSION);

  accel::cli::LaunchConfig config;
  CLI::App* launch_command = app.add_subcommand("launch", "Start PROGRAM as every rank of this machine");
  accel::cli::add_launch_options(*launch_command, config);

  accel::cli::CommandLine command_line = accel::cli::split_command_line(argc, argv);
  try {
    std::vector<std::string> reversed(command_line.options.rbegin(), command_line.options.rend());
    app.parse(reversed);  // CLI11 takes a vector last argument first
    accel::cli::take_program(*launch_command, command_line, config);
    accel::cli::validate(config);
  } catch (const CLI::ParseError& error) {
    // --help and --version arrive as "errors" that succeed.
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);
    bool in_launch = launch_command->parsed();
    std::string command = in_launch ? "accel launch" : "accel";
    std::cerr << command << ": " << error.what() << "\n"
              << (in_launch ? usage_line(*launch_command, "accel") : usage_line(app, "")) << "\n"
              << "Run '" << command << " --help' for more information.\n";
    return kUsageError;
  }

  try {
    return launch(std::move(config));
  } catch (const std::exception& error) {
    std::cerr << "accel launch: " << error.what() << "\n";
    return 1;
  }
}
