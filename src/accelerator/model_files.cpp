// Model files in Hugging Face's layout, load_checkpoint_in_model, accelerator.save.
#include <ATen/ATen.h>
#include <sys/stat.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "accel/accelerator.hpp"
#include "accel/error.hpp"
#include "accelerator/tensor_parallel_state.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"
#include "accel/model.hpp"
#include "accelerator/model_file_shards.hpp"
#include "formats/model_weights.hpp"
#include "formats/safetensors.hpp"
#include "formats/tensor_io.hpp"
#include "formats/torch_pickle.hpp"
#include "model/model_impl.hpp"
#include "model/script_model.hpp"
#include "accelerator/accelerator_state.hpp"

namespace fs = std::filesystem;

namespace accel {

namespace {

void make_directories(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  require(!error, ErrorCode::IO, "cannot create directory " + dir + ": " + error.message());
}

}  // namespace

int64_t parse_size(const std::string& text) {
  // Accelerate's convert_file_size_to_int: a decimal number, then a unit; a
  // lowercase final "b" after K/M/G means bits ("5Gb" is 625000000 bytes).
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  require_arg(digits > 0 && digits <= 24 && std::isdigit(static_cast<unsigned char>(text[0])),
              "size \"" + text + "\" does not start with a number of bytes");
  const std::string unit = text.substr(digits);
  static const std::map<std::string, double> units{
      {"", 1},     {"B", 1},      {"KB", 1e3},      {"MB", 1e6},
      {"GB", 1e9}, {"KIB", 1024}, {"MIB", 1 << 20}, {"GIB", double(1 << 30)},
      {"TB", 1e12}};
  std::string upper;
  for (char c : unit) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto it = units.find(upper);
  require_arg(it != units.end(), "size \"" + text + "\": unknown unit \"" + unit + "\" (B, KB, MB, GB, KiB, MiB, GiB)");
  double number = 0;  // from_chars: the C locale's decimal point whatever the program's locale
  const auto parsed = std::from_chars(text.data(), text.data() + digits, number);
  require_arg(parsed.ec == std::errc() && parsed.ptr == text.data() + digits,
              "size \"" + text + "\" does not start with a number of bytes");
  const double bytes = number * it->second;
  require_arg(bytes < 9.2e18, "size \"" + text + "\" is too large");
  int64_t size = static_cast<int64_t>(bytes);
  if ((upper == "KB" || upper == "MB" || upper == "GB") && unit.back() == 'b') size /= 8;
  require_arg(size > 0, "size \"" + text + "\" must be positive");
  return size;
}

TensorDict Accelerator::get_state_dict(const Model& model) const {
  detail::ModelImpl::Gathered gathered(model.impl());  // FULL_SHARD: the full state dict
  TensorDict dict;
  // FULL_SHARD: copies, since the gathered storages are freed when this returns.
  const bool copy = model.impl().full_shard() != nullptr;
  const detail::TensorParallelModel* tensor_parallel = model.impl().tensor_parallel();
  for (auto& [name, t] : model.impl().state_dict()) {
    // Tensor parallelism: the whole tensor from the group's slices (every rank takes part).
    const detail::TensorSplit* split = tensor_parallel ? tensor_parallel->split_of(name) : nullptr;
    if (split) {
      dict.emplace_back(name, detail::gather_whole(t, *split, *tensor_parallel->slot.group, name).cpu());
      continue;
    }
    dict.emplace_back(name, copy ? t.detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true) : t.detach().cpu());
  }
  return dict;
}

void Accelerator::save_model(const Model& model, const std::string& dir, const std::string& max_shard_size,
                             bool safe_serialization) {
  const int64_t limit = parse_size(max_shard_size);
  // A transformers model's config, recorded at export: from_pretrained reads the directory as it is.
  const std::optional<std::string> config = detail::exported_config_json(model.impl());
  const bool split = model.impl().tensor_parallel() != nullptr;
  if (model.impl().full_shard() && safe_serialization && !split) {  // one unit at a time, never the whole model
    detail::save_full_shard_model(model.impl(), dir, limit, is_main_process());
    if (config && is_main_process()) detail::write_file_atomically(dir + "/config.json", *config);
    wait_for_everyone();
    return;
  }
  // FULL_SHARD: every process takes part in gathering the full parameters to the writer.
  detail::ModelImpl::Gathered gathered(model.impl());
  // Tensor parallelism: every rank takes part in gathering the slices.
  std::optional<TensorDict> whole;
  if (split) whole = get_state_dict(model);
  if (is_main_process()) {
    make_directories(dir);
    TensorDict dict = whole ? std::move(*whole) : get_state_dict(model);
    std::vector<int64_t> sizes;
    for (auto& entry : dict) sizes.push_back(entry.second.numel() * static_cast<int64_t>(entry.second.element_size()));
    const std::vector<std::vector<size_t>> shards = detail::split_by_size(sizes, limit);
    auto shard_dict = [&](size_t s) {
      TensorDict out;
      for (size_t i : shards[s]) out.push_back(dict[i]);
      return out;
    };
    // safe_serialization=false: torch.save's format (pytorch_model.bin), data only.
    auto write = [&](const std::string& path, const TensorDict& shard) {
      if (safe_serialization) {
        save_safetensors(path, shard, {{"format", "pt"}});
      } else {
        detail::AtomicFileWriter file(path);
        detail::write_torch_save(file, detail::tensor_dict(shard));
        file.commit();
      }
    };
    const std::string single = safe_serialization ? "model.safetensors" : "pytorch_model.bin";
    if (shards.size() == 1) {
      write(dir + "/" + single, dict);
    } else {
      // nlohmann::json keeps keys sorted, as Accelerate's json.dumps(sort_keys=True).
      nlohmann::json index;
      int64_t total = 0;
      for (int64_t size : sizes) total += size;
      index["metadata"]["total_size"] = total;
      nlohmann::json weight_map = nlohmann::json::object();
      for (size_t s = 0; s < shards.size(); ++s) {
        std::string name = detail::model_shard_name(s + 1, shards.size(), safe_serialization);
        write(dir + "/" + name, shard_dict(s));
        for (size_t i : shards[s]) weight_map[dict[i].first] = name;
      }
      index["weight_map"] = weight_map;
      detail::write_file_atomically(dir + "/" + single + ".index.json", index.dump(2, ' ', true) + "\n");
    }
    if (config) detail::write_file_atomically(dir + "/config.json", *config);
  }
  wait_for_everyone();
}

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 10; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 10) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out.empty() ? "none" : out;
}

}  // namespace

namespace {

enum class DtypeKind { Floating, Integral, Boolean };

DtypeKind kind_of(at::ScalarType type) {
  if (type == at::kBool) return DtypeKind::Boolean;
  return at::isFloatingType(type) ? DtypeKind::Floating : DtypeKind::Integral;
}

}  // namespace

LoadReport Accelerator::load_checkpoint_in_model(Model& model, const std::string& path, bool strict) {
  // Every file is validated and every tensor checked before any parameter changes.
  const detail::ModelWeights weights = detail::ModelWeights::open(path);
  const auto& found = weights.tensors();

  LoadReport report;
  std::vector<std::pair<at::Tensor, const detail::ModelWeights::Tensor*>> plan;
  std::set<std::string> used;
  auto consider = [&](const std::string& name, const at::Tensor& target) {
    auto it = found.find(name);
    if (it == found.end()) {
      report.missing_keys.push_back(name);
      return;
    }
    const detail::ModelWeights::Tensor& stored = it->second;
    require_arg(stored.shape == target.sizes().vec(), stored.file + ": tensor \"" + name + "\" has shape " +
                                                          c10::str(at::IntArrayRef(stored.shape)) +
                                                          ", the model's has " + c10::str(target.sizes()));
    // Floating types convert (a bf16 checkpoint into an fp32 model, as
    // transformers does); integers, booleans and floats do not mix.
    require_arg(kind_of(weights.scalar_type(stored)) == kind_of(target.scalar_type()),
                stored.file + ": tensor \"" + name + "\" is stored as " + stored.dtype + ", the model's is " +
                    c10::toString(target.scalar_type()) +
                    " (no conversion between integer, boolean and floating types)");
    used.insert(name);
    plan.emplace_back(target, &stored);
  };
  // FULL_SHARD: the checkpoint is full; each process loads it whole into the
  // gathered parameters and keeps its slices (every process reads the same file).
  detail::ModelImpl::Gathered gathered(model.impl());
  // What save_model writes: a TorchScript model's state_dict leaves out the
  // buffers its export did not save (GPT-2's attn.bias), so they are not missing.
  // Split for tensor parallelism: the whole tensors into staging, then this rank's slices.
  const detail::TensorParallelModel* tensor_parallel = model.impl().tensor_parallel();
  std::optional<detail::WholeModelTargets> staged;
  if (tensor_parallel) staged = detail::whole_model_targets(model.impl(), model.impl().state_dict());
  for (auto& [name, t] : staged ? staged->targets : model.impl().state_dict()) consider(name, t);
  for (const auto& [name, where] : found) {
    if (!used.count(name)) report.unexpected_keys.push_back(name);
  }
  require_arg(!strict || (report.missing_keys.empty() && report.unexpected_keys.empty()),
              path + " does not match the model: missing " + join_names(report.missing_keys) + "; unexpected " +
                  join_names(report.unexpected_keys));
  at::NoGradGuard no_grad;
  for (auto& [target, stored] : plan) target.copy_(weights.values(*stored));  // safetensors: straight from the mapping
  if (staged) staged->keep_slices(tensor_parallel->slot);
  gathered.scattered();
  return report;
}

void Accelerator::save(const TensorDict& tensors, const std::string& path) {
  if (is_main_process()) save_safetensors(path, tensors);
}

}  // namespace accel
