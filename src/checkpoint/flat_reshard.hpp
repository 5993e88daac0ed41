// ZeRO-1/2 optimizer state saved by one world size, cut again for another.
//
// Under SHARD_OPTIMIZER and SHARD_GRAD_OP a model's trainable parameters are one
// flat vector of `total` elements, padded to world * S with S = ceil(total /
// world), and process r's optimizer holds the state of elements [r*S, (r+1)*S)
// (sharding/flat_shard.hpp). Every optimizer libaccel has is elementwise, so the
// state of the whole vector is the saved chunks end to end, and a process of
// another world takes its own range of it: bitwise what loading the whole state
// and cutting it would give. Padding elements have no parameter and no
// gradient, so their state is zero in every optimizer; new padding is zero too.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace accel::detail {

// The state dict process `rank` of `world` loads, from the state dicts of the
// `saved_world` processes that saved it (`saved_chunk(r)` returns process r's,
// unpickled; only the processes whose chunks overlap the new one are asked).
// Per-element state (a tensor of S_saved elements: exp_avg, exp_avg_sq,
// momentum_buffer, ...) is cut again; anything else (step, the param groups)
// is taken from the first chunk asked, after checking that every chunk asked
// agrees. Throws IO naming `label` when a chunk's size does not fit
// ceil(total / saved_world), or the chunks disagree.
c10::IValue reshard_flat_optimizer_state(const std::function<c10::IValue(int saved_rank)>& saved_chunk, int saved_world,
                                         int world, int rank, int64_t total, const std::string& label);

// The per-parameter state dict an unsharded optimizer (NO_SHARD, or one process)
// loads from the chunks of `saved_world` ZeRO-1/2 processes: the whole flat
// state cut at the parameters' offsets (their shapes, in the flat layout's order:
// trainable parameters in registration order, each once). Every saved chunk is
// read. One parameter group; its "params" become 0 .. n-1. Throws IO naming
// `label` as reshard_flat_optimizer_state does, and when the chunks hold more
// than one group.
c10::IValue unflatten_optimizer_state(const std::function<c10::IValue(int saved_rank)>& saved_chunk, int saved_world,
                                      const std::vector<std::vector<int64_t>>& shapes, const std::string& label);

}  // namespace accel::detail
