#include "state/slurm_hostlist.hpp"

#include <cctype>
#include <vector>

namespace accel::detail {

namespace {

bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

bool is_digits(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

// "01-04,07" (a bracket's inside): its first number as written, nullopt when
// an item is not N or N-M with N <= M. Numbers are compared without their
// leading zeros, and only by length and digits, so none can overflow.
std::optional<std::string> first_of_ranges(const std::string& inside) {
  std::optional<std::string> first;
  size_t at = 0;
  while (true) {
    size_t comma = inside.find(',', at);
    std::string item = inside.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t dash = item.find('-');
    std::string low = item.substr(0, dash);
    std::string high = dash == std::string::npos ? low : item.substr(dash + 1);
    if (!is_digits(low) || !is_digits(high)) return std::nullopt;
    auto strip = [](const std::string& n) {
      size_t nonzero = n.find_first_not_of('0');
      return nonzero == std::string::npos ? std::string("0") : n.substr(nonzero);
    };
    std::string a = strip(low), b = strip(high);
    if (a.size() > b.size() || (a.size() == b.size() && a > b)) return std::nullopt;
    if (!first) first = low;
    if (comma == std::string::npos) return first;
    at = comma + 1;
  }
}

}  // namespace

std::optional<std::string> slurm_host_list_first(const std::string& node_list) {
  std::optional<std::string> first;
  std::string host;  // the current entry's first host, as far as parsed
  bool entry_empty = true;
  for (size_t i = 0; i <= node_list.size(); ++i) {
    char c = i < node_list.size() ? node_list[i] : ',';
    if (c == ',') {  // a comma outside brackets ends an entry
      if (entry_empty) return std::nullopt;
      if (!first) first = host;
      host.clear();
      entry_empty = true;
    } else if (c == '[') {
      size_t close = node_list.find(']', i + 1);
      if (close == std::string::npos) return std::nullopt;
      std::string inside = node_list.substr(i + 1, close - i - 1);
      if (inside.find('[') != std::string::npos) return std::nullopt;
      auto low = first_of_ranges(inside);
      if (!low) return std::nullopt;
      host += *low;
      entry_empty = false;
      i = close;
    } else if (is_host_char(c)) {
      host += c;
      entry_empty = false;
    } else {
      return std::nullopt;  // ']' without '[', spaces, anything else
    }
  }
  return first;
}

}  // namespace accel::detail
