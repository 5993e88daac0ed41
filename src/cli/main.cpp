// The accel command: `accel launch` starts the processes of a training job and
// watches them (docs/launch.md); `accel config`, `accel env` and `accel test`
// write, show and check the configuration (docs/config.md).
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/config_command.hpp"
#include "cli/config_file.hpp"
#include "cli/elastic_agent.hpp"
#include "cli/launch_environment.hpp"
#include "cli/launch_options.hpp"
#include "cli/launch_settings.hpp"
#include "cli/suggest.hpp"
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

// "Did you mean '--nproc_per_node'?" when the argument the parse stumbled on
// looks like a typo of one of the command's flags or subcommands.
std::optional<std::string> typo_hint(const CLI::App& command, const CLI::ParseError& error) {
  std::vector<std::string> unexpected = command.remaining();
  const std::string what = error.what();
  const std::string marker = "not expected: ";
  if (unexpected.empty() && what.find(marker) != std::string::npos) {
    unexpected.push_back(what.substr(what.find(marker) + marker.size()));
  }
  for (const auto& given : unexpected) {
    if (auto suggestion = accel::cli::suggest_for(command, given)) return "Did you mean '" + *suggestion + "'?";
  }
  return std::nullopt;
}

// The innermost command the parse reached, and its full name ("accel config default").
std::pair<const CLI::App*, std::string> innermost(const CLI::App& app) {
  const CLI::App* current = &app;
  std::string name = "accel";
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : current->get_subcommands()) {
      if (sub->parsed()) {
        name += " " + sub->get_name();
        current = sub;
        deeper = true;
        break;
      }
    }
  }
  return {current, name};
}

int launch(accel::cli::LaunchConfig config) {
  accel::cli::resolve_defaults(config, std::cerr);
  if (config.dry_run) {
    accel::cli::print_launch_plan(config, std::cout);
    return 0;
  }
  if (config.elastic.enabled) return accel::cli::run_elastic(std::move(config));
  return accel::cli::Supervisor(std::move(config)).run();
}

std::string config_target(const std::string& given) {
  if (!given.empty()) return given;
  auto path = accel::cli::default_config_path(accel::cli::process_environment());
  if (!path) throw accel::cli::ConfigFileError("neither HF_HOME, XDG_CACHE_HOME nor HOME is set; give --config_file");
  return *path;
}

}  // namespace

int main(int argc, char** argv) {
  open_standard_streams();
  CLI::App app{"accel: run programs written against libaccel on one or many processes"};
  app.name("accel");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("accel ") + ACCEL_CLI_VERSION);

  accel::cli::LaunchFlags flags;
  CLI::App* launch_command = app.add_subcommand("launch", "Start PROGRAM as every rank of this machine");
  accel::cli::add_launch_options(*launch_command, flags);

  std::string config_file, mixed_precision = "no";
  CLI::App* config_command =
      app.add_subcommand("config", "Write an Accelerate config file by answering questions on the terminal");
  config_command->add_option("--config_file", config_file,
                             "Where to write (default: $HF_HOME/accelerate/default_config.yaml)");
  CLI::App* default_command =
      config_command->add_subcommand("default", "Write a config file with default settings, asking nothing");
  default_command->add_option("--config_file", config_file, "Where to write (default: as for accel config)");
  default_command->add_option("--mixed_precision", mixed_precision, "no, fp16 or bf16")
      ->check(CLI::IsMember({"no", "fp16", "bf16"}))
      ->capture_default_str();

  CLI::App* env_command = app.add_subcommand("env", "Print versions, devices and the active config for a bug report");
  env_command->add_option("--config_file", config_file, "Config file to show (default: the active one)");

  accel::cli::LaunchFlags test_flags;
  CLI::App* test_command =
      app.add_subcommand("test", "Run a distributed sanity check under the active config and say whether it passed");
  test_command->add_option("--config_file", test_flags.config_file, "Config file to test (default: the active one)");

  // Accelerate's `accelerate estimate-memory`; the arithmetic needs LibTorch, so accel-selftest does it.
  std::string estimate_path, estimate_optimizer = "adamw";
  int estimate_world = 1, estimate_machines = 1, estimate_tp = 1;
  int64_t estimate_min_num_params = 0;
  bool estimate_cpu_offload = false;
  CLI::App* estimate_command = app.add_subcommand(
      "estimate-memory",
      "Bytes per process for a model's parameters, gradients and optimizer state per sharding strategy");
  estimate_command->add_option("model", estimate_path, "model.json, a TorchScript file or a .safetensors checkpoint")
      ->required();
  estimate_command->add_option("--world_size", estimate_world, "Number of processes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  estimate_command->add_option("--optimizer", estimate_optimizer, "adamw (2 state elements per parameter) or sgd (1)")
      ->check(CLI::IsMember({"adamw", "sgd"}))
      ->capture_default_str();
  estimate_command
      ->add_option("--min_num_params", estimate_min_num_params,
                   "FULL_SHARD wrap units: 0 one per layer, else layers grouped to this size")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  estimate_command
      ->add_option("--num_machines", estimate_machines,
                   "Machines the processes are spread over: adds HYBRID_SHARD (sharded within a machine)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  estimate_command
      ->add_option("--tp_size", estimate_tp,
                   "Tensor-parallel size (ParallelismConfig's tp_size): adds every strategy with a JSON spec's layers "
                   "split over groups of this many processes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  estimate_command->add_flag("--cpu_offload", estimate_cpu_offload,
                             "Master weights, gradients and optimizer state of the shards on the CPU: what stays on "
                             "the device and what moves to the host");

  // Accelerate's `accelerate merge-weights`: a FULL_SHARD save_state's shards into model.safetensors.
  std::string merge_checkpoint, merge_output;
  bool merge_unsafe = false;
  CLI::App* merge_command =
      app.add_subcommand("merge-weights",
                         "Merge a FULL_SHARD save_state's per-process parameter shards, or a distributed checkpoint "
                         "(FSDP SHARDED_STATE_DICT), into one model.safetensors");
  merge_command->add_option("checkpoint_directory", merge_checkpoint, "The save_state folder (model_rank*.safetensors)")
      ->required();
  merge_command->add_option("output_path", merge_output, "Folder to write model.safetensors into")->required();
  merge_command->add_flag("--unsafe_serialization", merge_unsafe,
                          "Write pytorch_model.bin (torch.save's format) instead of model.safetensors");

  accel::cli::CommandLine command_line = accel::cli::split_command_line(argc, argv);
  accel::cli::LaunchConfig config;
  std::vector<std::string> warnings;
  try {
    std::vector<std::string> reversed(command_line.options.rbegin(), command_line.options.rend());
    app.parse(reversed);  // CLI11 takes a vector last argument first
    if (launch_command->parsed()) {
      accel::cli::take_program(*launch_command, command_line, flags);
      config = accel::cli::resolve_settings(flags, accel::cli::process_environment(), warnings);
      accel::cli::validate(config);
    } else if (command_line.after_separator) {
      throw CLI::ExtrasError({"--"});
    }
  } catch (const accel::cli::ConfigFileError& error) {
    std::cerr << "accel launch: " << error.what() << "\n";
    return kUsageError;
  } catch (const CLI::ParseError& error) {
    // --help and --version arrive as "errors" that succeed.
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);
    auto [command, name] = innermost(app);
    std::string parents = name.substr(0, name.rfind(' ') == std::string::npos ? 0 : name.rfind(' '));
    std::cerr << name << ": " << error.what() << "\n";
    // A refused value or flag is named by its message; a typo hint is for what was not recognised.
    if (dynamic_cast<const CLI::ValidationError*>(&error) == nullptr) {
      if (auto hint = typo_hint(*command, error)) std::cerr << *hint << "\n";
    }
    std::cerr << usage_line(*command, parents) << "\n"
              << "Run '" << name << " --help' for more information.\n";
    return kUsageError;
  }

  const char* who = "accel";
  try {
    if (launch_command->parsed()) {
      who = "accel launch";
      for (const auto& warning : warnings) std::cerr << "accel launch: warning: " << warning << "\n";
      return launch(std::move(config));
    }
    if (default_command->parsed()) {
      who = "accel config default";
      const std::optional<int> gpus = accel::cli::probe_cuda_devices();
      if (!gpus)
        std::cerr << "accel config default: warning: cannot ask LibTorch for GPUs (accel-selftest missing or "
                     "failed); writing use_cpu: false\n";
      return accel::cli::write_default_config(config_target(config_file), mixed_precision, gpus, std::cout) ? 0 : 1;
    }
    if (config_command->parsed()) {
      who = "accel config";
      std::string path = config_target(config_file);
      accel::cli::ConfigValues values = accel::cli::ask_config_questions(std::cin, std::cout);
      accel::cli::write_config_file(path, values);
      std::cout << "accel configuration saved at " << path << "\n";
      return 0;
    }
    if (estimate_command->parsed()) {
      who = "accel estimate-memory";
      const std::string selftest = accel::cli::find_selftest();
      if (selftest.empty()) throw std::runtime_error("accel-selftest (which does the arithmetic) is not installed");
      std::vector<std::string> args = {selftest,
                                       "--estimate-memory",
                                       estimate_path,
                                       std::to_string(estimate_world),
                                       estimate_optimizer,
                                       std::to_string(estimate_min_num_params),
                                       std::to_string(estimate_machines),
                                       std::to_string(estimate_tp)};
      if (estimate_cpu_offload) args.push_back("--cpu_offload");
      std::vector<char*> argv_out;
      for (const auto& a : args) argv_out.push_back(const_cast<char*>(a.c_str()));
      argv_out.push_back(nullptr);
      ::execv(selftest.c_str(), argv_out.data());
      throw std::runtime_error("cannot run " + selftest + ": " + std::strerror(errno));
    }
    if (merge_command->parsed()) {
      who = "accel merge-weights";
      const std::string selftest = accel::cli::find_selftest();
      if (selftest.empty()) throw std::runtime_error("accel-selftest (which merges the shards) is not installed");
      std::vector<std::string> args = {selftest, "--merge-weights", merge_checkpoint, merge_output};
      if (merge_unsafe) args.push_back("--unsafe_serialization");
      std::vector<char*> argv_out;
      for (const auto& a : args) argv_out.push_back(const_cast<char*>(a.c_str()));
      argv_out.push_back(nullptr);
      ::execv(selftest.c_str(), argv_out.data());
      throw std::runtime_error("cannot run " + selftest + ": " + std::strerror(errno));
    }
    if (env_command->parsed()) {
      who = "accel env";
      return accel::cli::print_env_report(config_file, accel::cli::process_environment(), std::cout);
    }
    who = "accel test";
    return accel::cli::run_selftest(test_flags, std::cout, std::cerr);
  } catch (const std::exception& error) {
    std::cerr << who << ": " << error.what() << "\n";
    return 1;
  }
}
