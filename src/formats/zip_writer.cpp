#include "formats/zip_writer.hpp"

#include <zlib.h>

#include <cstdint>
#include <limits>

#include "accel/error.hpp"

namespace accel::detail {
namespace {

void put16(std::string& out, uint32_t v) {
  out += static_cast<char>(v & 0xff);
  out += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

constexpr uint32_t kDosDate1980 = (0 << 9) | (1 << 5) | 1;  // 1980-01-01

}  // namespace

std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& files) {
  constexpr uint64_t kLimit = std::numeric_limits<uint32_t>::max();
  std::string out, directory;
  for (const auto& [name, contents] : files) {
    require_arg(contents.size() < kLimit && out.size() < kLimit && name.size() < 0xffff,
                "zip: \"" + name + "\" does not fit a zip archive without zip64");
    const auto crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(contents.data()),
                                                 static_cast<uInt>(contents.size())));
    const auto size = static_cast<uint32_t>(contents.size());
    const auto offset = static_cast<uint32_t>(out.size());
    // The local header: version 2.0, no flags, stored, time 0, the date, CRC, sizes, name.
    put32(out, 0x04034b50);
    for (uint32_t field : {20u, 0u, 0u, 0u, kDosDate1980}) put16(out, field);
    for (uint32_t field : {crc, size, size}) put32(out, field);
    put16(out, static_cast<uint32_t>(name.size()));
    put16(out, 0);
    out += name;
    out += contents;
    // Its central directory entry.
    put32(directory, 0x02014b50);
    for (uint32_t field : {20u, 20u, 0u, 0u, 0u, kDosDate1980}) put16(directory, field);
    for (uint32_t field : {crc, size, size}) put32(directory, field);
    for (uint32_t field : {static_cast<uint32_t>(name.size()), 0u, 0u, 0u, 0u}) put16(directory, field);
    put32(directory, 0600u << 16);  // external attributes: mode 0600, as Python's zipfile writes a ZipInfo
    put32(directory, offset);
    directory += name;
  }
  require_arg(out.size() + directory.size() < kLimit && files.size() < 0xffff, "zip: the archive needs zip64");
  const auto directory_offset = static_cast<uint32_t>(out.size());
  out += directory;
  put32(out, 0x06054b50);  // end of central directory
  for (uint32_t field : {0u, 0u, static_cast<uint32_t>(files.size()), static_cast<uint32_t>(files.size())})
    put16(out, field);
  put32(out, static_cast<uint32_t>(directory.size()));
  put32(out, directory_offset);
  put16(out, 0);  // no comment
  return out;
}

}  // namespace accel::detail
