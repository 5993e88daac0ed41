// Numeric CSV files with a header row.
#include <ATen/ATen.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

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

}  // namespace

std::shared_ptr<TensorDataset> load_csv_dataset(const std::string& path, const std::string& label_column,
                                                at::ScalarType label_dtype) {
  std::ifstream in(path);
  require(in.good(), ErrorCode::IO, "cannot open CSV file " + path);
  std::string line;
  require(static_cast<bool>(std::getline(in, line)), ErrorCode::IO, path + ": empty file, expected a header row");
  std::vector<std::string> header = split_row(line);
  size_t label_index = header.size();
  for (size_t c = 0; c < header.size(); ++c) {
    if (header[c] == label_column) label_index = c;
  }
  require_arg(label_index < header.size(), path + ": no column named \"" + label_column + "\" in the header");
  require_arg(header.size() >= 2, path + ": needs at least one feature column besides \"" + label_column + "\"");

  std::vector<float> features;
  std::vector<double> labels;
  int64_t line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> cells = split_row(line);
    require(cells.size() == header.size(), ErrorCode::IO,
            path + ":" + std::to_string(line_number) + ": " + std::to_string(cells.size()) + " cells, the header has " +
                std::to_string(header.size()));
    for (size_t c = 0; c < cells.size(); ++c) {
      const char* text = cells[c].c_str();
      char* end = nullptr;
      errno = 0;
      double value = std::strtod(text, &end);
      require(!cells[c].empty() && *end == '\0' && errno != ERANGE, ErrorCode::IO,
              path + ":" + std::to_string(line_number) + ": column \"" + header[c] + "\" holds \"" + cells[c] +
                  "\", not a number");
      if (c == label_index) {
        require(!at::isIntegralType(label_dtype, /*includeBool=*/false) || value == static_cast<double>(static_cast<int64_t>(value)),
                ErrorCode::IO, path + ":" + std::to_string(line_number) + ": label \"" + cells[c] +
                                   "\" is not an integer, and the label dtype is integral");
        labels.push_back(value);
      } else {
        features.push_back(static_cast<float>(value));
      }
    }
  }
  const int64_t rows = static_cast<int64_t>(labels.size());
  const int64_t columns = static_cast<int64_t>(header.size()) - 1;
  at::Tensor x = at::from_blob(features.data(), {rows, columns}, at::kFloat).clone();
  at::Tensor y = at::from_blob(labels.data(), {rows}, at::kDouble).to(label_dtype);
  return std::make_shared<TensorDataset>(std::vector<at::Tensor>{x, y});
}

}  // namespace accel
