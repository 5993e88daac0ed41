// Resolving `accel launch`'s settings from four places, in this order of
// precedence: the command line, the environment, Accelerate's config file, and
// the defaults. Each resolved setting remembers where it came from.
#pragma once

#include <string>
#include <vector>

#include "cli/config_file.hpp"
#include "cli/launch_options.hpp"

namespace accel::cli {

// The config file that applies: --config_file (which must exist), else the
// default location when a file is there. Empty when none applies.
std::string active_config_path(const LaunchFlags& flags, const EnvLookup& env);

// Merges `flags` with the environment and the config file into the settings
// of this node's launch. Environment variables read: PET_NPROC_PER_NODE,
// PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT,
// PET_MAX_RESTARTS, PET_MONITOR_INTERVAL, PET_LOG_DIR, PET_REDIRECTS,
// PET_TEE, PET_LOCAL_RANKS_FILTER (torchrun's), and
// ACCELERATE_MIXED_PRECISION, ACCELERATE_USE_CPU,
// ACCELERATE_GRADIENT_ACCUMULATION_STEPS (Accelerate's).
// --num_processes (or the file's num_processes) is the total over all
// machines and must divide evenly by nnodes.
// Throws CLI::ValidationError naming the flag or variable for conflicting or
// malformed values, ConfigFileError for the file; appends the file's warnings
// to `warnings`.
LaunchConfig resolve_settings(const LaunchFlags& flags, const EnvLookup& env, std::vector<std::string>& warnings);

}  // namespace accel::cli
