// CRC-32C (Castagnoli), masked as TFRecord framing requires.
#pragma once

#include <cstddef>
#include <cstdint>

namespace accel::detail {

uint32_t crc32c(const void* data, size_t size);
// TFRecord's mask: rotate right by 15 and add a constant, so a CRC of data
// that itself holds CRCs does not look degenerate.
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace accel::detail
