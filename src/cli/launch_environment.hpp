// What each rank is started with: torchrun's environment contract, and the
// settings the launcher decides on the ranks' behalf when it starts.
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>

#include "cli/launch_options.hpp"

namespace accel::cli {

// The variables rank `local_rank` of this node gets on top of the launcher's
// own environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
// GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, OMP_NUM_THREADS when the
// launcher chose it, Accelerate's ACCELERATE_MIXED_PRECISION and
// ACCELERATE_USE_CPU, ACCELERATE_GRADIENT_ACCUMULATION_STEPS when set, and
// CUDA_VISIBLE_DEVICES for --gpu_ids other than "all".
std::map<std::string, std::string> rank_environment(const LaunchConfig& config, int local_rank);

// torchrun's rule, so that ranks sharing a machine do not each start one thread
// per core: with several ranks and OMP_NUM_THREADS unset, each rank gets an equal
// share of the hardware threads (at least one). nullopt leaves it alone.
std::optional<unsigned> default_omp_num_threads(int nproc_per_node, bool omp_num_threads_set,
                                                unsigned hardware_threads);

// A TCP port on `addr` (a name or a numeric address) kept for rank 0's store:
// for about a minute the kernel gives it to no other connect() or bind(0),
// while a listener setting SO_REUSEADDR (c10d's TCPStore does) binds it.
// Throws std::runtime_error when `addr` does not resolve or nothing can bind.
int pick_free_port(const std::string& addr);

// Fills in what the launcher decides when it starts: a free port for
// --master_port 0, and OMP_NUM_THREADS (with a one-line notice on `notices`).
void resolve_defaults(LaunchConfig& config, std::ostream& notices);

// What --dry_run prints: the resolved settings with their origins, and each
// rank's command line with its environment, as it would be started.
void print_launch_plan(const LaunchConfig& config, std::ostream& out);

}  // namespace accel::cli
