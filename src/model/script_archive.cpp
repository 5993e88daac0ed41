#include "model/script_archive.hpp"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <utility>
#include <vector>

#include "accel/error.hpp"
#include "formats/torch_archive.hpp"
#include "formats/torch_pickle.hpp"
#include "model/meta_tensors.hpp"

namespace accel::detail {

namespace {

// A module object of data.pkl is a dict of its attributes tagged "__class__"
// (PickleVocabulary::TorchScriptModule); submodules are such dicts again.
bool is_module_object(const c10::IValue& value) {
  return value.isGenericDict() && value.toGenericDict().contains("__class__");
}

void collect(const c10::impl::GenericDict& object, const std::string& prefix, std::map<std::string, at::Tensor>& out) {
  for (const auto& item : object) {
    if (!item.key().isString() || item.key().toStringRef() == "__class__") continue;
    const std::string name = prefix.empty() ? item.key().toStringRef() : prefix + "." + item.key().toStringRef();
    if (item.value().isTensor()) {
      out.emplace(name, item.value().toTensor());
    } else if (is_module_object(item.value())) {
      collect(item.value().toGenericDict(), name, out);  // depth bounded by the reader (256)
    }
  }
}

}  // namespace

std::map<std::string, at::Tensor> script_archive_tensors(const std::string& path) {
  const std::string label = "TorchScript file \"" + path + "\"";
  const c10::IValue root = read_torch_save_file(path, label, PickleVocabulary::TorchScriptModule, StorageReads::Map);
  require(is_module_object(root), ErrorCode::IO, label + ": data.pkl does not hold a module object");
  std::map<std::string, at::Tensor> out;
  collect(root.toGenericDict(), "", out);
  return out;
}

torch::jit::Module load_script_module_empty(const std::string& path,
                                            std::unordered_map<std::string, std::string>& extra_files) {
  const std::string label = "TorchScript file \"" + path + "\"";
  const std::shared_ptr<ArchiveFile> file = ArchiveFile::open(path);
  const std::map<std::string, uint64_t> records = stored_records(*file, label, CompressedRecords::LeftOutOutsideData);
  std::map<uint64_t, uint64_t> skipped;
  try {
    caffe2::serialize::PyTorchStreamReader reader(file->adapter());
    for (const auto& [name, size] : records) {
      // "<archive>/data/<key>": a storage of data.pkl (constants/ are read as usual).
      const size_t slash = name.find('/');
      if (slash == std::string::npos || name.compare(slash + 1, 5, "data/") != 0 || size == 0) continue;
      const std::string record = name.substr(slash + 1);
      if (record.find('/', 5) != std::string::npos) continue;
      const uint64_t offset = reader.getRecordOffset(record);
      skipped.emplace(offset, offset + size);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(ErrorCode::IO, label + ": not a readable TorchScript archive (" + message.substr(0, message.find('\n')) + ")");
  }
  torch::jit::Module module = torch::jit::load(file->adapter_skipping(std::move(skipped)), c10::nullopt, extra_files);
  // The storages were never read: parameters go to meta before anything can read them, and
  // fill_script_buffers gives the buffers their values (it checks them all before any changes).
  for (const auto& item : module.named_parameters(true)) {
    if (item.value.defined()) to_meta(item.value);
  }
  fill_script_buffers(module, path);
  return module;
}

void fill_script_buffers(torch::jit::Module& module, const std::string& path) {
  const std::string label = "TorchScript file \"" + path + "\"";
  const std::map<std::string, at::Tensor> stored = script_archive_tensors(path);
  std::vector<std::pair<at::Tensor, at::Tensor>> fills;
  for (const auto& item : module.named_buffers(true)) {
    if (!item.value.defined()) continue;
    auto it = stored.find(item.name);
    require(it != stored.end(), ErrorCode::IO, label + ": its data.pkl holds no buffer \"" + item.name + "\"");
    require(it->second.sizes() == item.value.sizes() && it->second.scalar_type() == item.value.scalar_type(),
            ErrorCode::IO,
            label + ": buffer \"" + item.name + "\" is " + c10::toString(it->second.scalar_type()) +
                c10::str(it->second.sizes()) + " in data.pkl but " + c10::toString(item.value.scalar_type()) +
                c10::str(item.value.sizes()) + " in the module");
    fills.emplace_back(item.value, it->second);
  }
  // Copied out of the mapping: the file may change or go once the model is loaded.
  for (auto& [buffer, values] : fills) replace_tensor_contents(buffer, values.clone());
}

}  // namespace accel::detail
