// Accelerate's split_between_processes arithmetic, shared by Accelerator and
// PartialState: process `index` of `count` takes items [start, end) of n, the
// first n % count processes one more, then padded_length - (end - start)
// copies of the last item when apply_padding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "accel/accelerator.hpp"
#include "accel/error.hpp"

namespace accel::detail {

inline Accelerator::SplitRange split_range(int64_t n, int64_t count, int64_t index, bool apply_padding) {
  require_arg(n >= 0, "split_between_processes: the number of items " + std::to_string(n) + " is negative");
  const int64_t per = n / count, extras = n % count;
  Accelerator::SplitRange range;
  range.start = index * per + std::min(index, extras);
  range.end = range.start + per + (index < extras ? 1 : 0);
  range.padded_length = range.end - range.start;
  if (apply_padding && n > 0) range.padded_length = per + (extras > 0 ? 1 : 0);
  return range;
}

}  // namespace accel::detail
