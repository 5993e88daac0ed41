// Accelerate's cpu_offload: a model's weights live in host memory and each
// graph node's are copied to the execution device just before the node runs,
// then dropped there right after, so the device holds one node's weights at a
// time. Built on the JSON graph's node hook, as disk offload is.
#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/dispatch.hpp"
#include "big_model/module_tree.hpp"
#include "model/meta_tensors.hpp"
#include "model/model_impl.hpp"
#include "model/spec/graph.hpp"

namespace accel {
namespace {

// One tensor of the model: its host copy and the nodes that use it (a tied
// weight is used by two).
struct HostTensor {
  at::Tensor target;  // the parameter or buffer the model holds
  at::Tensor home;    // its host storage (pinned when the execution device is a GPU)
};

struct Offloaded {
  c10::Device execution{c10::kCPU};
  std::vector<HostTensor> tensors;
  std::map<std::string, std::vector<size_t>> by_node;  // node -> indices into tensors
};

}  // namespace

void cpu_offload(const Model& model, const std::string& execution_device, bool offload_buffers) {
  auto root = detail::module_of(model, "cpu_offload");
  auto graph = std::dynamic_pointer_cast<detail::GraphModuleImpl>(root);
  // Everything is checked before a tensor moves.
  require(graph != nullptr, ErrorCode::Unsupported,
          "cpu_offload: needs a JSON graph model (\"inputs\"/\"nodes\"), whose nodes bring their weights in before "
          "they run");
  const auto tensors = detail::named_module_tensors(*root);
  for (const auto& [name, tensor] : tensors) {
    require_arg(!tensor.is_meta(), "cpu_offload: \"" + name +
                                       "\" has no data (the meta device): load the weights first "
                                       "(load_checkpoint_and_dispatch with a device map offloads an empty model)");
  }
  // As Accelerate takes next(model.parameters()).device when none is named.
  const c10::Device execution = detail::parse_execution_device(
      execution_device, "cpu_offload", tensors.empty() ? c10::Device(c10::kCPU) : tensors.front().second.device());
  std::set<const void*> buffers;
  for (const auto& item : root->named_buffers(true)) buffers.insert(item.value().unsafeGetTensorImpl());

  auto offload = std::make_shared<Offloaded>();
  offload->execution = execution;
  std::unordered_map<const void*, size_t> index_of;
  const auto collect = [&](const std::string& name, const at::Tensor& tensor) {
    if (!tensor.defined()) return;
    const void* impl = tensor.unsafeGetTensorImpl();
    if (!offload_buffers && buffers.count(impl)) return;
    auto [it, added] = index_of.emplace(impl, offload->tensors.size());
    if (added) offload->tensors.push_back({tensor, at::Tensor()});
    auto& node = offload->by_node[name.substr(0, name.find('.'))];
    if (std::find(node.begin(), node.end(), it->second) == node.end()) node.push_back(it->second);
  };
  // Every name of a tied tensor, so each node that uses it brings it in.
  for (const auto& item : root->named_parameters(true)) collect(item.key(), item.value());
  for (const auto& item : root->named_buffers(true)) collect(item.key(), item.value());

  // Host copies first (they can fail for lack of memory; the model is untouched until all exist).
  const bool gpu = execution.is_cuda();
  for (auto& tensor : offload->tensors) {
    at::Tensor home = tensor.target.device().is_cpu() ? tensor.target.detach() : tensor.target.detach().to(c10::kCPU);
    // Pinned host memory lets each node's copy to the GPU run without staging.
    tensor.home = gpu ? home.pin_memory() : home;
  }
  std::vector<at::Tensor> kept_on_device;  // buffers left out of the offload
  if (!offload_buffers) {
    for (const auto& item : root->named_buffers(true)) {
      if (item.value().defined() && item.value().device() != execution) {
        kept_on_device.push_back(item.value().to(execution));
      } else {
        kept_on_device.emplace_back();
      }
    }
  }
  // Nothing can fail from here: the model's tensors take their new storage.
  for (auto& tensor : offload->tensors) detail::replace_tensor_contents(tensor.target, tensor.home);
  if (!offload_buffers) {
    size_t i = 0;
    for (const auto& item : root->named_buffers(true)) {
      const at::Tensor& moved = kept_on_device[i++];
      if (moved.defined()) detail::replace_tensor_contents(item.value(), moved);
    }
  }
  if (!gpu) {
    // The model runs where its weights are: nothing to bring in.
    model.impl().set_inputs_on_any_device(false);
    graph->set_node_devices({});
    graph->set_node_hook(nullptr);
    return;
  }
  // Every node holding a tensor runs on the execution device (buffers kept there included).
  detail::GraphModuleImpl::NodeDevices node_devices;
  for (const auto& [name, tensor] : tensors) node_devices.emplace(name.substr(0, name.find('.')), execution);
  model.impl().set_inputs_on_any_device(true);
  graph->set_node_devices(std::move(node_devices));
  graph->set_node_hook([offload](const std::string& node, bool entering) {
    auto it = offload->by_node.find(node);
    if (it == offload->by_node.end()) return;
    for (size_t i : it->second) {
      auto& tensor = offload->tensors[i];
      // From pinned memory the copy is queued on the current stream, before the node's kernels.
      detail::replace_tensor_contents(
          tensor.target, entering ? tensor.home.to(offload->execution, /*non_blocking=*/true) : tensor.home);
    }
  });
}

}  // namespace accel
