// Materialising a model (Accelerate: load_checkpoint_in_model after init_empty_weights): an empty (meta) or
// loaded model gets its weights from a memory-mapped file or sharded index,
// tensor by tensor, so memory holds the model plus one tensor in flight.
#include <ATen/ops/empty.h>
#include <sys/mman.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "formats/tensor_io.hpp"
#include "big_model/checkpoint_plan.hpp"
#include "big_model/dispatch.hpp"
#include "model/script_model.hpp"
#include "model/meta_tensors.hpp"
#include "big_model/module_tree.hpp"

namespace accel::detail {

namespace fs = std::filesystem;

CheckpointSources open_checkpoint(const std::string& checkpoint) {
  require_arg(!checkpoint.empty(), "materialize: the checkpoint path is empty");
  fs::path path(checkpoint);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "model.safetensors.index.json", ec)) {
      path /= "model.safetensors.index.json";
    } else {
      path /= "model.safetensors";
    }
  }
  require(fs::exists(path, ec), ErrorCode::IO, "checkpoint \"" + path.string() + "\" does not exist");
  CheckpointSources sources;
  if (path.extension() != ".json") {
    sources.files.push_back(safetensors::File::open(path.string()));
    return sources;
  }
  // A sharded checkpoint: {"weight_map": {"name": "model-00001-of-00002.safetensors", ...}}.
  nlohmann::json index;
  try {
    std::ifstream in(path);
    index = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    fail(ErrorCode::IO, "checkpoint index \"" + path.string() + "\" is not JSON: " + e.what());
  }
  require(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(), ErrorCode::IO,
          "checkpoint index \"" + path.string() + "\" has no \"weight_map\" object");
  std::map<std::string, size_t> shard_index;
  for (const auto& item : index["weight_map"].items()) {
    require(item.value().is_string(), ErrorCode::IO,
            "checkpoint index \"" + path.string() + "\": weight_map[\"" + item.key() + "\"] is not a file name");
    const std::string shard = item.value().get<std::string>();
    require(shard.find('/') == std::string::npos && shard != ".." && !shard.empty(), ErrorCode::IO,
            "checkpoint index \"" + path.string() + "\": shard \"" + shard + "\" is not a file name in its directory");
    auto [it, added] = shard_index.emplace(shard, sources.files.size());
    if (added) sources.files.push_back(safetensors::File::open((path.parent_path() / shard).string()));
    sources.file_of[item.key()] = it->second;
  }
  return sources;
}

std::vector<PlannedTensor> plan_checkpoint(const torch::nn::Module& root, const CheckpointSources& sources,
                                           const std::string& checkpoint, c10::optional<c10::ScalarType> dtype) {
  std::vector<PlannedTensor> plan;
  for (const auto& [name, tensor] : named_module_tensors(root)) {
    const safetensors::Entry* entry = nullptr;
    const safetensors::File* file = nullptr;
    if (auto it = sources.file_of.find(name); it != sources.file_of.end()) {
      file = &sources.files[it->second];
      entry = file->find(name);
    } else if (sources.file_of.empty()) {
      file = &sources.files.front();
      entry = file->find(name);
    }
    require_arg(entry != nullptr, "materialize: checkpoint \"" + checkpoint + "\" has no tensor \"" + name + "\"");
    require_arg(at::IntArrayRef(entry->shape) == tensor.sizes(),
                "materialize: tensor \"" + name + "\" has shape " + c10::str(at::IntArrayRef(entry->shape)) + " in \"" +
                    file->label() + "\" but " + c10::str(tensor.sizes()) + " in the model");
    const at::ScalarType stored = detail::scalar_type_of(*entry, file->label());
    // Like Accelerate: dtype applies to floating tensors; others keep the model's.
    at::ScalarType type = dtype && at::isFloatingType(tensor.scalar_type()) ? *dtype : tensor.scalar_type();
    require_arg(at::isFloatingType(stored) == at::isFloatingType(type),
                "materialize: tensor \"" + name + "\" is " + c10::toString(stored) + " in \"" + file->label() +
                    "\" but " + c10::toString(type) + " in the model");
    plan.push_back({name, tensor, file, entry, type});
  }
  return plan;
}

at::Tensor load_planned(const safetensors::File& file, const safetensors::Entry& entry, at::ScalarType type) {
  at::Tensor loaded = mapped_tensor(file, entry).to(type, /*non_blocking=*/false, /*copy=*/true);
  // Clean file-backed pages: dropping them loses nothing (they are read again if needed).
  if (!file.mapped()) return loaded;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  auto begin = reinterpret_cast<uintptr_t>(file.data(entry));
  auto end = begin + (entry.end - entry.begin);
  begin &= ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  return loaded;
}

void swap_disk_tensor(const DiskTensor& tensor, bool entering) {
  if (entering) {
    replace_tensor_contents(tensor.target, load_planned(*tensor.file, tensor.entry, tensor.type));
  } else {
    to_meta(tensor.target, tensor.type);
  }
}

}  // namespace accel::detail

namespace accel {

void materialize(const Model& model, const std::string& checkpoint, c10::optional<c10::ScalarType> dtype) {
  if (detail::script_module_of(model.impl()) != nullptr) {
    detail::dispatch_script_checkpoint(model, checkpoint, {}, dtype, "materialize");
    return;
  }
  auto root = detail::module_of(model, "materialize");
  detail::CheckpointSources sources = detail::open_checkpoint(checkpoint);
  // Every tensor is found and checked before the first one is replaced.
  auto plan = detail::plan_checkpoint(*root, sources, checkpoint, dtype);
  for (auto& step : plan) {
    detail::replace_tensor_contents(step.target, detail::load_planned(*step.file, *step.entry, step.type));
  }
}

}  // namespace accel
