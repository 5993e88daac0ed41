#include "core/number_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace accel::detail {

std::string shortest_number_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // Scientific form without a precision gives the shortest digits that round-trip
  // ("3.3333333333333331e-01" never appears); only the layout is left to choose.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string text(buffer, result.ptr);
  const size_t e = text.find('e');
  const bool negative = text[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (text[i] != '.') digits += text[i];
  const int exponent = std::atoi(text.c_str() + e + 1);

  std::string out = negative ? "-" : "";
  const int count = static_cast<int>(digits.size());
  if (exponent < -4 || exponent >= 16) {  // where Python's repr switches to exponent notation
    out += digits.substr(0, 1);
    if (count > 1) out += "." + digits.substr(1);
    const int magnitude = std::abs(exponent);
    out += std::string(exponent < 0 ? "e-" : "e+") + (magnitude < 10 ? "0" : "") + std::to_string(magnitude);
  } else if (exponent < 0) {
    out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else if (exponent + 1 >= count) {
    out += digits + std::string(static_cast<size_t>(exponent + 1 - count), '0');
  } else {
    out += digits.substr(0, static_cast<size_t>(exponent + 1)) + "." + digits.substr(static_cast<size_t>(exponent + 1));
  }
  return out;
}

}  // namespace accel::detail
