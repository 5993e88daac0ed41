#include "tracking/wandb_log.hpp"

#include <zlib.h>

#include <algorithm>

namespace accel::detail {
namespace {

// LevelDB's log format: a fragment is checksum (4), length (2), type (1), data.
constexpr uint64_t kBlockSize = 32768;
constexpr uint64_t kFragmentHeader = 7;
enum FragmentType : unsigned char { kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4 };

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

}  // namespace

void WandbLogWriter::open(const std::string& path) {
  file_.open(path, true);
  // ":W&B", the magic 0xBEE1 (little-endian) and format version 0, as wandb writes them.
  std::string header = ":W&B";
  put_le(header, 0xBEE1, 2);
  header += '\0';
  file_.append(header);
  offset_ = header.size();
}

void WandbLogWriter::append(const std::string& record) {
  std::string out;
  size_t pos = 0;
  bool first = true;
  do {
    uint64_t left_in_block = kBlockSize - offset_ % kBlockSize;
    if (left_in_block < kFragmentHeader) {  // too small for a header: zero-filled, as LevelDB does
      out.append(left_in_block, '\0');
      offset_ += left_in_block;
      left_in_block = kBlockSize;
    }
    const size_t length = std::min<size_t>(record.size() - pos, left_in_block - kFragmentHeader);
    const bool last = pos + length == record.size();
    const unsigned char type = first && last ? kFull : first ? kFirst : last ? kLast : kMiddle;
    // The checksum covers the type byte and the data (zlib's CRC-32, unmasked).
    uLong crc = crc32(0L, &type, 1);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(record.data() + pos), static_cast<uInt>(length));
    put_le(out, crc, 4);
    put_le(out, length, 2);
    out += static_cast<char>(type);
    out.append(record, pos, length);
    offset_ += kFragmentHeader + length;
    pos += length;
    first = false;
  } while (pos < record.size());
  file_.append(out);
}

}  // namespace accel::detail
