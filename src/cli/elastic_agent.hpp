// `accel launch --rdzv_backend c10d`: this machine's elastic agent, as
// torchrun's. It joins the rendezvous (rendezvous_client.hpp), starts this
// node's ranks with the world the round gave, and watches both: a failed rank
// stops this node's ranks and rejoins (a restart, counted against
// --max_restarts); a change of membership seen at a monitor check (nodes waiting
// to join, a node lost, a new round) stops them and rejoins without counting.
// Every transition is logged on stderr with the UTC time, the round, the world
// size and the reason.
#pragma once

#include "cli/launch_options.hpp"

namespace accel::cli {

// Runs until this node's ranks succeed (0), the restarts are used up or the
// rendezvous fails or is closed (the failing rank's status, else 1), or the
// launcher is signalled (128 + signal). Giving up or being signalled closes
// the rendezvous, so the other nodes end too.
int run_elastic(LaunchConfig config);

}  // namespace accel::cli
