// A directory of .safetensors shards as one dataset: each shard holds the same
// named tensors, aligned on dim 0; the shards are concatenated in file-name order.
#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "formats/safetensors.hpp"
#include "formats/tensor_io.hpp"

namespace accel {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> shard_files(const std::string& dir) {
  std::error_code error;
  require(fs::is_directory(dir, error), ErrorCode::IO, "safetensors dataset: " + dir + " is not a directory");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors") files.push_back(entry.path().string());
  }
  require(!error, ErrorCode::IO, "safetensors dataset: cannot list " + dir + ": " + error.message());
  require(!files.empty(), ErrorCode::IO, "safetensors dataset: no .safetensors files in " + dir);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::shared_ptr<TensorDataset> load_safetensors_dataset(const std::string& dir,
                                                        const std::vector<std::string>& fields) {
  require_arg(!fields.empty(), "safetensors dataset: no field names given");
  std::vector<std::vector<at::Tensor>> parts(fields.size());
  for (const std::string& path : shard_files(dir)) {
    auto file = safetensors::File::open(path);
    int64_t rows = -1;
    for (size_t f = 0; f < fields.size(); ++f) {
      const safetensors::Entry* entry = file.find(fields[f]);
      require(entry != nullptr, ErrorCode::IO, "safetensors dataset: " + path + " has no tensor '" + fields[f] + "'");
      at::Tensor tensor = detail::read_tensor(file, *entry);
      require(tensor.dim() >= 1, ErrorCode::IO,
              "safetensors dataset: tensor '" + fields[f] + "' in " + path + " is a scalar; samples run along dim 0");
      if (rows < 0) rows = tensor.size(0);
      require(tensor.size(0) == rows, ErrorCode::IO,
              "safetensors dataset: in " + path + ", '" + fields[f] + "' has " + std::to_string(tensor.size(0)) +
                  " rows but '" + fields[0] + "' has " + std::to_string(rows));
      if (!parts[f].empty()) {
        const at::Tensor& first = parts[f].front();
        require(first.scalar_type() == tensor.scalar_type() && first.sizes().slice(1) == tensor.sizes().slice(1),
                ErrorCode::IO,
                "safetensors dataset: '" + fields[f] + "' in " + path + " has dtype " +
                    std::string(c10::toString(tensor.scalar_type())) + " and sample shape " +
                    c10::str(tensor.sizes().slice(1)) + ", unlike the first shard's " +
                    std::string(c10::toString(first.scalar_type())) + " " + c10::str(first.sizes().slice(1)));
      }
      parts[f].push_back(std::move(tensor));
    }
  }
  std::vector<at::Tensor> columns;
  for (auto& part : parts) columns.push_back(part.size() == 1 ? part.front() : at::cat(part, 0));
  return std::make_shared<TensorDataset>(std::move(columns));
}

}  // namespace accel
