// The sample boundaries of a text file, shared by the byte-level reader
// (token_sequences.cpp) and the vocabulary reader (text_vocab.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "accel/sequence_data.hpp"

namespace accel::detail {

// [begin, end) byte ranges of the samples of text under split (its Chunks
// rule counts bytes).
std::vector<std::pair<int64_t, int64_t>> text_ranges(const std::string& text, const TextSplit& split);

}  // namespace accel::detail
