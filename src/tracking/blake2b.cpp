#include "tracking/blake2b.hpp"

#include <cstring>

#include "accel/error.hpp"

namespace accel::detail {
namespace {

constexpr uint64_t kIv[8] = {0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL,
                             0xa54ff53a5f1d36f1ULL, 0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL,
                             0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

constexpr uint8_t kSigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

uint64_t rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

uint64_t load64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Blake2b::Blake2b(size_t digest_size, const std::string& salt) : digest_size_(digest_size) {
  require_arg(digest_size >= 1 && digest_size <= 64, "blake2b: digest size " + std::to_string(digest_size));
  require_arg(salt.size() <= 16, "blake2b: a salt of " + std::to_string(salt.size()) + " bytes (at most 16)");
  std::memcpy(h_, kIv, sizeof h_);
  // The parameter block: digest length, no key, fanout 1, depth 1; the salt is its bytes 32..47.
  h_[0] ^= 0x01010000ULL ^ digest_size;
  uint8_t padded[16] = {0};
  std::memcpy(padded, salt.data(), salt.size());
  h_[4] ^= load64(padded);
  h_[5] ^= load64(padded + 8);
}

void Blake2b::compress(bool last) {
  uint64_t m[16], v[16];
  for (int i = 0; i < 16; ++i) m[i] = load64(block_ + 8 * i);
  for (int i = 0; i < 8; ++i) {
    v[i] = h_[i];
    v[i + 8] = kIv[i];
  }
  v[12] ^= t_[0];
  v[13] ^= t_[1];
  if (last) v[14] = ~v[14];
  const auto g = [&](int a, int b, int c, int d, uint64_t x, uint64_t y) {
    v[a] = v[a] + v[b] + x;
    v[d] = rotr(v[d] ^ v[a], 32);
    v[c] = v[c] + v[d];
    v[b] = rotr(v[b] ^ v[c], 24);
    v[a] = v[a] + v[b] + y;
    v[d] = rotr(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = rotr(v[b] ^ v[c], 63);
  };
  for (const auto& s : kSigma) {
    g(0, 4, 8, 12, m[s[0]], m[s[1]]);
    g(1, 5, 9, 13, m[s[2]], m[s[3]]);
    g(2, 6, 10, 14, m[s[4]], m[s[5]]);
    g(3, 7, 11, 15, m[s[6]], m[s[7]]);
    g(0, 5, 10, 15, m[s[8]], m[s[9]]);
    g(1, 6, 11, 12, m[s[10]], m[s[11]]);
    g(2, 7, 8, 13, m[s[12]], m[s[13]]);
    g(3, 4, 9, 14, m[s[14]], m[s[15]]);
  }
  for (int i = 0; i < 8; ++i) h_[i] ^= v[i] ^ v[i + 8];
}

void Blake2b::update(const void* data, size_t size) {
  const auto* in = static_cast<const uint8_t*>(data);
  while (size > 0) {
    if (filled_ == sizeof block_) {  // a full block is compressed only once more input follows
      t_[0] += sizeof block_;
      if (t_[0] < sizeof block_) ++t_[1];
      compress(false);
      filled_ = 0;
    }
    const size_t take = std::min(size, sizeof block_ - filled_);
    std::memcpy(block_ + filled_, in, take);
    filled_ += take;
    in += take;
    size -= take;
  }
}

std::string Blake2b::final() {
  t_[0] += filled_;
  if (t_[0] < filled_) ++t_[1];
  std::memset(block_ + filled_, 0, sizeof block_ - filled_);
  compress(true);
  std::string out(digest_size_, '\0');
  for (size_t i = 0; i < digest_size_; ++i) out[i] = static_cast<char>((h_[i / 8] >> (8 * (i % 8))) & 0xff);
  return out;
}

}  // namespace accel::detail
