// load_checkpoint_and_dispatch (Accelerate: big_modeling.load_checkpoint_and_dispatch
// + dispatch_model's AlignDevicesHook): tensors go where the device map says;
// "disk" tensors stay on meta and are read in just before their layer runs.
#include <ATen/ops/empty.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "formats/tensor_io.hpp"
#include "core/file_io.hpp"
#include "big_model/checkpoint_plan.hpp"
#include "big_model/dispatch.hpp"
#include "model/meta_tensors.hpp"
#include "big_model/module_tree.hpp"
#include "model/model_impl.hpp"
#include "model/script_model.hpp"
#include "model/spec/graph.hpp"

namespace accel {
namespace {

namespace fs = std::filesystem;

// Fails with IO naming the folder unless a file can be created in it (InvalidArgument, naming
// `what`, when there is no folder).
void require_writable(const std::string& folder, const std::string& what) {
  require_arg(!folder.empty(), what + ": the device map puts tensors on \"disk\" but no offload folder was given");
  std::error_code ec;
  fs::create_directories(folder, ec);
  require(!ec, ErrorCode::IO, "offload folder \"" + folder + "\" cannot be created: " + ec.message());
  const fs::path probe = fs::path(folder) / ".accel_write_probe";
  bool ok = static_cast<bool>(std::ofstream(probe) << "");
  fs::remove(probe, ec);
  require(ok, ErrorCode::IO, "offload folder \"" + folder + "\" is not writable");
}

struct OffloadedTensor {
  at::Tensor target;
  size_t file;  // index into Offload::files
  safetensors::Entry entry;
  at::ScalarType type;
  c10::Device execution;  // where it is brought in: the main GPU of a map that has one, else the CPU
};

// The top-level graph node a tensor belongs to ("h0" of "h0.linear1.weight").
std::string node_of(const std::string& tensor_name) { return tensor_name.substr(0, tensor_name.find('.')); }

// Where each graph node runs when the map holds a GPU: on its GPU; "disk"
// nodes on the main GPU (the map's first), their weights brought in there;
// "cpu" nodes on the CPU, their inputs moved over (Accelerate instead copies
// cpu weights to the main GPU for every forward). A node split between two
// of them cannot run anywhere, so that is refused, naming both.
detail::GraphModuleImpl::NodeDevices execution_devices(const std::vector<std::string>& names,
                                                       const std::vector<const std::string*>& devices,
                                                       const c10::Device& main_gpu) {
  detail::GraphModuleImpl::NodeDevices out;
  std::map<std::string, std::string> first_device;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string node = node_of(names[i]);
    const c10::Device device = *devices[i] == "disk" ? main_gpu : c10::Device(*devices[i]);
    auto [it, inserted] = out.emplace(node, device);
    if (inserted) {
      first_device[node] = *devices[i];
    } else {
      require_arg(it->second == device, "load_checkpoint_and_dispatch: the device map puts node \"" + node +
                                            "\" on both \"" + first_device[node] + "\" and \"" + *devices[i] +
                                            "\"; with a GPU in the map, each node of a JSON graph runs on one device");
    }
  }
  return out;
}

// The map's first GPU: where disk nodes are brought in and run.
c10::optional<c10::Device> main_gpu_of(const DeviceMap& device_map) {
  for (const auto& [key, device] : device_map) {
    if (device.rfind("cuda:", 0) == 0) return c10::Device(device);
  }
  return c10::nullopt;
}

// Where each node of graph (null: not a JSON graph) runs, for tensors `names`
// placed on `devices`, disk nodes on main_gpu; none without one. Throws Unsupported for
// a model that is no graph but spread over a GPU and another device.
detail::GraphModuleImpl::NodeDevices node_devices_of(const detail::GraphModuleImpl* graph,
                                                     const std::vector<std::string>& names,
                                                     const std::vector<const std::string*>& devices,
                                                     const c10::optional<c10::Device>& main_gpu) {
  if (!main_gpu) return {};
  std::set<std::string> distinct;
  for (const auto* device : devices) distinct.insert(*device);
  require(graph != nullptr || distinct.size() == 1, ErrorCode::Unsupported,
          "dispatch: a device map spreading a model over a GPU and other devices needs a JSON graph model, whose "
          "nodes move their inputs to where their weights are");
  return graph ? execution_devices(names, devices, *main_gpu) : detail::GraphModuleImpl::NodeDevices{};
}

// The graph's nodes run where node_devices says, with no hook yet. A later
// dispatch with no GPU in its map makes the model strict about input devices again.
void place_nodes(const Model& model, detail::GraphModuleImpl& graph,
                 detail::GraphModuleImpl::NodeDevices node_devices) {
  model.impl().set_inputs_on_any_device(!node_devices.empty());
  graph.set_node_devices(std::move(node_devices));
  graph.set_node_hook(nullptr);
}

// What the graph's node hook needs; lives as long as the hook.
struct Offload {
  detail::CheckpointSources checkpoint;
  std::vector<safetensors::File> written;  // cast copies in the offload folder
  std::map<std::string, std::vector<OffloadedTensor>> by_node;
  const safetensors::File& file(size_t i) const {
    return i < checkpoint.files.size() ? checkpoint.files[i] : written[i - checkpoint.files.size()];
  }
};

}  // namespace

void load_checkpoint_and_dispatch(const Model& model, const std::string& checkpoint, const DeviceMap& device_map,
                                  const std::string& offload_folder, c10::optional<c10::ScalarType> dtype) {
  static const DeviceMap everything_on_cpu{{"", "cpu"}};
  const DeviceMap& placement = device_map.empty() ? everything_on_cpu : device_map;
  if (detail::script_module_of(model.impl()) != nullptr) {
    detail::dispatch_script_checkpoint(model, checkpoint, placement, dtype, "load_checkpoint_and_dispatch");
  } else {
    detail::dispatch_checkpoint(model, checkpoint, placement, offload_folder, dtype, main_gpu_of(placement));
  }
  model.impl().set_hf_device_map(device_map);  // as Accelerate: a map only when one was given
}

DeviceMap hf_device_map(const Model& model) { return model.impl().hf_device_map(); }

namespace detail {

const std::string& device_of(const DeviceMap& map, const std::string& name) {
  const std::string* best = nullptr;
  size_t best_length = 0;
  for (const auto& [key, device] : map) {
    bool covers = key.empty() || key == name || name.rfind(key + ".", 0) == 0;
    if (covers && (best == nullptr || key.size() >= best_length)) best = &device, best_length = key.size();
  }
  require_arg(best != nullptr, "load_checkpoint_and_dispatch: the device map does not cover tensor \"" + name + "\"");
  return *best;
}

void dispatch_checkpoint(const Model& model, const std::string& checkpoint, const DeviceMap& device_map,
                         const std::string& offload_folder, c10::optional<c10::ScalarType> dtype,
                         const c10::optional<c10::Device>& main_gpu) {
  auto root = detail::module_of(model, "load_checkpoint_and_dispatch");
  verify_device_map(model, device_map);
  auto offload = std::make_shared<Offload>();
  offload->checkpoint = detail::open_checkpoint(checkpoint);
  // Everything is checked before the first tensor changes: presence, shapes, kinds, devices, the folder.
  auto plan = detail::plan_checkpoint(*root, offload->checkpoint, checkpoint, dtype);
  std::vector<const std::string*> devices;
  bool any_disk = false;
  for (const auto& step : plan) {
    devices.push_back(&detail::device_of(device_map, step.name));
    any_disk = any_disk || *devices.back() == "disk";
  }
  auto graph = std::dynamic_pointer_cast<detail::GraphModuleImpl>(root);
  std::vector<std::string> names;
  for (const auto& step : plan) names.push_back(step.name);
  detail::GraphModuleImpl::NodeDevices node_devices = node_devices_of(graph.get(), names, devices, main_gpu);
  const c10::Device execution = main_gpu.value_or(c10::Device(c10::kCPU));
  if (any_disk) {
    require(graph != nullptr, ErrorCode::Unsupported,
            "load_checkpoint_and_dispatch: disk offload needs a JSON graph model (\"inputs\"/\"nodes\"), whose nodes "
            "bring their weights in before they run");
    require_writable(offload_folder, "load_checkpoint_and_dispatch");
  }
  // Disk tensors first (writing cast copies and the index changes no tensor), then the model.
  // Accelerate's offload_index.json: tensor -> dtype, shape and where its bytes are.
  nlohmann::ordered_json index = nlohmann::ordered_json::object();
  std::vector<OffloadedTensor> offloaded;
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& step = plan[i];
    if (*devices[i] != "disk") continue;
    OffloadedTensor tensor{step.target, 0, *step.entry, step.type, execution};
    std::string file_path = step.file->label();
    if (detail::scalar_type_of(*step.entry, step.file->label()) == step.type && step.file->mapped()) {
      // Already safetensors of the right dtype: read straight from the checkpoint, nothing written.
      tensor.file = static_cast<size_t>(step.file - offload->checkpoint.files.data());
    } else {
      file_path = (fs::path(offload_folder) / (step.name + ".safetensors")).string();
      detail::write_file_atomically(
          file_path,
          detail::serialize_tensors({{step.name, detail::load_planned(*step.file, *step.entry, step.type)}}, {}));
      offload->written.push_back(safetensors::File::open(file_path));
      tensor.file = offload->checkpoint.files.size() + offload->written.size() - 1;
      tensor.entry = *offload->written.back().find(step.name);
    }
    index[step.name] = {{"dtype", detail::safetensors_dtype(step.type)},
                        {"shape", step.target.sizes().vec()},
                        {"safetensors_file", file_path},
                        {"weight_name", step.name}};
    offloaded.push_back(std::move(tensor));
  }
  if (any_disk) {
    detail::write_file_atomically((fs::path(offload_folder) / "offload_index.json").string(), index.dump(2));
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& step = plan[i];
    if (*devices[i] == "disk") continue;
    at::Tensor loaded = detail::load_planned(*step.file, *step.entry, step.type);
    if (*devices[i] != "cpu") loaded = loaded.to(c10::Device(*devices[i]));  // verify_device_map checked the GPU
    detail::replace_tensor_contents(step.target, loaded);
  }
  for (auto& tensor : offloaded) {
    detail::to_meta(tensor.target, tensor.type);
    const std::string name = tensor.entry.name;
    offload->by_node[node_of(name)].push_back(std::move(tensor));
  }
  if (!graph) return;
  place_nodes(model, *graph, std::move(node_devices));
  if (offload->by_node.empty()) return;
  graph->set_node_hook([offload](const std::string& node, bool entering) {
    auto it = offload->by_node.find(node);
    if (it == offload->by_node.end()) return;
    for (auto& tensor : it->second) {
      if (entering) {
        at::Tensor loaded = detail::load_planned(offload->file(tensor.file), tensor.entry, tensor.type);
        if (tensor.execution != loaded.device()) loaded = loaded.to(tensor.execution);
        detail::replace_tensor_contents(tensor.target, loaded);
      } else {
        detail::to_meta(tensor.target, tensor.type);
      }
    }
    // Hand the layer's freed buffers back to the system now, rather than
    // leaving them in glibc's heap (see sequential_spec.cpp).
    if (!entering) malloc_trim(0);
  });
}

c10::Device parse_execution_device(const std::string& name, const std::string& what, const c10::Device& fallback) {
  if (name.empty()) return fallback;
  if (name == "cpu") return c10::Device(c10::kCPU);
  const std::string digits = name.rfind("cuda:", 0) == 0 ? name.substr(5) : name;
  const bool number = !digits.empty() && digits.size() <= 6 && std::all_of(digits.begin(), digits.end(), ::isdigit);
  require_arg(number, what + ": unknown execution_device \"" + name + "\" (expected \"cpu\" or \"cuda:N\")");
  const int gpus = static_cast<int>(torch::cuda::device_count());
  const int index = std::stoi(digits);
  require_arg(index < gpus,
              what + ": execution_device \"" + name + "\" but this machine has " + std::to_string(gpus) + " GPU(s)");
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string write_offload_weights(const std::string& folder,
                                  const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  const std::string weights = (fs::path(folder) / "model.safetensors").string();
  AtomicFileWriter out(weights);
  write_tensors(out, tensors, {{"format", "pt"}});
  out.commit();
  return weights;
}

}  // namespace detail

void dispatch_model(const Model& model, const DeviceMap& device_map, const std::string& offload_dir) {
  auto root = detail::module_of(model, "dispatch_model");
  verify_device_map(model, device_map);
  const auto tensors = detail::named_module_tensors(*root);
  for (const auto& [name, tensor] : tensors) {
    require_arg(!tensor.is_meta(), "dispatch_model: \"" + name +
                                       "\" has no data (the meta device): load the weights first, or place an empty "
                                       "model with load_checkpoint_and_dispatch");
  }
  std::vector<std::string> names;
  std::vector<const std::string*> devices;
  bool any_disk = false;
  for (const auto& [name, tensor] : tensors) {
    names.push_back(name);
    devices.push_back(&detail::device_of(device_map, name));
    any_disk = any_disk || *devices.back() == "disk";
  }
  auto graph = std::dynamic_pointer_cast<detail::GraphModuleImpl>(root);
  if (any_disk) {
    // Disk tensors are read from a file around their node's forward: the
    // model's weights become that file, placed as a checkpoint would be.
    require(graph != nullptr, ErrorCode::Unsupported,
            "dispatch_model: disk offload needs a JSON graph model (\"inputs\"/\"nodes\"), whose nodes bring their "
            "weights in before they run");
    require_writable(offload_dir, "dispatch_model");
    load_checkpoint_and_dispatch(model, detail::write_offload_weights(offload_dir, tensors), device_map, offload_dir);
    return;
  }
  detail::GraphModuleImpl::NodeDevices node_devices =
      node_devices_of(graph.get(), names, devices, main_gpu_of(device_map));
  // Every copy is made before the first tensor changes (a GPU may run out of memory).
  std::vector<at::Tensor> moved;
  for (size_t i = 0; i < tensors.size(); ++i) moved.push_back(tensors[i].second.to(c10::Device(*devices[i])));
  for (size_t i = 0; i < tensors.size(); ++i) detail::replace_tensor_contents(tensors[i].second, moved[i]);
  if (graph) place_nodes(model, *graph, std::move(node_devices));
  model.impl().set_hf_device_map(device_map);
}

}  // namespace accel
