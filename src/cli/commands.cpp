#include "cli/commands.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/launch_environment.hpp"
#include "cli/launch_settings.hpp"
#include "cli/supervisor.hpp"

namespace accel::cli {

namespace {

std::string os_name() {
  std::ifstream release("/etc/os-release");
  for (std::string line; std::getline(release, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string name = line.substr(12);
      if (name.size() >= 2 && name.front() == '"') name = name.substr(1, name.size() - 2);
      return name;
    }
  }
  return "unknown";
}

std::string run_and_read(const std::string& program, const std::string& argument) {
  std::string command = "'" + program + "' " + argument + " 2>&1";
  std::string output;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    for (size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, got);
    int status = ::pclose(pipe);
    if (status != 0) output += "(accel-selftest --env failed with status " + std::to_string(status) + ")\n";
  }
  return output;
}

}  // namespace

std::string find_selftest() {
  std::error_code error;
  auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  for (const auto& candidate :
       {self.parent_path() / "accel-selftest", self.parent_path() / ".." / "libexec" / "accel" / "accel-selftest"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.lexically_normal().string();
  }
  return {};
}

std::optional<int> probe_cuda_devices() {
  const std::string selftest = find_selftest();
  if (selftest.empty()) return std::nullopt;
  std::istringstream facts(run_and_read(selftest, "--env"));
  const std::string key = "CUDA devices: ";
  for (std::string line; std::getline(facts, line);) {
    if (line.rfind(key, 0) != 0) continue;
    try {
      size_t used = 0;
      int count = std::stoi(line.substr(key.size()), &used);
      if (count >= 0 && key.size() + used == line.size()) return count;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

int print_env_report(const std::string& config_file, const EnvLookup& env, std::ostream& out) {
  out << "Copy-and-paste the text below in your bug report.\n\n";
  out << "- accel command: " << ACCEL_CLI_VERSION << '\n';
  utsname system{};
  if (::uname(&system) == 0) {
    out << "- Platform: " << system.sysname << ' ' << system.release << ' ' << system.machine << '\n';
  }
  out << "- OS: " << os_name() << '\n';
#if defined(__clang__)
  out << "- Compiler: clang " << __clang_version__ << '\n';
#elif defined(__GNUC__)
  out << "- Compiler: g++ " << __VERSION__ << '\n';
#endif
  out << "- Hardware threads: " << std::thread::hardware_concurrency() << '\n';
  if (auto threads = env("OMP_NUM_THREADS")) out << "- OMP_NUM_THREADS: " << *threads << '\n';
  std::string selftest = find_selftest();
  if (selftest.empty()) {
    out << "- LibTorch: unknown (accel-selftest not found next to accel)\n";
  } else {
    std::istringstream facts(run_and_read(selftest, "--env"));
    for (std::string line; std::getline(facts, line);) out << "- " << line << '\n';
  }
  LaunchFlags flags;
  if (!config_file.empty()) flags.config_file = config_file;
  std::string active = active_config_path(flags, env);
  if (active.empty()) {
    auto fallback = default_config_path(env);
    out << "- Config file: none" << (fallback ? " (looked for " + *fallback + ")" : std::string()) << '\n';
    return 0;
  }
  std::ifstream file(active);
  if (!file) {
    out << "- Config file: " << active << " (cannot be read)\n";
    return 1;
  }
  out << "- Config file: " << active << '\n';
  for (std::string line; std::getline(file, line);) out << "\t" << line << '\n';
  return 0;
}

int run_selftest(const LaunchFlags& given, std::ostream& out, std::ostream& err) {
  LaunchFlags flags = given;
  flags.program = find_selftest();
  if (flags.program.empty()) {
    err << "accel test: accel-selftest not found next to accel or in ../libexec/accel\n";
    return 1;
  }
  std::vector<std::string> warnings;
  LaunchConfig config = resolve_settings(flags, process_environment(), warnings);
  for (const auto& warning : warnings) err << "accel test: warning: " << warning << '\n';
  // One machine: a free port, so a test never collides with a running job.
  if (config.nnodes == 1 && !flags.master_port) config.master_port = 0;
  validate(config);
  out << "accel test: running accel-selftest on " << config.world_size() << " process(es)"
      << (config.config_file.empty() ? std::string(" (no config file)") : " with " + config.config_file) << '\n'
      << std::flush;
  resolve_defaults(config, err);
  int status = Supervisor(std::move(config)).run();
  if (status == 0) {
    out << "Test is a success! You are ready for your distributed training!\n";
  } else {
    out << "accel test: FAILED (exit status " << status << ")\n";
  }
  return status;
}

}  // namespace accel::cli
