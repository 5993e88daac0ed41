// Accelerate 1.x's get_balanced_memory (utils/modeling.py): per-GPU budgets that
// spread a model evenly over the GPUs, for device_map="balanced"/"balanced_low_0"
// (and "auto", which Accelerate's load_checkpoint_and_dispatch balances too).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/module_tree.hpp"

namespace accel {
namespace {

bool is_gpu(const std::string& device) { return device.rfind("cuda:", 0) == 0; }
int gpu_index(const std::string& device) { return std::stoi(device.substr(5)); }

// get_module_leaves: the names no other name lies directly under.
std::vector<std::string> module_leaves(const std::map<std::string, int64_t>& sizes) {
  std::map<std::string, int> children;
  for (const auto& [name, size] : sizes) {
    auto dot = name.rfind('.');
    if (!name.empty() && dot != std::string::npos) ++children[name.substr(0, dot)];
  }
  std::vector<std::string> leaves;
  for (const auto& [name, size] : sizes) {
    if (!name.empty() && children.count(name) == 0) leaves.push_back(name);
  }
  return leaves;
}

// The size of the first module (in Accelerate's order: by first tensor) of each
// no-split class; the largest of them.
int64_t largest_no_split_block(const torch::nn::Module& root, const std::map<std::string, int64_t>& sizes,
                               const std::vector<std::string>& no_split) {
  if (no_split.empty()) return 0;
  std::unordered_map<std::string, std::shared_ptr<torch::nn::Module>> modules;
  for (const auto& item : root.named_modules("", /*include_self=*/false)) modules[item.key()] = item.value();
  std::map<std::string, int64_t> first_of_class;
  for (const auto& [tensor_name, tensor] : detail::named_module_tensors(root)) {
    for (size_t dot = tensor_name.find('.'); dot != std::string::npos; dot = tensor_name.find('.', dot + 1)) {
      auto module = modules.find(tensor_name.substr(0, dot));
      if (module == modules.end()) continue;
      const std::string cls = detail::class_name(*module->second);
      if (std::find(no_split.begin(), no_split.end(), cls) != no_split.end() && !first_of_class.count(cls)) {
        first_of_class[cls] = sizes.at(module->first);
      }
    }
  }
  int64_t largest = 0;
  for (const auto& [cls, size] : first_of_class) largest = std::max(largest, size);
  return largest;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> balanced_memory(const Model& model,
                                                             std::vector<std::pair<std::string, int64_t>> max_memory,
                                                             const std::vector<std::string>& no_split_module_classes,
                                                             c10::optional<c10::ScalarType> dtype, bool low_zero,
                                                             bool max_memory_given) {
  auto root = detail::module_of(model, "balanced_memory");
  std::vector<size_t> gpus;  // positions in max_memory of the GPUs with room, by index
  for (size_t i = 0; i < max_memory.size(); ++i) {
    if (is_gpu(max_memory[i].first) && max_memory[i].second > 0) gpus.push_back(i);
  }
  std::sort(gpus.begin(), gpus.end(),
            [&](size_t a, size_t b) { return gpu_index(max_memory[a].first) < gpu_index(max_memory[b].first); });
  if (gpus.empty()) return max_memory;
  if (gpus.size() == 1) {
    low_zero = false;  // nothing to keep GPU 0 light for
    // Budgets read from the devices: keep 10% of the one GPU free for activations.
    if (!max_memory_given) max_memory[gpus[0]].second = static_cast<int64_t>(max_memory[gpus[0]].second * 0.9);
  }

  auto sizes = compute_module_sizes(model, dtype);
  const int64_t total = sizes.at("");
  int64_t per_gpu = total / static_cast<int64_t>(low_zero ? gpus.size() - 1 : gpus.size());
  // An even share leaves each GPU a little short, and the last layers would go to the
  // CPU: add the larger of the biggest no-split block and the mean final module, by 1.25.
  int64_t buffer = largest_no_split_block(*root, sizes, no_split_module_classes);
  for (const auto& tensor : module_leaves(sizes)) sizes.erase(tensor);  // the leaves were the tensors
  const auto modules = module_leaves(sizes);
  int64_t leaves_total = 0;
  for (const auto& name : modules) leaves_total += sizes.at(name);
  const int64_t mean_leaves = leaves_total / std::max<int64_t>(static_cast<int64_t>(modules.size()), 1);
  buffer = static_cast<int64_t>(1.25 * static_cast<double>(std::max(buffer, mean_leaves)));
  per_gpu += buffer;

  // Every GPU but the last gets at most the share; the last keeps its whole budget
  // in case the buffer is not enough. GPU 0 under low_zero keeps its own for now.
  const bool first_is_zero = gpu_index(max_memory[gpus.front()].first) == 0;
  for (size_t k = 0; k + 1 < gpus.size(); ++k) {
    auto& budget = max_memory[gpus[k]].second;
    const bool keep = low_zero && k == 0 && first_is_zero;
    budget = std::min(keep ? budget : per_gpu, budget);
  }
  if (low_zero && first_is_zero) {
    // GPU 0 takes only what the others cannot.
    int64_t others = 0;
    for (size_t k = 1; k < gpus.size(); ++k) others += max_memory[gpus[k]].second;
    auto& zero = max_memory[gpus.front()].second;
    zero = std::min(std::max<int64_t>(0, total - others), zero);
  }
  return max_memory;
}

}  // namespace accel
