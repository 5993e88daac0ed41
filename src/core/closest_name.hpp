// "Did you mean ...?": the nearest known name to a mistyped one. Plain C++ (no
// LibTorch, no CLI11), so the accel command (cli/suggest.*) and the library's
// model specs (model/layer_args.cpp) share it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace accel::detail {

// The candidate closest to `given` by edit distance (insertions, deletions,
// substitutions and swaps of neighbours), if it is close enough to be a typo:
// at most a third of the longer name's length, and at least 1. Ties go to the
// first candidate; an exact match is not a typo (nullopt). max_distance caps
// the allowed distance further, where a false "did you mean" would mislead.
std::optional<std::string> closest_name(const std::string& given, const std::vector<std::string>& candidates,
                                        size_t max_distance = static_cast<size_t>(-1));

}  // namespace accel::detail
