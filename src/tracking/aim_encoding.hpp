// Aim 3.x's storage encodings, which its repository's RocksDB keys and values
// use (aim/storage/encoding and aim/storage/hashing of aim 3.29): keys are
// paths of strings and 64-bit integers, each followed by the byte 0xFE;
// values are a type byte and their content; contexts and steps are keyed by
// Aim's own deterministic hashes (BLAKE2b with fixed salts over CPython's
// numeric hash). Tested against values aim's own functions return.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace accel::detail::aim {

using PathKey = std::variant<std::string, int64_t>;

// encode_path: a string key as UTF-8, an integer as 0xFE and 8 bytes big-endian; each then 0xFE.
std::string encode_path(const std::vector<PathKey>& path);

// encode(value): a type byte, then the content.
std::string encode_none();
std::string encode_int(int64_t value);   // little-endian
std::string encode_float(double value);  // little-endian IEEE double
std::string encode_string(const std::string& value);
std::string encode_array_flag();   // an array whose elements follow under its path
std::string encode_object_flag();  // a dict whose items follow under its path

// hash_auto of a number (int or float alike), a string, and a dict of strings
// (a tracking context; {} for none).
int64_t hash_number(double value);
int64_t hash_string(const std::string& value);
int64_t hash_string_dict(const std::vector<std::pair<std::string, std::string>>& items);

}  // namespace accel::detail::aim
