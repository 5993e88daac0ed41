// Numeric CSV files with a header row.
#include <ATen/ATen.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>

#include "accel/data.hpp"
#include "accel/error.hpp"

namespace accel {

namespace {

std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    std::string cell = line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!cell.empty() && cell.back() == '\r') cell.pop_back();
    size_t first = cell.find_first_not_of(" \t");
    size_t last = cell.find_last_not_of(" \t");
    cells.push_back(first == std::string::npos ? std::string() : cell.substr(first, last - first + 1));
    if (comma == std::string::npos) return cells;
    start = comma + 1;
  }
}

// A cell as shown in an error message: control bytes (a NUL included) escaped,
// long cells cut short.
std::string shown(const std::string& cell) {
  constexpr size_t kMaxShown = 40;
  std::string out;
  for (size_t i = 0; i < cell.size() && i < kMaxShown; ++i) {
    auto c = static_cast<unsigned char>(cell[i]);
    if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return cell.size() > kMaxShown ? out + "..." : out;
}

// One optional '+' then what std::from_chars reads, consuming the whole cell.
// from_chars knows no hex prefix, whitespace or locale, unlike strtod, which
// read "0x10" as 16 and stopped at an embedded NUL.
template <typename T>
bool parse_number(const std::string& cell, T* out) {
  const char* begin = cell.data();
  const char* end = begin + cell.size();
  if (begin != end && *begin == '+' && end - begin > 1 && begin[1] != '-') ++begin;
  auto [stop, error] = std::from_chars(begin, end, *out);
  return error == std::errc() && stop == end && begin != end;
}

}  // namespace

std::shared_ptr<TensorDataset> load_csv_dataset(const std::string& path, const std::string& label_column,
                                                at::ScalarType label_dtype) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorCode::IO, "cannot open CSV file " + path);
  std::string line;
  require(static_cast<bool>(std::getline(in, line)), ErrorCode::IO, path + ": empty file, expected a header row");
  // Editors on Windows start UTF-8 files with a byte order mark; left in, it
  // would become part of the first column's name.
  static const std::string kBom = "\xEF\xBB\xBF";
  if (line.compare(0, kBom.size(), kBom) == 0) line.erase(0, kBom.size());
  std::vector<std::string> header = split_row(line);
  std::map<std::string, size_t> seen;
  for (size_t c = 0; c < header.size(); ++c) {
    auto [it, inserted] = seen.emplace(header[c], c);
    require(inserted, ErrorCode::IO,
            path + ":1: column " + std::to_string(c + 1) + " is named \"" + shown(header[c]) + "\" like column " +
                std::to_string(it->second + 1) + "; column names must differ");
  }
  auto label_it = seen.find(label_column);
  require_arg(label_it != seen.end(), path + ": no column named \"" + label_column + "\" in the header");
  const size_t label_index = label_it->second;
  require_arg(header.size() >= 2, path + ": needs at least one feature column besides \"" + label_column + "\"");

  // Integral labels are read as integers, so that ids above 2^53 stay exact.
  const bool integral_labels = at::isIntegralType(label_dtype, /*includeBool=*/false);
  std::vector<float> features;
  std::vector<double> labels;
  std::vector<int64_t> int_labels;
  int64_t line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> cells = split_row(line);
    // Messages are built only on failure: this loop runs once per cell.
    auto bad_cell = [&](size_t c, const char* problem) {
      fail(ErrorCode::IO, path + ":" + std::to_string(line_number) + ": column \"" + header[c] + "\" holds \"" +
                              shown(cells[c]) + "\", " + problem);
    };
    if (cells.size() != header.size()) {
      fail(ErrorCode::IO, path + ":" + std::to_string(line_number) + ": " + std::to_string(cells.size()) +
                              " cells, the header has " + std::to_string(header.size()));
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c == label_index && integral_labels) {
        int64_t label = 0;
        if (!parse_number(cells[c], &label)) bad_cell(c, "not an integer, and the label dtype is integral");
        int_labels.push_back(label);
        continue;
      }
      double value = 0;
      // from_chars also reads "inf" and "nan", which no feature should be.
      if (!parse_number(cells[c], &value) || !std::isfinite(value)) bad_cell(c, "not a finite decimal number");
      if (c == label_index) {
        labels.push_back(value);
      } else {
        if (std::fabs(value) > std::numeric_limits<float>::max()) bad_cell(c, "beyond the range of float32 features");
        features.push_back(static_cast<float>(value));
      }
    }
  }
  const int64_t rows = static_cast<int64_t>(integral_labels ? int_labels.size() : labels.size());
  const int64_t columns = static_cast<int64_t>(header.size()) - 1;
  at::Tensor x = at::from_blob(features.data(), {rows, columns}, at::kFloat).clone();
  // copy=true: to() of the same dtype would otherwise return a view of the local vector.
  at::Tensor y = integral_labels ? at::from_blob(int_labels.data(), {rows}, at::kLong).to(label_dtype, false, true)
                                 : at::from_blob(labels.data(), {rows}, at::kDouble).to(label_dtype, false, true);
  return std::make_shared<TensorDataset>(std::vector<at::Tensor>{x, y});
}

}  // namespace accel
