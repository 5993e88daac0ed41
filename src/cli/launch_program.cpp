#include "cli/launch_program.hpp"

#include <CLI/CLI.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

namespace accel::cli {

namespace {

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `name` as execvp would find it: a path when it has a slash, else the first
// executable of that name in PATH's folders (an empty entry is the current folder).
std::optional<std::string> find_executable(const std::string& name, const EnvLookup& env) {
  if (name.find('/') != std::string::npos) {
    return is_executable_file(name) ? std::optional<std::string>(name) : std::nullopt;
  }
  const std::string path = env("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    if (colon == std::string::npos) colon = path.size();
    std::string folder = path.substr(start, colon - start);
    std::string candidate = (folder.empty() ? "." : folder) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    start = colon + 1;
  }
  return std::nullopt;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The Python the accel command was installed with, as Accelerate runs
// sys.executable: that is the one whose accel package matches this command.
// ACCEL_PYTHON names it where it is not beside the command (the wheel's
// console script sets it to its sys.executable); beside it is python3 of the
// Debian package (/usr/bin) or of a venv (venv/bin).
std::optional<std::string> installed_python(const EnvLookup& env, const std::string& command_dir, std::string& origin) {
  if (auto named = env("ACCEL_PYTHON"); named && !named->empty()) {
    auto found = find_executable(*named, env);
    if (!found) {
      throw CLI::ValidationError("ACCEL_PYTHON", "environment variable ACCEL_PYTHON=" + *named +
                                                     " is not an executable file (nor on PATH); give --python PATH");
    }
    origin = "ACCEL_PYTHON";
    return found;
  }
  if (!command_dir.empty() && is_executable_file(command_dir + "/python3")) {
    origin = "beside the accel command";
    return command_dir + "/python3";
  }
  return std::nullopt;
}

std::string interpreter(const LaunchFlags& flags, const EnvLookup& env, const std::string& command_dir,
                        std::string& origin) {
  if (flags.python) {
    auto found = find_executable(*flags.python, env);
    if (!found) throw CLI::ValidationError("--python", *flags.python + " is not an executable file (nor on PATH)");
    origin = "--python";
    return *found;
  }
  if (auto installed = installed_python(env, command_dir, origin)) return *installed;
  // The venv's own python, not the one it links to: only through it does
  // Python find the venv's packages.
  if (auto venv = env("VIRTUAL_ENV"); venv && !venv->empty()) {
    std::string python = *venv + "/bin/python";
    if (!is_executable_file(python)) {
      throw CLI::ValidationError(
          "VIRTUAL_ENV", "environment variable VIRTUAL_ENV=" + *venv + " has no bin/python; give --python PATH");
    }
    origin = "VIRTUAL_ENV";
    return python;
  }
  origin = "python3 on PATH";
  auto found = find_executable("python3", env);
  if (!found) {
    throw CLI::ValidationError("--python", "no python3 on PATH to run " + flags.program +
                                               "; give --python PATH, or --no_python to run it as is");
  }
  return *found;
}

}  // namespace

std::string command_folder() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.parent_path().string();
}

void resolve_program(const LaunchFlags& flags, const EnvLookup& env, LaunchConfig& config) {
  resolve_program(flags, env, config, command_folder());
}

void resolve_program(const LaunchFlags& flags, const EnvLookup& env, LaunchConfig& config,
                     const std::string& command_dir) {
  if (flags.no_python && flags.module) {
    throw CLI::ValidationError("--no_python", "cannot go with -m/--module: a module runs with Python");
  }
  if (flags.no_python && flags.python) {
    throw CLI::ValidationError("--no_python", "cannot go with --python " + *flags.python);
  }
  const bool python = flags.module || flags.python || (!flags.no_python && ends_with(flags.program, ".py"));
  if (!python) {
    config.program = flags.program;
    config.program_args = flags.program_args;
    return;
  }
  if (!flags.module) {
    // Python's own message would come from every rank, after the rendezvous port was taken.
    struct stat info {};
    if (::stat(flags.program.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
      throw CLI::ValidationError("PROGRAM", "Python script " + flags.program + " is not a file");
    }
  }
  std::string origin;
  config.program = interpreter(flags, env, command_dir, origin);
  config.program_args.clear();
  if (flags.module) config.program_args.emplace_back("-m");
  config.program_args.push_back(flags.program);
  config.program_args.insert(config.program_args.end(), flags.program_args.begin(), flags.program_args.end());
  config.origins.emplace_back("python", config.program + "  (" + origin + ")");
}

}  // namespace accel::cli
