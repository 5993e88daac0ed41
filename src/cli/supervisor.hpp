// Starts the ranks of one node and watches them: output is re-emitted line by
// line with a "[rank N] " prefix; the first rank to fail stops the others;
// SIGINT/SIGTERM reach every rank.
#pragma once

#include "cli/launch_options.hpp"

namespace accel::cli {

// Runs the ranks to completion. Returns the launcher's exit status: 0 when every
// rank exits 0; the failing rank's exit code (128 + signal when it was killed);
// 130 or 143 when the launcher itself got SIGINT or SIGTERM.
int supervise(const LaunchConfig& config);

}  // namespace accel::cli
