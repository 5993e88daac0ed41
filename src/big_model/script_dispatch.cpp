// materialize and load_checkpoint_and_dispatch for a TorchScript model, such
// as an empty one (model_from_torchscript_empty): its tensors are filled from
// a safetensors checkpoint by name, each module's own tensors where the device
// map puts them. "disk" tensors stay on meta and are read from the checkpoint
// around each call of the submodule that holds them (script_offload.hpp's
// hooks, as disk_offload brings a loaded model's weights in).
#include <torch/csrc/jit/api/module.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/checkpoint_plan.hpp"
#include "big_model/dispatch.hpp"
#include "formats/tensor_io.hpp"
#include "model/meta_tensors.hpp"
#include "model/model_impl.hpp"
#include "model/nn_module_of.hpp"
#include "model/script_model.hpp"
#include "model/script_offload.hpp"

namespace accel::detail {

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// One tensor of the module tree (a tied one is held by several modules).
struct ScriptTensor {
  at::Tensor target;
  bool buffer = false;
  std::vector<std::string> names;    // first: the name the map and messages use
  std::vector<std::string> holders;  // module paths that hold it as their own ("" the root)
};

std::vector<ScriptTensor> script_tensors(const torch::jit::Module& module, std::set<std::string>& module_paths) {
  std::vector<ScriptTensor> out;
  std::unordered_map<const void*, size_t> index;
  for (const auto& item : module.named_modules()) {
    module_paths.insert(item.name);
    const auto add = [&](const std::string& name, const at::Tensor& tensor, bool buffer) {
      if (!tensor.defined()) return;
      auto [it, added] = index.emplace(tensor.unsafeGetTensorImpl(), out.size());
      if (added) out.push_back(ScriptTensor{tensor, buffer, {}, {}});
      out[it->second].names.push_back(join(item.name, name));
      out[it->second].holders.push_back(item.name);
    };
    for (const auto& p : item.value.named_parameters(false)) add(p.name, p.value, false);
    for (const auto& b : item.value.named_buffers(false)) add(b.name, b.value, true);
  }
  return out;
}

// The map's checks (verify_device_map's, over the TorchScript module's names),
// after refusing a GPU: a TorchScript model's offloaded submodules run on the CPU.
void check_map(const DeviceMap& map, const std::set<std::string>& module_paths,
               const std::vector<ScriptTensor>& tensors, const std::string& what) {
  for (const auto& [key, device] : map) {
    require(device != "cuda" && device.rfind("cuda:", 0) != 0, ErrorCode::Unsupported,
            what + ": device map puts \"" + key + "\" on \"" + device +
                "\"; a TorchScript model is placed on \"cpu\" and \"disk\" only (its offloaded submodules run on "
                "the CPU); move it to the GPU after loading");
  }
  std::set<std::string> known = module_paths;
  std::vector<std::string> first_names;
  for (const auto& tensor : tensors) {
    known.insert(tensor.names.begin(), tensor.names.end());
    first_names.push_back(tensor.names.front());
  }
  verify_device_map_over(known, first_names, map);
}

struct Source {
  const safetensors::File* file = nullptr;
  const safetensors::Entry* entry = nullptr;
};

Source find_in(const CheckpointSources& sources, const ScriptTensor& tensor) {
  for (const auto& name : tensor.names) {  // a tied tensor: any of its names (transformers keeps one)
    if (auto it = sources.file_of.find(name); it != sources.file_of.end()) {
      if (const auto* entry = sources.files[it->second].find(name)) return {&sources.files[it->second], entry};
    } else if (sources.file_of.empty()) {
      if (const auto* entry = sources.files.front().find(name)) return {&sources.files.front(), entry};
    }
  }
  return {};
}

}  // namespace

void dispatch_script_checkpoint(const Model& model, const std::string& checkpoint, const DeviceMap& device_map,
                                c10::optional<c10::ScalarType> dtype, const std::string& what) {
  torch::jit::Module* module = script_module_of(model.impl());
  require(module != nullptr, ErrorCode::Internal, what + ": not a TorchScript model");
  std::set<std::string> module_paths;
  const std::vector<ScriptTensor> tensors = script_tensors(*module, module_paths);
  if (!device_map.empty()) check_map(device_map, module_paths, tensors, what);
  auto sources = std::make_shared<CheckpointSources>(open_checkpoint(checkpoint));

  // Everything is checked before the first tensor changes.
  struct Step {
    const ScriptTensor* tensor;
    Source source;
    at::ScalarType type;
    bool disk;
  };
  std::vector<Step> steps;
  std::map<std::string, std::vector<size_t>> disk_by_holder;
  for (const auto& tensor : tensors) {
    const std::string& name = tensor.names.front();
    const Source source = find_in(*sources, tensor);
    if (source.entry == nullptr) {
      // A buffer the checkpoint lacks (transformers leaves non-persistent ones out) keeps its values.
      require_arg(tensor.buffer && !tensor.target.is_meta(),
                  what + ": checkpoint \"" + checkpoint + "\" has no tensor \"" + name + "\"");
      continue;
    }
    require_arg(at::IntArrayRef(source.entry->shape) == tensor.target.sizes(),
                what + ": tensor \"" + name + "\" has shape " + c10::str(at::IntArrayRef(source.entry->shape)) +
                    " in \"" + source.file->label() + "\" but " + c10::str(tensor.target.sizes()) + " in the model");
    const at::ScalarType stored = scalar_type_of(*source.entry, source.file->label());
    const at::ScalarType type =
        dtype && at::isFloatingType(tensor.target.scalar_type()) ? *dtype : tensor.target.scalar_type();
    require_arg(at::isFloatingType(stored) == at::isFloatingType(type),
                what + ": tensor \"" + name + "\" is " + c10::toString(stored) + " in \"" + source.file->label() +
                    "\" but " + c10::toString(type) + " in the model");
    // The root module's own tensors cannot be brought in around a call of it: they stay in memory.
    const bool disk = !device_map.empty() && device_of(device_map, name) == "disk" &&
                      std::none_of(tensor.holders.begin(), tensor.holders.end(),
                                   [](const std::string& holder) { return holder.empty(); });
    if (disk) {
      for (const auto& holder : tensor.holders) disk_by_holder[holder].push_back(steps.size());
    }
    steps.push_back(Step{&tensor, source, type, disk});
  }
  torch::jit::Module* rewritable = nullptr;
  if (!disk_by_holder.empty()) {
    rewritable = script_module_for_rewrite(model.impl(), what);
    std::vector<std::string> paths;
    for (const auto& entry : disk_by_holder) paths.push_back(entry.first);
    check_hookable_submodules(*rewritable, paths);
  }

  // Nothing can fail from here but reading the checkpoint.
  for (const auto& step : steps) {
    if (step.disk) continue;
    replace_tensor_contents(step.tensor->target, load_planned(*step.source.file, *step.source.entry, step.type));
  }
  if (rewritable == nullptr) return;
  std::map<std::string, SubmoduleHook> hooks;
  for (const auto& [holder, indices] : disk_by_holder) {
    std::vector<DiskTensor> tensors;
    for (size_t i : indices) {
      tensors.push_back({steps[i].tensor->target, steps[i].source.file, *steps[i].source.entry, steps[i].type});
    }
    hooks.emplace(holder, [sources, tensors](bool entering) {  // sources: the mapped files stay open
      for (const auto& tensor : tensors) swap_disk_tensor(tensor, entering);
    });
  }
  for (const auto& step : steps) {
    if (step.disk) to_meta(step.tensor->target, step.type);
  }
  hook_script_submodules(*rewritable, hooks, &model.impl());
}

}  // namespace accel::detail
