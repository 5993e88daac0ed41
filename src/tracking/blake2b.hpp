// BLAKE2b (RFC 7693) with a chosen digest length and salt, as Python's
// hashlib.blake2b(data, digest_size=n, salt=s) computes it: what Aim hashes its
// keys with (aim_encoding.hpp). Written here because neither library at hand
// takes both: libsodium's outputs are 16 bytes or more, OpenSSL 3.0's BLAKE2b
// has a fixed length and no salt, and Debian's libb2 links GNU OpenMP, which
// the torch wheel's own libgomp would then meet in one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace accel::detail {

class Blake2b {
 public:
  // digest_size 1..64; salt at most 16 bytes (zero-padded, as hashlib pads it).
  Blake2b(size_t digest_size, const std::string& salt = "");
  void update(const void* data, size_t size);
  void update(const std::string& data) { update(data.data(), data.size()); }
  // The digest (digest_size bytes); call once.
  std::string final();

 private:
  void compress(bool last);

  uint64_t h_[8];
  uint64_t t_[2] = {0, 0};
  uint8_t block_[128];
  size_t filled_ = 0;
  size_t digest_size_;
};

}  // namespace accel::detail
