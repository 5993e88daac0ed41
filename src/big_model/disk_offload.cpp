// Accelerate's disk_offload: a loaded model's weights written to a folder and
// streamed back around each node's forward: for a JSON graph by
// load_checkpoint_and_dispatch with the whole model on "disk", for a
// TorchScript model around each call of a submodule that holds tensors.
#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>

#include <filesystem>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/checkpoint_plan.hpp"
#include "big_model/dispatch.hpp"
#include "big_model/module_tree.hpp"
#include "core/file_io.hpp"
#include "formats/tensor_io.hpp"
#include "model/meta_tensors.hpp"
#include "model/model_impl.hpp"
#include "model/nn_module_of.hpp"
#include "model/script_offload.hpp"
#include "model/spec/graph.hpp"

namespace accel {
namespace {

namespace fs = std::filesystem;

void create_folder(const std::string& offload_dir) {
  std::error_code ec;
  fs::create_directories(offload_dir, ec);
  require(!ec, ErrorCode::IO, "disk_offload: \"" + offload_dir + "\" cannot be created: " + ec.message());
}

// A TorchScript model: every submodule holding tensors of its own gets them
// back from offload_dir/model.safetensors just before each of its forwards and
// returns them to meta right after (the root module's own tensors stay).
void disk_offload_script(torch::jit::Module& module, const detail::ModelImpl* owner, const std::string& offload_dir) {
  struct Owned {
    std::vector<std::string> names;  // each tensor's first name (its entry in the file)
    std::vector<at::Tensor> tensors;
  };
  std::unordered_set<const void*> root_tensors;
  for (const auto& item : module.named_parameters(false)) root_tensors.insert(item.value.unsafeGetTensorImpl());
  for (const auto& item : module.named_buffers(false)) root_tensors.insert(item.value.unsafeGetTensorImpl());
  std::map<std::string, Owned> owners;                     // by submodule path
  std::vector<std::pair<std::string, at::Tensor>> unique;  // what the file holds
  std::unordered_map<const void*, std::string> first_name;
  for (const auto& item : module.named_modules()) {
    if (item.name.empty()) continue;
    Owned owned;
    const auto add = [&](const std::string& name, const at::Tensor& tensor) {
      const void* impl = tensor.unsafeGetTensorImpl();
      if (!tensor.defined() || root_tensors.count(impl)) return;  // the root reads these itself
      const std::string full = item.name + "." + name;
      require_arg(!tensor.is_meta(), "disk_offload: \"" + full +
                                         "\" has no data (the meta device): load the weights "
                                         "first (a TorchScript model is offloaded once)");
      auto [it, added] = first_name.emplace(impl, full);
      if (added) unique.emplace_back(full, tensor);
      owned.names.push_back(it->second);
      owned.tensors.push_back(tensor);
    };
    for (const auto& p : item.value.named_parameters(false)) add(p.name, p.value);
    for (const auto& b : item.value.named_buffers(false)) add(b.name, b.value);
    if (!owned.tensors.empty()) owners.emplace(item.name, std::move(owned));
  }
  std::vector<std::string> paths;
  for (const auto& entry : owners) paths.push_back(entry.first);
  detail::check_hookable_submodules(module, paths);  // before anything is written
  create_folder(offload_dir);
  const std::string weights = detail::write_offload_weights(offload_dir, unique);
  auto file = std::make_shared<safetensors::File>(safetensors::File::open(weights));
  std::map<std::string, detail::SubmoduleHook> hooks;
  for (auto& [path, owned] : owners) {
    std::vector<detail::DiskTensor> tensors;
    for (size_t i = 0; i < owned.names.size(); ++i) {
      tensors.push_back({owned.tensors[i], file.get(), *file->find(owned.names[i]), owned.tensors[i].scalar_type()});
    }
    hooks.emplace(path, [file, tensors](bool entering) {
      for (const auto& tensor : tensors) detail::swap_disk_tensor(tensor, entering);
    });
  }
  // Nothing can fail from here: the tensors leave memory and the calls are hooked.
  for (auto& [name, tensor] : unique) detail::to_meta(tensor);
  detail::hook_script_submodules(module, hooks, owner);
}

}  // namespace

void disk_offload(const Model& model, const std::string& offload_dir) { disk_offload(model, offload_dir, "cpu"); }

void disk_offload(const Model& model, const std::string& offload_dir, const std::string& execution_device) {
  require_arg(!offload_dir.empty(), "disk_offload: offload_dir is empty");
  const c10::Device execution =
      detail::parse_execution_device(execution_device, "disk_offload", c10::Device(c10::kCPU));
  if (auto* script = detail::script_module_for_rewrite(model.impl(), "disk_offload")) {
    require(execution.is_cpu(), ErrorCode::Unsupported,
            "disk_offload: a TorchScript model's offloaded submodules run on the CPU; execution_device \"" +
                execution_device + "\" needs a JSON graph model");
    disk_offload_script(*script, &model.impl(), offload_dir);
    return;
  }
  auto root = detail::module_of(model, "disk_offload");
  // Checked before anything is written: the hook that brings weights in is a JSON graph's.
  require(std::dynamic_pointer_cast<detail::GraphModuleImpl>(root) != nullptr, ErrorCode::Unsupported,
          "disk_offload: needs a JSON graph model (\"inputs\"/\"nodes\"), whose nodes bring their weights in "
          "before they run");
  const auto tensors = detail::named_module_tensors(*root);
  for (const auto& [name, tensor] : tensors) {
    require_arg(!tensor.is_meta(), "disk_offload: \"" + name +
                                       "\" has no data (the meta device): load the weights first "
                                       "(load_checkpoint_and_dispatch offloads an empty model from a checkpoint)");
  }
  create_folder(offload_dir);
  // One safetensors file of the weights as they are: the dispatch maps it and
  // reads each tensor from it, casting nothing and writing no copy.
  const std::string weights = detail::write_offload_weights(offload_dir, tensors);
  // Every node is brought in, and runs, on the execution device.
  detail::dispatch_checkpoint(model, weights, {{"", "disk"}}, offload_dir, {},
                              execution.is_cuda() ? c10::optional<c10::Device>(execution) : c10::nullopt);
}

}  // namespace accel
