// What `accel launch` runs in every rank, as torchrun and `accelerate launch`
// decide it: a Python script (PROGRAM ending in .py) with a Python
// interpreter, a module with -m/--module (`python -m PROGRAM`), anything else
// as is; --no_python runs PROGRAM as is even when it ends in .py.
#pragma once

#include "cli/config_file.hpp"
#include "cli/launch_options.hpp"

#include <string>

namespace accel::cli {

// The interpreter: --python (a path, or a name looked up on PATH), else the
// Python this accel command was installed with (Accelerate runs sys.executable):
// $ACCEL_PYTHON (the wheel's `accel` sets it to its sys.executable), else
// python3 in the accel command's own folder (/usr/bin for the Debian package,
// a venv's bin); else the active virtual environment's $VIRTUAL_ENV/bin/python,
// else python3 on PATH.
// Sets config.program to it and config.program_args to [-m] PROGRAM ARGS...;
// without Python, PROGRAM and ARGS as given. A script must be an existing
// file. Throws CLI::ValidationError naming the flag, script or interpreter:
// -m with --no_python, --python with --no_python, a missing script, no
// interpreter to be found.
void resolve_program(const LaunchFlags& flags, const EnvLookup& env, LaunchConfig& config);
// The same with the accel command's folder given (tests); the one above reads /proc/self/exe.
void resolve_program(const LaunchFlags& flags, const EnvLookup& env, LaunchConfig& config,
                     const std::string& command_dir);

}  // namespace accel::cli
