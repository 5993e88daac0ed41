#include "accel/memory_estimate.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "accel/error.hpp"
#include "accel/model.hpp"
#include "formats/model_weights.hpp"
#include "model/model_impl.hpp"
#include "parallel/tensor_parallel.hpp"

namespace accel {

namespace {

struct Layer {
  std::string name;
  int64_t numel = 0;
  int64_t element_size = 4;
};

int64_t dtype_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64") return 8;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 4;
}

// Parameters per top-level layer, in the order they first appear.
void add(std::vector<Layer>& layers, const std::string& name, int64_t numel, int64_t element_size) {
  const std::string top = name.substr(0, name.find('.'));
  if (layers.empty() || layers.back().name != top) layers.push_back({top, 0, element_size});
  layers.back().numel += numel;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What a model folder (save_pretrained's, or save_model's) holds, in the order looked for.
constexpr const char* kFolderModelFiles[] = {"model.safetensors.index.json", "model.safetensors",
                                             "pytorch_model.bin.index.json", "pytorch_model.bin", "model.pt"};
constexpr const char* kWhatToPass =
    "pass a local model: a model.json spec, a TorchScript .pt file, a .safetensors or .bin checkpoint (or its "
    "index .json), or a folder holding one of ";

std::string folder_model_names() {
  std::string names;
  for (const char* name : kFolderModelFiles) names += std::string(names.empty() ? "" : ", ") + name;
  return names;
}

// A folder stands for the model file in it; a path that is not there is most
// often a Hugging Face Hub name, which Accelerate's estimate-memory downloads
// and libaccel does not (nothing is downloaded at run time).
std::string model_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    for (const char* name : kFolderModelFiles) {
      const std::filesystem::path file = std::filesystem::path(path) / name;
      if (std::filesystem::is_regular_file(file, error)) return file.string();
    }
    fail(ErrorCode::IO, "estimate-memory: the folder \"" + path + "\" holds none of " + folder_model_names());
  }
  if (!std::filesystem::exists(path, error)) {
    fail(ErrorCode::IO, "estimate-memory: no file or folder \"" + path +
                            "\" (Hugging Face Hub model names are not supported: libaccel downloads nothing); " +
                            kWhatToPass + folder_model_names());
  }
  require(std::ifstream(path).good(), ErrorCode::IO, "estimate-memory: cannot read \"" + path + "\"");
  return path;
}

// A model's trainable parameters as each rank of a tensor-parallel group
// of tp_size holds them once prepare split the model (rank 0's: the splits
// divide evenly, so every rank holds as many).
void split_for_estimate(Model& model, int tp_size) {
  if (tp_size > 1) {
    // Splitting cuts the tensors only; the group is needed by forward, which never runs here.
    model.impl().split_for_tensor_parallel(detail::TensorParallelSlot{nullptr, tp_size, 0});
  }
}

void add_spec_parameters(std::vector<Layer>& layers, const std::string& spec, int tp_size) {
  Model model = Model::from_json(spec);
  split_for_estimate(model, tp_size);
  for (auto& [name, p] : model.named_parameters()) {
    if (p.requires_grad()) add(layers, name, p.numel(), static_cast<int64_t>(p.element_size()));
  }
}

std::vector<Layer> layers_of(const std::string& given, int tp_size) {
  const std::string path = model_file(given);
  std::vector<Layer> layers;
  const bool json = ends_with(path, ".json");
  std::string head;
  if (json) {
    std::ifstream in(path);
    head.assign(std::istreambuf_iterator<char>(in), {});
  }
  const bool spec = json && head.find("\"weight_map\"") == std::string::npos;
  const bool script = !spec && (ends_with(path, ".pt") || ends_with(path, ".pth") || ends_with(path, ".ts"));
  require(spec || script || tp_size == 1, ErrorCode::Unsupported,
          "estimate-memory: tp_size " + std::to_string(tp_size) +
              " needs a model (a JSON spec or a TorchScript "
              "file), which says how its layers split; \"" +
              path + "\" is a checkpoint");
  if (spec) {
    add_spec_parameters(layers, head, tp_size);
  } else if (script) {
    // FULL_SHARD wraps a TorchScript model whole by default: one unit.
    Model model = Model::from_torchscript(path);
    split_for_estimate(model, tp_size);
    for (auto& [name, p] : model.named_parameters()) {
      if (p.requires_grad()) add(layers, "", p.numel(), static_cast<int64_t>(p.element_size()));
    }
  } else {
    // A checkpoint: every floating tensor counts (buffers cannot be told apart
    // by name), in the file's name order.
    const detail::ModelWeights weights = detail::ModelWeights::open(path);
    for (const auto& [name, t] : weights.tensors()) {
      if (t.dtype[0] != 'F' && t.dtype != "BF16") continue;
      int64_t numel = 1;
      for (int64_t d : t.shape) numel *= d;
      add(layers, name, numel, dtype_size(t.dtype));
    }
  }
  require_arg(!layers.empty(), "estimate-memory: \"" + path + "\" has no trainable parameters");
  return layers;
}

int64_t chunk(int64_t numel, int world) { return (numel + world - 1) / world; }

// Bytes per process under each strategy for `layers` over `world_size`
// processes (checked by the caller), as prepare lays them out.
std::vector<MemoryEstimate> strategy_rows(const std::vector<Layer>& layers, int world_size, OptimizerKind optimizer,
                                          int64_t min_num_params, bool cpu_offload, int num_machines) {
  const int64_t states = optimizer == OptimizerKind::Adam || optimizer == OptimizerKind::AdamW ? 2 : 1;
  const int64_t size = layers.front().element_size;
  int64_t total = 0;
  for (const Layer& layer : layers) total += layer.numel;
  // FULL_SHARD's units, grouped as the model groups them at prepare.
  std::vector<int64_t> units;
  for (const Layer& layer : layers) {
    if (units.empty() || min_num_params == 0 || units.back() >= min_num_params) {
      units.push_back(layer.numel);
    } else {
      units.back() += layer.numel;
    }
  }
  // FULL_SHARD over `ranks` processes: each rank's chunks of every unit, and the largest unit whole.
  auto unit_chunks_over = [&](int ranks) {
    int64_t chunks = 0, largest = 0;
    for (int64_t u : units) {
      chunks += chunk(u, ranks);
      largest = std::max(largest, chunk(u, ranks) * ranks);
    }
    return std::make_pair(chunks, largest);
  };
  const auto [unit_chunks, largest] = unit_chunks_over(world_size);
  // HYBRID_SHARD shards within each machine and replicates across them.
  const auto [node_chunks, node_largest] = unit_chunks_over(world_size / num_machines);
  const bool hybrid_row = num_machines > 1;
  const int64_t n = world_size, flat = chunk(total, world_size);
  std::vector<MemoryEstimate> out;
  auto put = [&](ShardingStrategy s, int64_t params, int64_t grads, int64_t state, int64_t gathered,
                 int64_t offloaded = 0) {
    MemoryEstimate e;
    e.strategy = s;
    e.bytes = {params * size, grads * size, state * size};
    e.gathered_unit_bytes = gathered * size;
    e.offloaded_bytes = offloaded * size;
    out.push_back(e);
  };
  if (cpu_offload) {
    // The host holds a master copy of the chunk besides the device's
    // parameters (ZeRO-1/2), its gradient chunk (ZeRO-2, FULL_SHARD) and the
    // optimizer state; FULL_SHARD's device holds only the units in use.
    put(ShardingStrategy::NoShard, total, total, states * total, 0);
    put(ShardingStrategy::ShardOptimizer, flat * n + flat, total, states * flat, 0, flat + states * flat);
    put(ShardingStrategy::ShardGradOp, flat * n + flat, flat, states * flat, 0, 2 * flat + states * flat);
    put(ShardingStrategy::FullShard, unit_chunks, unit_chunks, states * unit_chunks, largest,
        (2 + states) * unit_chunks);
    if (hybrid_row) {
      put(ShardingStrategy::HybridShard, node_chunks, node_chunks, states * node_chunks, node_largest,
          (2 + states) * node_chunks);
    }
    return out;
  }
  if (n == 1) {  // one process trains as NO_SHARD whatever the strategy
    for (auto s : {ShardingStrategy::NoShard, ShardingStrategy::ShardOptimizer, ShardingStrategy::ShardGradOp,
                   ShardingStrategy::FullShard}) {
      put(s, total, total, states * total, 0);
    }
    return out;
  }
  put(ShardingStrategy::NoShard, total, total, states * total, 0);
  // ZeRO-1 keeps the full averaged gradients; its chunk's copy exists only
  // during the optimizer step.
  put(ShardingStrategy::ShardOptimizer, flat * n, total, states * flat, 0);
  put(ShardingStrategy::ShardGradOp, flat * n, flat, states * flat, 0);
  put(ShardingStrategy::FullShard, unit_chunks, unit_chunks, states * unit_chunks, largest);
  if (hybrid_row) put(ShardingStrategy::HybridShard, node_chunks, node_chunks, states * node_chunks, node_largest);
  return out;
}

// Each strategy's rows for `layers` (as one rank holds them) trained over
// `world_size` data-parallel processes on `num_machines` machines.
void add_rows(std::vector<MemoryEstimate>& rows, const std::vector<Layer>& layers, int world_size,
              const MemoryEstimateOptions& options, int tp_size) {
  const std::vector<MemoryEstimate> made = strategy_rows(layers, world_size, options.optimizer, options.min_num_params,
                                                         options.cpu_offload, options.num_machines);
  for (MemoryEstimate e : made) {
    e.tp_size = tp_size;
    rows.push_back(e);
  }
}

}  // namespace

std::vector<MemoryEstimate> estimate_memory(const std::string& path, const MemoryEstimateOptions& options) {
  const int world_size = options.world_size, num_machines = options.num_machines, tp_size = options.tp_size;
  require_arg(world_size >= 1, "estimate-memory: world_size must be 1 or more, got " + std::to_string(world_size));
  require_arg(num_machines >= 1 && world_size % num_machines == 0,
              "estimate-memory: num_machines must divide world_size (" + std::to_string(world_size) +
                  " processes), got " + std::to_string(num_machines));
  require_arg(options.min_num_params >= 0,
              "estimate-memory: min_num_params must be 0 or more, got " + std::to_string(options.min_num_params));
  const int per_machine = world_size / num_machines;
  // A tensor-parallel group is tp_size consecutive ranks of one machine (ParallelismConfig puts tp innermost).
  require_arg(tp_size >= 1 && per_machine % tp_size == 0,
              "estimate-memory: tp_size must divide the " + std::to_string(per_machine) +
                  " processes of each machine (world_size " + std::to_string(world_size) + ", num_machines " +
                  std::to_string(num_machines) + "), got " + std::to_string(tp_size));
  std::vector<MemoryEstimate> rows;
  add_rows(rows, layers_of(path, 1), world_size, options, 1);
  if (tp_size == 1) return rows;
  // The ranks holding the same slices run data parallelism: the strategy over
  // world_size / tp_size of them, HYBRID_SHARD within each machine's share.
  std::vector<MemoryEstimate> split;
  add_rows(split, layers_of(path, tp_size), world_size / tp_size, options, tp_size);
  for (const MemoryEstimate& e : split) {
    // One data-parallel rank per group runs no strategy: prepare refuses a
    // sharding strategy over a dp_shard of 1, so only NO_SHARD is a mesh.
    const bool one_data_rank =
        world_size == tp_size || (e.strategy == ShardingStrategy::HybridShard && per_machine == tp_size);
    if (one_data_rank && e.strategy != ShardingStrategy::NoShard) continue;
    rows.push_back(e);
  }
  return rows;
}

std::vector<MemoryEstimate> estimate_memory(const std::string& path, int world_size, OptimizerKind optimizer,
                                            int64_t min_num_params, bool cpu_offload, int num_machines) {
  MemoryEstimateOptions options;
  options.world_size = world_size;
  options.optimizer = optimizer;
  options.min_num_params = min_num_params;
  options.cpu_offload = cpu_offload;
  options.num_machines = num_machines;
  return estimate_memory(path, options);
}

}  // namespace accel
