#include "accel/merge_weights.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <vector>

#include "accel/error.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "formats/dcp.hpp"
#include "formats/safetensors.hpp"
#include "formats/tensor_io.hpp"
#include "formats/torch_pickle.hpp"

namespace accel {

namespace {

constexpr const char* kFlatShard = "flat_param_shard";
constexpr const char* kUnitsKey = "accel_fsdp_units";

std::string rank_file(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) / ("model_rank" + std::to_string(rank) + ".safetensors")).string();
}

[[noreturn]] void bad(const std::string& file, const std::string& what) {
  fail(ErrorCode::IO, "merge-weights: " + file + ": " + what);
}

std::string metadata(const safetensors::File& file, const std::string& key, const std::string& path) {
  auto it = file.metadata().find(key);
  if (it == file.metadata().end()) {
    bad(path, "no \"" + key +
                  "\" metadata: not a sharded model checkpoint written by FULL_SHARD save_state "
                  "(or written before libaccel recorded the unit layout)");
  }
  return it->second;
}

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0, numel = 1;
};

struct Unit {
  int64_t chunk = 0, shard_offset = 0;
  std::vector<Param> params;
};

std::vector<Unit> parse_units(const std::string& text, const std::string& path) {
  nlohmann::json units = nlohmann::json::parse(text, nullptr, false);
  if (!units.is_array()) bad(path, std::string(kUnitsKey) + " is not a JSON array");
  std::vector<Unit> out;
  try {
    for (const auto& u : units) {
      Unit unit;
      unit.chunk = u.at("chunk").get<int64_t>();
      unit.shard_offset = u.at("shard_offset").get<int64_t>();
      if (unit.chunk < 0 || unit.shard_offset < 0) bad(path, "a unit has a negative chunk or offset");
      for (const auto& p : u.at("params")) {
        Param param;
        param.name = p.at("name").get<std::string>();
        param.shape = p.at("shape").get<std::vector<int64_t>>();
        param.offset = p.at("offset").get<int64_t>();
        for (int64_t d : param.shape) {
          if (d < 0) bad(path, "parameter " + param.name + " has a negative dimension");
          param.numel *= d;
        }
        if (param.offset < 0) bad(path, "parameter " + param.name + " has a negative offset");
        unit.params.push_back(std::move(param));
      }
      out.push_back(std::move(unit));
    }
  } catch (const nlohmann::json::exception& e) {
    bad(path, std::string(kUnitsKey) + " is malformed: " + e.what());
  }
  return out;
}

// output_dir/file_name (the directory created), durably, streamed from
// `produce` (never the whole file in memory); returns its path.
std::string write_output(const std::string& output_dir, const char* file_name,
                         const std::function<void(detail::ByteSink&)>& produce) {
  std::error_code error;
  std::filesystem::create_directories(output_dir, error);
  if (error) fail(ErrorCode::IO, "merge-weights: cannot create " + output_dir + ": " + error.message());
  detail::write_durable(output_dir, file_name, produce);
  return (std::filesystem::path(output_dir) / file_name).string();
}

// The output file from named tensors: safetensors, or torch.save's format.
MergedWeights write_merged(std::vector<std::pair<std::string, at::Tensor>> tensors, const std::string& output_dir,
                           bool safe_serialization, int world) {
  MergedWeights merged;
  merged.world_size = world;
  merged.tensors = static_cast<int64_t>(tensors.size());
  for (const auto& [name, t] : tensors) merged.bytes += static_cast<int64_t>(t.nbytes());
  const char* file_name = safe_serialization ? "model.safetensors" : "pytorch_model.bin";
  merged.output_file = write_output(output_dir, file_name, [&](detail::ByteSink& sink) {
    if (safe_serialization) {
      detail::write_tensors(sink, tensors, {{"format", "pt"}});
    } else {
      detail::write_torch_save(sink, detail::tensor_dict(tensors));
    }
  });
  return merged;
}

// A distributed checkpoint (FSDP's SHARDED_STATE_DICT: pytorch_model_fsdp_0/):
// its "model." tensors under their own names, as Accelerate's merge-weights
// writes them (every tensor as it is when none is under "model.").
MergedWeights merge_dcp(const std::string& dir, const std::string& output_dir, bool safe_serialization) {
  const detail::DcpDirectory dcp = detail::DcpDirectory::open(dir);
  bool nested = false;
  for (const auto& [key, t] : dcp.tensors()) nested = nested || key.rfind("model.", 0) == 0;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  std::set<std::string> files;
  for (const auto& [key, t] : dcp.tensors()) {
    if (nested && key.rfind("model.", 0) != 0) continue;
    for (const auto& chunk : t.chunks) files.insert(chunk.item.file);
    tensors.emplace_back(nested ? key.substr(6) : key, dcp.read_tensor(key));
  }
  if (tensors.empty()) bad(dir + "/.metadata", "holds no tensors");
  return write_merged(std::move(tensors), output_dir, safe_serialization, static_cast<int>(files.size()));
}

}  // namespace

MergedWeights merge_sharded_weights(const std::string& checkpoint_dir, const std::string& output_dir,
                                    bool safe_serialization) {
  // Accelerate's SHARDED_STATE_DICT folder, given itself or its checkpoint directory.
  for (const std::string& dir : {checkpoint_dir, checkpoint_dir + "/pytorch_model_fsdp_0"}) {
    if (detail::DcpDirectory::is_dcp(dir)) return merge_dcp(dir, output_dir, safe_serialization);
  }
  const std::string first = rank_file(checkpoint_dir, 0);
  if (!std::filesystem::is_directory(checkpoint_dir)) {
    fail(ErrorCode::IO, "merge-weights: no folder \"" + checkpoint_dir +
                            "\": pass the folder a FULL_SHARD save_state wrote (model_rank0.safetensors, ...); "
                            "Hugging Face Hub names are not supported");
  }
  if (!std::filesystem::is_regular_file(first)) {
    bad(first, "missing: a FULL_SHARD save_state writes model_rank0.safetensors ... model_rank{N-1}.safetensors");
  }
  std::vector<safetensors::File> files{safetensors::File::open(first)};
  const std::string layout = metadata(files[0], kUnitsKey, first);
  const std::string world_text = metadata(files[0], "num_processes", first);
  int world = 0;
  try {
    world = std::stoi(world_text);
  } catch (const std::exception&) {
    bad(first, "num_processes is \"" + world_text + "\", not a number");
  }
  if (world < 1) bad(first, "num_processes is " + world_text);
  // HYBRID_SHARD: each node's processes hold the whole model between them, so
  // the first node's files are read (written before it was recorded: the world).
  auto group = files[0].metadata().find("accel_shard_group");
  if (group != files[0].metadata().end()) {
    int size = 0;
    try {
      size = std::stoi(group->second);
    } catch (const std::exception&) {
      bad(first, "accel_shard_group is \"" + group->second + "\", not a number");
    }
    if (size < 1 || size > world || world % size != 0) {
      bad(first, "accel_shard_group is " + group->second + ", not a divisor of num_processes " + world_text);
    }
    world = size;
  }
  for (int r = 1; r < world; ++r) {
    const std::string path = rank_file(checkpoint_dir, r);
    if (!std::filesystem::is_regular_file(path)) {
      bad(path, "missing: the checkpoint was saved by " + std::to_string(world) + " processes");
    }
    files.push_back(safetensors::File::open(path));
    if (metadata(files[r], "num_processes", path) != world_text) {
      bad(path, "saved by " + metadata(files[r], "num_processes", path) + " processes, rank 0's file by " + world_text);
    }
    if (metadata(files[r], kUnitsKey, path) != layout) bad(path, "its unit layout differs from rank 0's");
  }
  const std::vector<Unit> units = parse_units(layout, first);

  // Every rank's flat shard: one dtype, long enough for every unit's chunk.
  std::string dtype;
  size_t element = 0;
  for (int r = 0; r < world; ++r) {
    const std::string path = rank_file(checkpoint_dir, r);
    const safetensors::Entry* flat = files[r].find(kFlatShard);
    if (flat == nullptr) bad(path, std::string("has no ") + kFlatShard + " tensor");
    if (r == 0) {
      dtype = flat->dtype;
      element = safetensors::dtype_size(dtype);
    } else if (flat->dtype != dtype) {
      bad(path, kFlatShard + std::string(" is ") + flat->dtype + ", rank 0's is " + dtype);
    }
    for (const Unit& unit : units) {
      if (static_cast<uint64_t>((unit.shard_offset + unit.chunk) * static_cast<int64_t>(element)) >
          flat->end - flat->begin) {
        bad(path, std::string(kFlatShard) + " is shorter than its layout");
      }
    }
  }

  // Each parameter's elements [offset, offset + numel) of its unit's flat
  // buffer: element e is rank e / chunk's element e % chunk of that unit.
  std::map<std::string, std::string> data;  // name -> bytes
  std::vector<safetensors::TensorView> views;
  for (const Unit& unit : units) {
    for (const Param& param : unit.params) {
      if (param.offset + param.numel > unit.chunk * world)
        bad(first, "parameter " + param.name + " lies past its unit");
      std::string& bytes = data[param.name];
      bytes.resize(static_cast<size_t>(param.numel) * element);
      for (int64_t e = param.offset; e < param.offset + param.numel;) {
        const int rank = static_cast<int>(e / unit.chunk);
        const int64_t within = e % unit.chunk, count = std::min(unit.chunk - within, param.offset + param.numel - e);
        const safetensors::Entry* flat = files[rank].find(kFlatShard);
        const uint8_t* from = files[rank].data(*flat) + (unit.shard_offset + within) * static_cast<int64_t>(element);
        std::copy(from, from + count * static_cast<int64_t>(element),
                  bytes.begin() + (e - param.offset) * static_cast<int64_t>(element));
        e += count;
      }
      views.push_back({param.name, dtype, param.shape, nullptr, bytes.size()});
    }
  }
  // Buffers are whole in every rank's file: rank 0's.
  for (const safetensors::Entry& entry : files[0].entries()) {
    if (entry.name == kFlatShard) continue;
    if (data.count(entry.name)) bad(first, "buffer " + entry.name + " has a parameter's name");
    views.push_back({entry.name, entry.dtype, entry.shape, files[0].data(entry), entry.end - entry.begin});
  }
  MergedWeights merged;
  merged.world_size = world;
  for (auto& view : views) {
    if (view.data == nullptr) view.data = data[view.name].data();
    merged.bytes += static_cast<int64_t>(view.nbytes);
  }
  merged.tensors = static_cast<int64_t>(views.size());
  const char* file_name = safe_serialization ? "model.safetensors" : "pytorch_model.bin";
  if (safe_serialization) {
    merged.output_file = write_output(output_dir, file_name, [&](detail::ByteSink& sink) {
      safetensors::write(sink, std::move(views), {{"format", "pt"}});
    });
  } else {
    // torch.save's format (Accelerate's --unsafe_serialization), in the
    // safetensors order (names sorted) as torch.load returns a dict anyway.
    std::sort(views.begin(), views.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& view : views) {
      const safetensors::Entry entry{view.name, view.dtype, view.shape, 0, view.nbytes};
      at::Tensor t = at::empty(view.shape, detail::scalar_type_of(entry, first));
      if (view.nbytes > 0) std::memcpy(t.data_ptr(), view.data, view.nbytes);
      tensors.emplace_back(view.name, std::move(t));
    }
    merged.output_file = write_output(output_dir, file_name, [&](detail::ByteSink& sink) {
      detail::write_torch_save(sink, detail::tensor_dict(tensors));
    });
  }
  return merged;
}

}  // namespace accel
