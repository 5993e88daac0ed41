// Optimizer state saved under one sharding layout, cut again for another
// (checkpoint/shard_layout.hpp): any of NO_SHARD, ZeRO-1/2, FULL_SHARD and
// HYBRID_SHARD at any world size to any other.
//
// The state dicts are PyTorch's ({"state": {index: {key: value}}, "param_groups":
// [group]}), with libaccel's single parameter group:
//   whole layout          one entry per parameter (index = position in params()),
//                         per-element tensors shaped like the parameter;
//   flat / units layouts  one entry (index 0) for the member's vector, per-element
//                         tensors of member_numel() elements.
// Every tensor but "step" is per-element (exp_avg, exp_avg_sq, max_exp_avg_sq,
// momentum_buffer, square_avg, grad_avg, sum): those are cut again, bitwise; the
// rest (step, numbers) must agree wherever it is read and is carried over.
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <string>

#include "checkpoint/shard_layout.hpp"

namespace accel::detail {

// The state dict member `member` of `target` loads. `saved_dict(m)` returns
// source member m's state dict, unpickled; it is asked only for the members
// holding part of the target member's elements (and member 0 for the group and
// step), each once. Throws IO naming `label` when a dict is not shaped as above,
// has more than one parameter group, disagrees with another on "step", or
// when the parameters of the two layouts differ (check_same_parameters).
// Whether a value that is not per-element (step: a number or a 0-d tensor; an
// option) is the same in two state dicts.
bool same_state_value(const c10::IValue& a, const c10::IValue& b);

c10::IValue reshard_optimizer_state(const ShardLayout& source, const std::function<c10::IValue(int member)>& saved_dict,
                                    const ShardLayout& target, int member, const std::string& label);

}  // namespace accel::detail
