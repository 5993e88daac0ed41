#include "formats/model_weights.hpp"

#include <ATen/ATen.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "accel/error.hpp"
#include "formats/tensor_io.hpp"
#include "formats/torch_pickle.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"

namespace fs = std::filesystem;

namespace accel::detail {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool is_pickle_name(const std::string& path) {
  return ends_with(path, ".bin") || ends_with(path, ".pt") || ends_with(path, ".pth");
}

// A shard named by an index must be a file in the index's own directory: a
// name with a path in it, or a symlink leading elsewhere, could make a
// downloaded checkpoint read any file the process can.
std::string shard_path(const std::string& index_path, const std::string& base, const std::string& key,
                       const std::string& name) {
  require(!name.empty() && name.find('/') == std::string::npos && name != "." && name != "..", ErrorCode::IO,
          index_path + ": weight_map[\"" + key + "\"] names \"" + name +
              "\", which is not a file name in the index's directory");
  const std::string path = base + "/" + name;
  std::error_code error;
  const fs::path real = fs::canonical(path, error);
  require(!error, ErrorCode::IO, "cannot open " + path + " (named by " + index_path + "): " + error.message());
  const fs::path real_base = fs::canonical(base, error);
  require(!error && real.parent_path() == real_base, ErrorCode::IO,
          index_path + ": weight_map[\"" + key + "\"] names " + path + ", which leads outside the directory (to " +
              real.string() + ")");
  return path;
}

}  // namespace

ModelWeights ModelWeights::open(const std::string& path) {
  ModelWeights weights;
  if (!ends_with(path, ".json")) {
    if (is_pickle_name(path)) {
      weights.add_pickle(path);
    } else {
      weights.add_safetensors(path);
    }
    return weights;
  }
  nlohmann::json index = parse_json(read_regular_file(path), path, ErrorCode::IO);
  require(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(), ErrorCode::IO,
          path + ": not a model index (no weight_map object)");
  std::string base = fs::path(path).parent_path().string();
  if (base.empty()) base = ".";
  std::set<std::string> shards;
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    require(it.value().is_string(), ErrorCode::IO, path + ": weight_map[\"" + it.key() + "\"] is not a file name");
    shards.insert(shard_path(path, base, it.key(), it.value().get<std::string>()));
  }
  for (const auto& shard : shards) {
    if (is_pickle_name(shard)) {
      weights.add_pickle(shard);
    } else {
      weights.add_safetensors(shard);
    }
  }
  return weights;
}

void ModelWeights::add(const std::string& name, Tensor t) {
  auto [it, inserted] = tensors_.emplace(name, t);
  require(inserted, ErrorCode::IO, "tensor \"" + name + "\" appears in both " + it->second.file + " and " + t.file);
}

void ModelWeights::add_safetensors(const std::string& path) {
  files_.push_back(std::make_unique<safetensors::File>(safetensors::File::open(path)));
  const safetensors::File& file = *files_.back();
  for (const auto& entry : file.entries()) {
    Tensor t;
    t.file = file.label();
    t.shape = entry.shape;
    t.dtype = entry.dtype;
    t.entry = &entry;
    t.file_index = files_.size() - 1;
    add(entry.name, std::move(t));
  }
}

void ModelWeights::add_pickle(const std::string& path) {
  const c10::IValue dict = read_torch_save(read_regular_file(path), path);
  require(dict.isGenericDict(), ErrorCode::IO, path + " holds a " + dict.tagKind() + ", not a state dict");
  for (const auto& item : dict.toGenericDict()) {
    require(item.key().isString(), ErrorCode::IO,
            path + " has a key of type " + item.key().tagKind() + ", not a tensor name");
    const std::string& name = item.key().toStringRef();
    require(item.value().isTensor(), ErrorCode::IO,
            path + ": \"" + name + "\" is a " + item.value().tagKind() + ", not a tensor");
    Tensor t;
    t.file = path;
    t.pickled = item.value().toTensor();
    t.shape = t.pickled.sizes().vec();
    t.dtype = safetensors_dtype(t.pickled.scalar_type());
    add(name, std::move(t));
  }
}

at::ScalarType ModelWeights::scalar_type(const Tensor& t) const {
  return t.entry ? scalar_type_of(*t.entry, t.file) : t.pickled.scalar_type();
}

at::Tensor ModelWeights::values(const Tensor& t) const {
  return t.entry ? mapped_tensor(*files_[t.file_index], *t.entry) : t.pickled;
}

}  // namespace accel::detail
