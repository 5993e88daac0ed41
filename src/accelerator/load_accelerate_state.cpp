#include "accelerator/load_accelerate_state.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <optional>
#include <filesystem>
#include <regex>
#include <set>

#include "accel/error.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "formats/model_weights.hpp"
#include "checkpoint/random_states.hpp"
#include "accelerator/checkpoint_files.hpp"
#include "accelerator/checkpoint_layouts.hpp"
#include "accelerator/load_dcp_state.hpp"
#include "checkpoint/optimizer_reshard.hpp"
#include "formats/dcp.hpp"
#include "formats/torch_pickle.hpp"
#include "core/file_io.hpp"
#include "optim/optimizer_state.hpp"

namespace fs = std::filesystem;

namespace accel::detail {

namespace {

bool exists(const std::string& path) {
  std::error_code error;
  return fs::exists(path, error);
}

// The model file Accelerate wrote for model i: safetensors (0.25 and later),
// pytorch_model.bin (0.22), or a sharded index of either.
std::string model_file(const std::string& dir, size_t i) {
  static const std::pair<const char*, const char*> kinds[] = {{"model", ".safetensors"},
                                                              {"pytorch_model", ".bin"},
                                                              {"model", ".safetensors.index.json"},
                                                              {"pytorch_model", ".bin.index.json"}};
  for (const auto& [base, ext] : kinds) {
    const std::string path = dir + "/" + numbered_file(base, i, ext);
    if (exists(path)) return path;
  }
  return {};
}

// random_states_{i}.pkl: one per process.
std::set<int64_t> saved_ranks(const std::string& dir) {
  static const std::regex pattern("random_states_(0|[1-9][0-9]{0,5})\\.pkl");
  std::set<int64_t> ranks;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, match, pattern)) ranks.insert(std::stoll(match[1].str()));
  }
  return ranks;
}

// Prepared count n must match the files: file n-1 present, file n absent.
void expect_files(const std::string& dir, const char* what, const char* base, const char* ext, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const std::string name = numbered_file(base, i, ext);
    require(exists(dir + "/" + name), ErrorCode::InvalidArgument,
            "load_state: " + dir + " lacks " + name + ": it holds " + std::to_string(i) + " " + what + ", " +
                std::to_string(n) + " are prepared (registered) now");
  }
  const std::string extra = numbered_file(base, n, ext);
  require(!exists(dir + "/" + extra), ErrorCode::InvalidArgument,
          "load_state: " + dir + " holds " + extra + ": more " + what + " than the " + std::to_string(n) +
              " prepared (registered) now");
}

double scaler_number(const c10::impl::GenericDict& dict, const std::string& path, const char* key) {
  auto it = dict.find(key);
  require(it != dict.end() && (it->value().isDouble() || it->value().isInt()), ErrorCode::IO,
          "load_state: " + path + ": \"" + key + "\" is missing or not a number");
  return it->value().isDouble() ? it->value().toDouble() : static_cast<double>(it->value().toInt());
}

// A file of the checkpoint, confined to its directory as libaccel's own are.
std::string read_inside(const std::string& dir, const std::string& path) {
  require_inside_checkpoint(dir, path);
  return read_regular_file(path);
}

// What a custom object's load function receives. libaccel writes the
// object's bytes as a pickled Python bytes object (pickle_bytes): a libaccel
// checkpoint whose manifest is gone (read as Accelerate's) gave the objects
// that archive instead of their bytes, which no Python object could load.
// Anything else (Accelerate's torch.save of a state dict) goes as the file is.
std::string custom_object_bytes(const std::string& dir, const std::string& path) {
  std::string bytes = read_inside(dir, path);
  if (!is_zip_archive(bytes)) return bytes;
  try {
    c10::IValue value = read_torch_save(bytes, "load_state: " + path);
    if (value.isString()) return value.toStringRef();
  } catch (const Error&) {  // not libaccel's pickled bytes: the object reads the file itself
  }
  return bytes;
}

}  // namespace

ModelLoadPlan plan_model_load(const ModelWeights& weights, const NamedTensors& state_dict, const std::string& path,
                              size_t i) {
  ModelLoadPlan plan;
  std::set<std::string> expected;
  for (const auto& [name, tensor] : state_dict) {
    expected.insert(name);
    auto it = weights.tensors().find(name);
    require(it != weights.tensors().end(), ErrorCode::IO,
            "load_state: " + path + " lacks \"" + name + "\" of model " + std::to_string(i));
    const ModelWeights::Tensor& stored = it->second;
    require(stored.shape == tensor.sizes().vec(), ErrorCode::InvalidArgument,
            "load_state: " + path + ": \"" + name + "\" has shape " + c10::str(at::IntArrayRef(stored.shape)) +
                ", the model's has " + c10::str(tensor.sizes()));
    require(weights.scalar_type(stored) == tensor.scalar_type(), ErrorCode::InvalidArgument,
            "load_state: " + path + ": \"" + name + "\" is stored as " + stored.dtype + ", the model's is " +
                c10::toString(tensor.scalar_type()));
    plan.emplace_back(tensor, &stored);
  }
  for (const auto& [name, stored] : weights.tensors()) {
    require(expected.count(name) == 1, ErrorCode::InvalidArgument,
            "load_state: " + stored.file + " holds \"" + name + "\", which model " + std::to_string(i) + " lacks");
  }
  return plan;
}

bool is_accelerate_checkpoint(const std::string& dir) {
  return !exists(dir + "/" + kManifestName) &&
         (!model_file(dir, 0).empty() || exists(dir + "/optimizer.bin") || exists(dir + "/random_states_0.pkl") ||
          DcpDirectory::is_dcp(dir + "/" + dcp_model_folder(0)));
}

void load_accelerate_checkpoint(AcceleratorState& st, const std::string& dir) {
  // 1. Read and check everything.
  CheckpointTargets targets = live_targets(st);
  const std::set<int64_t> ranks = saved_ranks(dir);
  const bool dcp = DcpDirectory::is_dcp(dir + "/" + dcp_model_folder(0));
  if (!ranks.empty()) {
    const int64_t saved = *ranks.rbegin() + 1;
    require(static_cast<int64_t>(ranks.size()) == saved, ErrorCode::IO,
            "load_state: " + dir + " lacks some of random_states_0.pkl to random_states_" + std::to_string(saved - 1) +
                ".pkl");
    // The model and optimizer state is whole (or in DCP chunks) and loads at any
    // world size; a process the saving run did not have keeps its generators.
    require(saved == st.world_size() || dcp || !st.shards_models(), ErrorCode::InvalidArgument,
            "load_state: " + dir + " was saved by " + std::to_string(saved) + " processes (random_states_0.pkl to " +
                "random_states_" + std::to_string(saved - 1) + ".pkl" + "), " + std::to_string(st.world_size()) +
                " are running");
  }
  const std::string no_more = model_file(dir, targets.models.size());
  require(no_more.empty() && !DcpDirectory::is_dcp(dir + "/" + dcp_model_folder(targets.models.size())),
          ErrorCode::InvalidArgument,
          "load_state: " + dir + " holds " +
              (no_more.empty() ? dir + "/" + dcp_model_folder(targets.models.size()) : no_more) +
              ": more models than the " + std::to_string(targets.models.size()) + " prepared now");
  std::vector<ModelWeights> weights;
  std::vector<ModelLoadPlan> plans;
  std::vector<std::pair<at::Tensor, at::Tensor>> dcp_values;
  // Sharded models are gathered until the values are in, then keep their slices (collective).
  std::vector<std::unique_ptr<ModelImpl::Gathered>> gathered;
  weights.reserve(targets.models.size());
  for (size_t i = 0; i < targets.models.size(); ++i) {
    const bool from_dcp = DcpDirectory::is_dcp(dir + "/" + dcp_model_folder(i));
    // FULL_SHARD reads its shard of a DCP directly; otherwise the values are whole.
    if (targets.models[i]->flat_shard() && !(from_dcp && targets.models[i]->full_shard())) {
      gathered.push_back(std::make_unique<ModelImpl::Gathered>(*targets.models[i]));
    }
    if (from_dcp) {
      auto values = dcp_model_values(dir + "/" + dcp_model_folder(i), *targets.models[i]);
      dcp_values.insert(dcp_values.end(), values.begin(), values.end());
      continue;
    }
    const std::string path = model_file(dir, i);
    require(!path.empty(), ErrorCode::InvalidArgument,
            "load_state: " + dir + " has no weights for model " + std::to_string(i) + " (" +
                numbered_file("model", i, ".safetensors") + " or " + numbered_file("pytorch_model", i, ".bin") + ")");
    require_inside_checkpoint(dir, path);
    weights.push_back(ModelWeights::open(path));
    plans.push_back(plan_model_load(weights.back(), model_state_dict(*targets.models[i]), path, i));
  }
  if (!dcp) expect_files(dir, "optimizers", "optimizer", ".bin", targets.optimizers.size());
  expect_files(dir, "schedulers", "scheduler", ".bin", targets.schedulers.size());
  std::vector<c10::IValue> optimizer_states;  // read straight from the files into tensors
  std::vector<std::string> scheduler_bytes, custom_bytes;
  // One model's optimizers, when the state must be rebuilt (DCP) or cut (a sharded strategy).
  const bool sharded = targets.models.size() == 1 && targets.models.front()->flat_shard() != nullptr;
  require(
      !(dcp || st.shards_models()) || targets.optimizers.empty() || targets.models.size() == 1, ErrorCode::Unsupported,
      "load_state: " + dir + ": loading an Accelerate checkpoint " +
          (dcp ? std::string("in DCP form")
               : "under sharding_strategy " + std::string(to_string(st.sharding_strategy))) +
          " with optimizers needs one prepared model, and " + std::to_string(targets.models.size()) + " are prepared");
  for (size_t i = 0; i < targets.optimizers.size() && (dcp || sharded); ++i) {
    const ModelImpl& model = *targets.models.front();
    const std::string optimizer_dir = dir + "/" + dcp_optimizer_folder(i),
                      file = dir + "/" + numbered_file("optimizer", i, ".bin");
    if (dcp) {  // read one parameter at a time, this process's elements kept
      optimizer_states.push_back(dcp_optimizer_state(optimizer_dir, live_layout(model), live_member(model)));
      continue;
    }
    require_inside_checkpoint(dir, file);
    // Mapped: only the pages holding this process's elements are read.
    const c10::IValue state =
        read_torch_save_file(file, "load_state: " + file, PickleVocabulary::StateDict, StorageReads::Map);
    optimizer_states.push_back(reshard_optimizer_state(
        whole_layout(model), [&](int) { return state; }, live_layout(model), live_member(model),
        "load_state: " + file));
  }
  for (size_t i = 0; i < targets.optimizers.size() && !(dcp || sharded); ++i) {
    const std::string file = dir + "/" + numbered_file("optimizer", i, ".bin");
    require_inside_checkpoint(dir, file);
    // Accelerate writes torch.save pickles; a LibTorch (TorchScript) archive is no
    // Accelerate file and would reach LibTorch's unhardened unpickler.
    require(
        !is_torchscript_archive_file(file), ErrorCode::IO,
        "load_state: " + file + " is a LibTorch (TorchScript) archive, not the torch.save pickle Accelerate writes");
    optimizer_states.push_back(read_torch_save_file(file, "load_state: " + file));
  }
  for (size_t i = 0; i < targets.schedulers.size(); ++i) {
    scheduler_bytes.push_back(read_inside(dir, dir + "/" + numbered_file("scheduler", i, ".bin")));
  }
  for (size_t i = 0; i < st.checkpoint_objects.size(); ++i) {
    custom_bytes.push_back(custom_object_bytes(dir, dir + "/" + custom_object_file(i)));
  }
  const std::string scaler_path = dir + "/scaler.pt";
  require(exists(scaler_path) == (st.scaler != nullptr), ErrorCode::InvalidArgument,
          "load_state: " + dir +
              (st.scaler ? " has no fp16 loss scaler state (scaler.pt)"
                         : " holds fp16 loss scaler state (scaler.pt) but fp16 is off"));
  double scale = 0, growth_tracker = 0;
  if (st.scaler) {
    const c10::IValue state = read_torch_save(read_inside(dir, scaler_path), scaler_path);
    require(state.isGenericDict(), ErrorCode::IO, "load_state: " + scaler_path + " is not GradScaler's state dict");
    scale = scaler_number(state.toGenericDict(), scaler_path, "scale");
    growth_tracker = scaler_number(state.toGenericDict(), scaler_path, "_growth_tracker");
    require(std::isfinite(scale) && scale > 0 && growth_tracker >= 0, ErrorCode::IO,
            "load_state: " + scaler_path + ": scale " + std::to_string(scale) + " or _growth_tracker " +
                std::to_string(growth_tracker) + " out of range");
  }

  // This process's generator states (Python's own generators are not ours to restore).
  std::optional<RandomStates> rng;
  const std::string rng_path = dir + "/" + random_states_file(st.rank());
  if (exists(rng_path) && (ranks.empty() || *ranks.rbegin() + 1 == st.world_size() || st.rank() <= *ranks.rbegin())) {
    rng = read_random_states(read_inside(dir, rng_path), targets.loaders.size(), "load_state: " + rng_path);
  }

  // 2. Apply: the loads that can still refuse first, rolled back together.
  std::vector<c10::IValue> optimizer_backup;  // the live state's own tensors (optimizer_checkpoint.hpp)
  std::vector<std::string> scheduler_backup, custom_backup;
  for (auto& o : targets.optimizers) optimizer_backup.push_back(o.state_dict());
  for (auto& s : targets.schedulers) scheduler_backup.push_back(s.save());
  for (auto& c : st.checkpoint_objects) custom_backup.push_back(c.save());
  size_t custom_loaded = 0;
  auto rollback = [&] {
    for (size_t i = 0; i < targets.optimizers.size(); ++i) targets.optimizers[i].load_state_dict(optimizer_backup[i]);
    for (size_t i = 0; i < targets.schedulers.size(); ++i) targets.schedulers[i].load(scheduler_backup[i]);
    for (size_t i = 0; i < custom_loaded; ++i) st.checkpoint_objects[i].load(custom_backup[i]);
  };
  std::string loading;
  try {
    for (size_t i = 0; i < targets.optimizers.size(); ++i) {
      loading = dir + "/" + numbered_file("optimizer", i, ".bin");
      targets.optimizers[i].load_state_dict(optimizer_states[i]);
    }
    for (size_t i = 0; i < targets.schedulers.size(); ++i) {
      loading = dir + "/" + numbered_file("scheduler", i, ".bin");
      targets.schedulers[i].load(scheduler_bytes[i]);
    }
    for (; custom_loaded < st.checkpoint_objects.size(); ++custom_loaded) {
      loading = dir + "/custom_checkpoint_" + std::to_string(custom_loaded) + ".pkl";
      st.checkpoint_objects[custom_loaded].load(custom_bytes[custom_loaded]);
    }
  } catch (const Error& e) {
    rollback();
    fail(e.code(), "load_state: " + loading + ": " + e.what());
  } catch (...) {
    rollback();
    throw;
  }
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < plans.size(); ++i) {  // the models read from files, in order
    for (auto& [tensor, stored] : plans[i]) tensor.copy_(weights[i].values(*stored));
  }
  for (auto& [tensor, value] : dcp_values) tensor.copy_(value);
  for (auto& g : gathered) g->scattered();
  gathered.clear();
  if (st.scaler) st.scaler->restore(scale, static_cast<int64_t>(growth_tracker));
  if (rng) {  // checked against the live generators above: cannot fail
    {
      at::Generator gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(rng->cpu);
    }
    for (auto& [gen, state] : rng->cuda) {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
    }
    if (rng->has_step) st.gradient_state->step = rng->step;
  }
}

}  // namespace accel::detail
