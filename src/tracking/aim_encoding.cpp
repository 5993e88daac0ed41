#include "tracking/aim_encoding.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tracking/blake2b.hpp"

namespace accel::detail::aim {
namespace {

constexpr char kSentinel = '\xfe';
// The type bytes of aim.storage.encoding.
constexpr char kNone = 0, kInt = 2, kFloat = 3, kString = 4, kArray = 6, kObject = 7;

std::string little_endian(uint64_t bits) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((bits >> (8 * i)) & 0xff);
  return out;
}

int64_t from_little_endian(const std::string& bytes) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
  return static_cast<int64_t>(v);
}

std::string encode_int64(int64_t value) { return little_endian(static_cast<uint64_t>(value)); }

// The salts of aim.storage.hashing, each encode_int64 of a fixed number.
const std::string& salt(int64_t seed) {
  static const std::string uniform = encode_int64(-7494597716789683807LL), array = encode_int64(2965039128708897743LL),
                           object = encode_int64(-2435585119574290752LL), str = encode_int64(7540324813251503183LL);
  switch (seed) {
    case 0: return uniform;
    case 1: return array;
    case 2: return object;
    default: return str;
  }
}
enum Salt { kUniform = 0, kArraySalt = 1, kObjectSalt = 2, kStringSalt = 3 };

int64_t digest64(Blake2b& state) { return from_little_endian(state.final()); }

// CPython's hash of a float (Python/pyhash.c), as aim's c_hash.det_hash keeps
// it: -1 is not remapped, and a NaN hashes to 0.
int64_t python_double_hash(double v) {
  constexpr int kBits = 61;
  constexpr uint64_t kModulus = (uint64_t{1} << kBits) - 1;
  if (!std::isfinite(v)) return std::isinf(v) ? (v > 0 ? 314159 : -314159) : 0;
  int e = 0;
  double m = std::frexp(v, &e);
  int sign = 1;
  if (m < 0) {
    sign = -1;
    m = -m;
  }
  uint64_t x = 0;
  while (m != 0) {
    x = ((x << 28) & kModulus) | x >> (kBits - 28);
    m *= 268435456.0;
    e -= 28;
    const auto y = static_cast<uint64_t>(m);
    m -= static_cast<double>(y);
    x += y;
    if (x >= kModulus) x -= kModulus;
  }
  e = e >= 0 ? e % kBits : kBits - 1 - ((-1 - e) % kBits);
  x = ((x << e) & kModulus) | x >> (kBits - e);
  return static_cast<int64_t>(x * static_cast<uint64_t>(static_cast<int64_t>(sign)));
}

int64_t hash_pair(int64_t first, int64_t second) {  // hash_array((a, b)) from the items' hashes
  Blake2b state(8, salt(kArraySalt));
  state.update(encode_int64(first));
  state.update(encode_int64(second));
  return digest64(state);
}

}  // namespace

std::string encode_path(const std::vector<PathKey>& path) {
  std::string out;
  for (const auto& key : path) {
    if (const auto* text = std::get_if<std::string>(&key)) {
      out += *text;
    } else {
      const auto bits = static_cast<uint64_t>(std::get<int64_t>(key));
      out += kSentinel;
      for (int i = 7; i >= 0; --i) out += static_cast<char>((bits >> (8 * i)) & 0xff);
    }
    out += kSentinel;
  }
  return out;
}

std::string encode_none() { return std::string(1, kNone); }
std::string encode_int(int64_t value) { return std::string(1, kInt) + encode_int64(value); }
std::string encode_float(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return std::string(1, kFloat) + little_endian(bits);
}
std::string encode_string(const std::string& value) { return std::string(1, kString) + value; }
std::string encode_array_flag() { return std::string(1, kArray); }
std::string encode_object_flag() { return std::string(1, kObject); }

int64_t hash_number(double value) {
  Blake2b state(8, salt(kUniform));  // hash_uniform(det_hash(value))
  state.update(encode_int64(python_double_hash(value)));
  return digest64(state);
}

int64_t hash_string(const std::string& value) {
  Blake2b state(8, salt(kStringSalt));
  state.update(value);
  return digest64(state);
}

int64_t hash_string_dict(const std::vector<std::pair<std::string, std::string>>& items) {
  // hash_object: the (key, value) pairs' hashes in the order of their keys' hashes.
  std::vector<std::pair<int64_t, int64_t>> pieces;
  for (const auto& [key, value] : items)
    pieces.emplace_back(hash_string(key), hash_pair(hash_string(key), hash_string(value)));
  std::sort(pieces.begin(), pieces.end());
  Blake2b state(8, salt(kObjectSalt));
  for (const auto& piece : pieces) state.update(encode_int64(piece.second));
  return digest64(state);
}

}  // namespace accel::detail::aim
