// Device maps: Accelerate 0.22's infer_auto_device_map and check_device_map
// (utils/modeling.py), over our module tree.
#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "big_model/dispatch.hpp"
#include "big_model/module_tree.hpp"
#include "state/c10d_adapter.hpp"

namespace accel {
namespace {

using Json = nlohmann::ordered_json;

// A pending entry: a module, or a tensor (module null) treated as a leaf.
struct Item {
  std::string name;
  std::shared_ptr<torch::nn::Module> module;
};

std::string quote_name(const std::string& s) { return "\"" + s + "\""; }

// Modules without tensors (Dropout) have no entry: Accelerate's defaultdict gives 0.
int64_t size_of(const std::map<std::string, int64_t>& sizes, const std::string& name) {
  auto it = sizes.find(name);
  return it == sizes.end() ? 0 : it->second;
}

int64_t parse_size(const std::string& device, const Json& value) {
  const std::string where = "max_memory[" + quote_name(device) + "]";
  if (value.is_number_integer()) {
    require_arg(value.get<int64_t>() >= 0, where + ": the size must not be negative, got " + value.dump());
    return value.get<int64_t>();
  }
  require_arg(value.is_string(),
              where + ": expected bytes (an integer) or a size such as \"50MB\", got " + value.dump());
  const std::string text = value.get<std::string>();
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  const std::string unit = text.substr(digits);
  static const std::vector<std::pair<std::string, double>> units = {{"", 1},
                                                                    {"B", 1},
                                                                    {"KB", 1e3},
                                                                    {"MB", 1e6},
                                                                    {"GB", 1e9},
                                                                    {"KiB", 1024.0},
                                                                    {"MiB", 1024.0 * 1024},
                                                                    {"GiB", 1024.0 * 1024 * 1024}};
  auto unit_it = std::find_if(units.begin(), units.end(), [&](const auto& u) { return u.first == unit; });
  require_arg(digits > 0 && unit_it != units.end(),
              where + ": " + quote_name(text) + " is not a size (a number followed by B, KB, MB, GB, KiB, MiB or GiB)");
  double number = 0;
  try {
    number = std::stod(text.substr(0, digits));
  } catch (const std::exception&) {
    fail(ErrorCode::InvalidArgument, where + ": " + quote_name(text) + " is not a size");
  }
  return static_cast<int64_t>(number * unit_it->second);
}

// -1 for names that are not a GPU ("cuda:N" or Accelerate's bare "N").
int gpu_index(const std::string& device) {
  std::string digits = device.rfind("cuda:", 0) == 0 ? device.substr(5) : device;
  if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoi(digits);
}

std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> children_of(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> out;
  for (const auto& child : m.named_children()) out.emplace_back(child.key(), child.value());
  return out;
}

bool unsplittable(const Item& item, const std::vector<std::string>& no_split) {
  if (!item.module || item.module->children().empty()) return true;
  return std::find(no_split.begin(), no_split.end(), detail::class_name(*item.module)) != no_split.end();
}

// get_max_layer_size: the largest unsplittable module among items (and under them).
std::pair<int64_t, std::vector<std::string>> max_layer(std::vector<Item> items,
                                                       const std::map<std::string, int64_t>& sizes,
                                                       const std::vector<std::string>& no_split) {
  int64_t best = 0;
  std::vector<std::string> names;
  while (!items.empty()) {
    Item item = items.front();
    items.erase(items.begin());
    if (unsplittable(item, no_split)) {
      const int64_t size = size_of(sizes, item.name);
      if (size > best) {
        best = size;
        names = {item.name};
      } else if (size == best) {
        names.push_back(item.name);
      }
    } else {
      std::vector<Item> expanded;
      for (auto& [n, child] : children_of(*item.module)) expanded.push_back({item.name + "." + n, child});
      items.insert(items.begin(), expanded.begin(), expanded.end());
    }
  }
  return {best, names};
}

std::vector<Item> modules_only(const std::vector<Item>& items) {
  std::vector<Item> out;
  for (const auto& item : items) {
    if (item.module) out.push_back(item);
  }
  return out;
}

bool has_prefix(const std::string& name, const std::string& prefix) {
  return prefix.empty() || name == prefix || name.rfind(prefix + ".", 0) == 0;
}

// clean_device_map: a module whose entries all went to one device becomes one entry.
void clean(DeviceMap& map, const std::string& module_name) {
  const std::string prefix = module_name.empty() ? "" : module_name + ".";
  std::set<std::string> values;
  size_t count = 0;
  for (const auto& [k, v] : map) {
    if (k.rfind(prefix, 0) == 0) {
      values.insert(v);
      ++count;
    }
  }
  if (values.size() == 1 && count > 1) {
    const std::string device = *values.begin();
    map.erase(std::remove_if(map.begin(), map.end(), [&](const auto& e) { return e.first.rfind(prefix, 0) == 0; }),
              map.end());
    map.emplace_back(module_name, device);
  }
  const size_t depth = module_name.empty() ? 1 : std::count(module_name.begin(), module_name.end(), '.') + 2;
  std::set<std::string> children;
  for (const auto& [k, v] : map) {
    if (k.rfind(prefix, 0) != 0 || k.size() <= module_name.size()) continue;
    size_t end = std::string::npos, from = 0;
    for (size_t part = 0; part < depth; ++part) {
      end = k.find('.', from);
      if (end == std::string::npos) break;
      from = end + 1;
    }
    children.insert(end == std::string::npos ? k : k.substr(0, end));
  }
  for (const auto& child : children) clean(map, child);
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> parse_max_memory(const std::string& json_object) {
  Json parsed;
  try {
    parsed = Json::parse(json_object);
  } catch (const std::exception& e) {
    fail(ErrorCode::InvalidArgument, std::string("max_memory is not JSON: ") + e.what());
  }
  require_arg(parsed.is_object() && !parsed.empty(),
              "max_memory must be a non-empty JSON object such as {\"cpu\": \"50MB\"}, got " + parsed.dump());
  std::vector<std::pair<int, std::pair<std::string, int64_t>>> gpus;
  c10::optional<int64_t> cpu, disk;
  for (const auto& item : parsed.items()) {
    const std::string& key = item.key();
    const int64_t size = parse_size(key, item.value());
    if (key == "cpu") {
      cpu = size;
    } else if (key == "disk") {
      disk = size;
    } else {
      const int index = gpu_index(key);
      require_arg(index >= 0,
                  "max_memory: unknown device " + quote_name(key) + " (expected \"cuda:N\", \"cpu\" or \"disk\")");
      gpus.push_back({index, {"cuda:" + std::to_string(index), size}});
    }
  }
  std::sort(gpus.begin(), gpus.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto& gpu : gpus) out.push_back(gpu.second);
  if (cpu) out.emplace_back("cpu", *cpu);
  if (disk) out.emplace_back("disk", *disk);
  return out;
}

DeviceMap infer_auto_device_map(const Model& model, const std::vector<std::pair<std::string, int64_t>>& max_memory,
                                const std::vector<std::string>& no_split, c10::optional<c10::ScalarType> dtype) {
  auto root = detail::module_of(model, "infer_auto_device_map");
  require_arg(!max_memory.empty(), "infer_auto_device_map: max_memory is empty");
  std::vector<std::string> devices;
  std::map<std::string, int64_t> budget;
  for (const auto& [device, size] : max_memory) {
    devices.push_back(device);
    budget[device] = size;
  }
  if (budget.count("disk") == 0) devices.push_back("disk");
  std::set<std::string> main_devices = {"cpu"};
  if (devices.front().rfind("cuda:", 0) == 0) main_devices.insert(devices.front());
  const auto sizes = compute_module_sizes(model, dtype);

  std::vector<Item> modules_to_place;
  for (const auto& p : root->named_parameters(false)) modules_to_place.push_back({p.key(), nullptr});
  for (auto& [n, child] : children_of(*root)) modules_to_place.push_back({n, child});
  for (const auto& b : root->named_buffers(false)) modules_to_place.push_back({b.key(), nullptr});
  auto [max_size, max_names] = max_layer(modules_to_place, sizes, no_split);
  // Not in Accelerate: a layer larger than the memory it must run in. A budget of 0 is a
  // device left empty on purpose (balanced_low_0's GPU 0): nothing is placed there.
  for (const auto& device : main_devices) {
    if (budget.count(device) && budget[device] > 0 && budget[device] < max_size) {
      fail(ErrorCode::InvalidArgument,
           "infer_auto_device_map: the budget for " + device + " (" + std::to_string(budget[device]) +
               " bytes) is smaller than the largest unsplittable module " + quote_name(max_names.front()) + " (" +
               std::to_string(max_size) + " bytes), which must fit in memory when it runs");
    }
  }

  DeviceMap map;
  size_t current = 0;
  int64_t used = 0;
  while (!modules_to_place.empty()) {
    Item item = modules_to_place.front();
    modules_to_place.erase(modules_to_place.begin());
    max_names.erase(std::remove_if(max_names.begin(), max_names.end(),
                                   [&](const std::string& n) { return has_prefix(n, item.name); }),
                    max_names.end());
    if (max_names.empty()) std::tie(max_size, max_names) = max_layer(modules_only(modules_to_place), sizes, no_split);
    const int64_t size = size_of(sizes, item.name);
    const std::string& device = devices[current];
    c10::optional<int64_t> room;
    if (device != "disk") room = budget[device] - (main_devices.count(device) ? max_size : 0);
    if (room && used + size > *room) {
      if (unsplittable(item, no_split)) {
        ++current;
        used = 0;
        modules_to_place.insert(modules_to_place.begin(), item);
      } else {
        std::vector<Item> expanded;
        for (const auto& p : item.module->named_parameters(false))
          expanded.push_back({item.name + "." + p.key(), nullptr});
        for (auto& [n, child] : children_of(*item.module)) expanded.push_back({item.name + "." + n, child});
        modules_to_place.insert(modules_to_place.begin(), expanded.begin(), expanded.end());
        std::tie(max_size, max_names) = max_layer(modules_only(modules_to_place), sizes, no_split);
      }
    } else {
      used += size;
      map.emplace_back(item.name, device);
    }
  }
  clean(map, "");
  return map;
}

namespace detail {

void verify_device_map_over(const std::set<std::string>& known, const std::vector<std::string>& tensors,
                            const DeviceMap& device_map) {
  const int gpus = static_cast<int>(torch::cuda::device_count());
  for (size_t i = 0; i < device_map.size(); ++i) {
    const auto& [name, device] = device_map[i];
    require_arg(known.count(name),
                "device_map: " + quote_name(name) + " names no module, parameter or buffer of the model");
    const int gpu = gpu_index(device);
    require_arg(device == "cpu" || device == "disk" || (device.rfind("cuda:", 0) == 0 && gpu >= 0),
                "device_map[" + quote_name(name) + "]: unknown device " + quote_name(device) +
                    " (expected \"cuda:N\", \"cpu\" or \"disk\")");
    require_arg(gpu < gpus, "device_map[" + quote_name(name) + "]: " + quote_name(device) + " but this machine has " +
                                std::to_string(gpus) + " GPU(s)");
    for (size_t j = 0; j < device_map.size(); ++j) {
      require_arg(
          j == i || !has_prefix(name, device_map[j].first),
          "device_map: " + quote_name(name) + " is covered twice (also by " + quote_name(device_map[j].first) + ")");
    }
  }
  for (const auto& tensor : tensors) {
    bool covered =
        std::any_of(device_map.begin(), device_map.end(), [&](const auto& e) { return has_prefix(tensor, e.first); });
    require_arg(covered, "device_map: the model's tensor " + quote_name(tensor) + " is not placed by any entry");
  }
}

}  // namespace detail

void verify_device_map(const Model& model, const DeviceMap& device_map) {
  auto root = detail::module_of(model, "verify_device_map");
  std::set<std::string> known = {""};
  for (const auto& m : root->named_modules()) known.insert(m.key());
  std::vector<std::string> tensors;
  for (const auto& [name, t] : detail::named_module_tensors(*root)) {
    known.insert(name);
    tensors.push_back(name);
  }
  detail::verify_device_map_over(known, tensors, device_map);
}

std::string device_map_to_json(const DeviceMap& device_map) {
  Json out = Json::object();
  for (const auto& [name, device] : device_map) out[name] = device;
  return out.dump();
}

std::vector<std::pair<std::string, int64_t>> available_memory() {
  std::vector<std::pair<std::string, int64_t>> out;
  const int gpus = static_cast<int>(torch::cuda::device_count());
  for (int i = 0; i < gpus; ++i)
    out.emplace_back("cuda:" + std::to_string(i), detail::c10d_adapter::cuda_free_bytes(i));
  out.emplace_back("cpu",
                   static_cast<int64_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGE_SIZE)));
  return out;
}

DeviceMap auto_device_map(const Model& model, const std::vector<std::string>& no_split_module_classes,
                          c10::optional<c10::ScalarType> dtype, const std::string& strategy) {
  require_arg(strategy == "auto" || strategy == "balanced" || strategy == "balanced_low_0" || strategy == "sequential",
              "device_map \"" + strategy +
                  "\" is not supported: give a JSON object of module name to device, \"auto\", \"balanced\", "
                  "\"balanced_low_0\" or \"sequential\"");
  auto budgets = available_memory();
  // As Accelerate's load_checkpoint_and_dispatch: every strategy but "sequential" balances.
  if (strategy != "sequential") {
    budgets = balanced_memory(model, budgets, no_split_module_classes, dtype, strategy == "balanced_low_0",
                              /*max_memory_given=*/false);
  }
  return infer_auto_device_map(model, budgets, no_split_module_classes, dtype);
}

DeviceMap auto_device_map(const Model& model, const std::vector<std::string>& no_split_module_classes,
                          c10::optional<c10::ScalarType> dtype) {
  return auto_device_map(model, no_split_module_classes, dtype, "auto");
}

DeviceMap device_map_from_json(const std::string& json_object) {
  Json parsed;
  try {
    parsed = Json::parse(json_object);
  } catch (const std::exception& e) {
    fail(ErrorCode::InvalidArgument, std::string("device_map is not JSON: ") + e.what());
  }
  require_arg(parsed.is_object(), "device_map must be a JSON object of module name to device, got " + parsed.dump());
  DeviceMap out;
  for (const auto& item : parsed.items()) {
    require_arg(item.value().is_string(),
                "device_map[" + quote_name(item.key()) + "]: expected a device string, got " + item.value().dump());
    out.emplace_back(item.key(), item.value().get<std::string>());
  }
  return out;
}

DeviceMap resolve_device_map(const Model& model, const std::string& text,
                             const std::vector<std::string>& no_split_module_classes,
                             c10::optional<c10::ScalarType> dtype) {
  if (text.empty()) return {};
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_string()) {
    DeviceMap map = device_map_from_json(text);  // which names a parse error
    require_arg(!map.empty(), "device_map {} places nothing: pass no map (\"\") to load everything on the CPU");
    return map;
  }
  return auto_device_map(model, no_split_module_classes, dtype, parsed.get<std::string>());
}

}  // namespace accel
