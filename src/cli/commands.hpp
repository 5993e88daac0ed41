// `accel env` and `accel test`: what they print and run. `accel launch` is
// supervisor.hpp; `accel config` is config_command.hpp.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "cli/config_file.hpp"
#include "cli/launch_options.hpp"

namespace accel::cli {

// accel-selftest next to this executable, else in ../libexec/accel; empty when
// neither exists.
std::string find_selftest();

// The CUDA devices LibTorch sees (accel-selftest --env's "CUDA devices: N"),
// as torch.cuda.device_count() tells Accelerate; nullopt when it cannot tell.
std::optional<int> probe_cuda_devices();

// `accel env`: versions, platform, what accel-selftest says about LibTorch and
// devices, and the active config file with its contents, for a bug report.
// `config_file` is --config_file when given.
int print_env_report(const std::string& config_file, const EnvLookup& env, std::ostream& out);

// `accel test`: accel-selftest under accel launch with the active config
// (--config_file or the default file); a free port on a single machine.
// Returns the launch's exit status, after a one-line verdict.
int run_selftest(const LaunchFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace accel::cli
