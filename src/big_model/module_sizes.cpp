// Empty models and per-module sizes (Accelerate's init_empty_weights and
// compute_module_sizes).
#include <unordered_set>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/module_tree.hpp"
#include "model/model_impl.hpp"
#include "model/nn_module_of.hpp"
#include "model/sequential_spec.hpp"

namespace accel {
namespace detail {

std::shared_ptr<torch::nn::Module> module_of(const Model& model, const char* what) {
  auto module = nn_module_of(model.impl());
  require(module != nullptr, ErrorCode::Unsupported,
          std::string(what) +
              ": a TorchScript model has no module tree to size or place; build it from a JSON spec or a "
              "torch::nn::Module");
  return module;
}

std::vector<std::pair<std::string, at::Tensor>> named_module_tensors(const torch::nn::Module& module) {
  // Each tensor once, under its first name, as PyTorch's named_parameters
  // (remove_duplicate) does; then the buffers.
  std::vector<std::pair<std::string, at::Tensor>> out;
  std::unordered_set<const void*> seen;
  for (const auto& dict : {module.named_parameters(true), module.named_buffers(true)}) {
    for (const auto& item : dict) {
      if (item.value().defined() && seen.insert(item.value().unsafeGetTensorImpl()).second) {
        out.emplace_back(item.key(), item.value());
      }
    }
  }
  return out;
}

std::string class_name(const torch::nn::Module& module) {
  std::string name = module.name();
  if (auto colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

}  // namespace detail

Model model_from_json_empty(const std::string& spec) {
  detail::EmptyInitScope empty;
  return Model::from_json(spec);
}

std::map<std::string, int64_t> compute_module_sizes(const Model& model, c10::optional<c10::ScalarType> dtype) {
  auto module = detail::module_of(model, "compute_module_sizes");
  std::map<std::string, int64_t> sizes;
  sizes[""] = 0;
  for (const auto& [name, tensor] : detail::named_module_tensors(*module)) {
    int64_t element = static_cast<int64_t>(c10::elementSize(tensor.scalar_type()));
    // As Accelerate 1.x: integer and bool tensors are never cast (materialize keeps them), so keep their size.
    if (dtype && (c10::isFloatingType(tensor.scalar_type()) || c10::isComplexType(tensor.scalar_type()))) {
      element = std::min<int64_t>(element, static_cast<int64_t>(c10::elementSize(*dtype)));
    }
    const int64_t bytes = tensor.numel() * element;
    sizes[""] += bytes;
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
      sizes[name.substr(0, dot)] += bytes;
    }
    sizes[name] += bytes;
  }
  return sizes;
}

}  // namespace accel
