// load_state: every file of a checkpoint is read, checksummed and checked
// against what is prepared now before anything is applied, so a bad
// checkpoint leaves the run exactly as it was.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>

#include "accel/accelerator.hpp"
#include "accel/error.hpp"
#include "accelerator/load_accelerate_state.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/random_states.hpp"
#include "formats/safetensors.hpp"
#include "accelerator/checkpoint_files.hpp"
#include "accelerator/checkpoint_layouts.hpp"
#include "accelerator/load_dcp_state.hpp"
#include "accelerator/tensor_parallel_state.hpp"
#include "checkpoint/optimizer_reshard.hpp"
#include "formats/tensor_io.hpp"
#include "formats/torch_pickle.hpp"
#include "core/file_io.hpp"
#include "optim/optimizer_state.hpp"
#include "core/json.hpp"
#include "model/model_impl.hpp"

namespace accel {

namespace {

using detail::CheckpointReader;
using detail::JsonFile;

// A generator state from the RNG file, checked against the live generator's
// (same dtype and size), so that set_state cannot fail once applying begins.
at::Tensor checked_generator_state(const safetensors::File& file, const std::string& name, const at::Generator& live) {
  const safetensors::Entry* entry = file.find(name);
  require(entry != nullptr, ErrorCode::IO, "load_state: " + file.label() + " lacks the " + name + " generator state");
  at::Tensor current = live.get_state();
  require(entry->dtype == "U8", ErrorCode::IO,
          "load_state: " + file.label() + ": generator state \"" + name + "\" has dtype " + entry->dtype +
              ", expected U8 bytes");
  require(entry->shape == current.sizes().vec(), ErrorCode::IO,
          "load_state: " + file.label() + ": generator state \"" + name + "\" has shape " +
              c10::str(at::IntArrayRef(entry->shape)) + ", this generator's has " + c10::str(current.sizes()));
  at::Tensor state = detail::read_tensor(file, *entry);
  detail::validate_generator_state(live, state, "load_state: " + file.label() + ": generator state \"" + name + "\"");
  return state;
}

// The loaders' saved positions: [[epoch, batches_consumed], ...].
std::vector<DataLoader::Position> checked_positions(const safetensors::File& file, size_t loaders) {
  auto it = file.metadata().find("dataloaders");
  require(it != file.metadata().end(), ErrorCode::IO,
          "load_state: " + file.label() + " lacks the dataloader positions (metadata \"dataloaders\")");
  nlohmann::json positions =
      detail::parse_json(it->second, "load_state: " + file.label() + ": metadata \"dataloaders\"", ErrorCode::IO);
  require(positions.is_array() && positions.size() == loaders, ErrorCode::IO,
          "load_state: " + file.label() + ": metadata \"dataloaders\" does not hold the positions of " +
              std::to_string(loaders) + " dataloaders");
  std::vector<DataLoader::Position> out;
  for (size_t i = 0; i < positions.size(); ++i) {
    const nlohmann::json& p = positions[i];
    const std::string where = "load_state: " + file.label() + ": dataloaders[" + std::to_string(i) + "]";
    require(p.is_array() && p.size() == 2, ErrorCode::IO, where + " is not [epoch, batches_consumed]");
    require(p[0].is_number_unsigned(), ErrorCode::IO,
            where + ": epoch " + JsonFile::describe(p[0]) + " is not a non-negative integer");
    require(p[1].is_number_integer() && p[1].get<int64_t>() >= 0, ErrorCode::IO,
            where + ": batches_consumed " + JsonFile::describe(p[1]) + " is not a non-negative integer");
    out.push_back({p[0].get<uint64_t>(), p[1].get<int64_t>()});
  }
  return out;
}

// Micro-steps into the accumulation window at the save (metadata "step"; 0 in
// checkpoints written before it was saved).
int64_t checked_step(const safetensors::File& file) {
  auto it = file.metadata().find("step");
  if (it == file.metadata().end()) return 0;
  int64_t step = -1;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, error] = std::from_chars(it->second.data(), end, step);
  require(error == std::errc() && ptr == end && step >= 0, ErrorCode::IO,
          "load_state: " + file.label() + ": metadata \"step\" is \"" + it->second.substr(0, 40) +
              "\", not a non-negative integer");
  return step;
}

// Checkpoints written before libaccel used Accelerate's format: the states as
// safetensors tensors ("cpu", "cuda_<i>"), positions and step as metadata.
detail::RandomStates legacy_random_states(const CheckpointReader& reader, const std::string& name, size_t loaders) {
  reader.verify(name);
  safetensors::File file = safetensors::File::open(reader.path(name));
  detail::RandomStates out;
  out.cpu = checked_generator_state(file, "cpu", at::detail::getDefaultCPUGenerator());
  if (torch::cuda::is_available()) {
    for (int i = 0, n = static_cast<int>(torch::cuda::device_count()); i < n; ++i) {
      const std::string device = "cuda_" + std::to_string(i);
      if (!file.find(device)) continue;  // saved on a machine with fewer GPUs
      at::Generator gen = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<int8_t>(i)));
      out.cuda.emplace_back(gen, checked_generator_state(file, device, gen));
    }
  }
  out.positions = checked_positions(file, loaders);
  out.step = checked_step(file);
  return out;
}

// The positions must lie within a pass of the loaders prepared now: a position
// of 10^12 batches was taken, and the next pass then yielded nothing.
// `world`: the processes the loaders deal batches to (the data-parallel ones).
void check_positions(const detail::RandomStates& rng, const std::vector<DataLoader*>& loaders, int world,
                     const std::string& path) {
  for (size_t i = 0; i < rng.positions.size() && i < loaders.size(); ++i) {
    if (loaders[i]->is_iterable()) continue;  // a stream's length is unknown: read past what it yields
    // A whole pass: a loader from skip_first_batches reports fewer until its
    // first pass ends, while a resumed position counts from the pass's start.
    const int64_t pass = loaders[i]->skip_first_batches(0)->num_batches();
    require(rng.positions[i].batches_consumed <= pass, ErrorCode::IO,
            "load_state: " + path + ": dataloaders[" + std::to_string(i) + "]: batches_consumed " +
                std::to_string(rng.positions[i].batches_consumed) + " exceeds the " + std::to_string(pass) +
                " batches of a pass of the dataloader prepared now");
    // Batches of the whole sampler: at most a pass on every process.
    const int64_t sampler = pass * world;
    require(rng.positions[i].sampler_offset <= sampler, ErrorCode::IO,
            "load_state: " + path + ": dataloaders[" + std::to_string(i) + "]: sampler_offset " +
                std::to_string(rng.positions[i].sampler_offset) + " exceeds the " + std::to_string(sampler) +
                " batches the dataloader prepared now deals in a pass");
  }
}

detail::RandomStates random_states(const CheckpointReader& reader, int rank, int world,
                                   const std::vector<DataLoader*>& loaders) {
  const std::string name = detail::random_states_file(rank), legacy = detail::legacy_random_states_file(rank);
  std::error_code error;
  if (!std::filesystem::exists(reader.path(name), error) && std::filesystem::exists(reader.path(legacy), error)) {
    detail::RandomStates rng = legacy_random_states(reader, legacy, loaders.size());
    check_positions(rng, loaders, world, reader.path(legacy));
    return rng;
  }
  detail::RandomStates rng =
      detail::read_random_states(reader.bytes(name), loaders.size(), "load_state: " + reader.path(name));
  check_positions(rng, loaders, world, reader.path(name));
  return rng;
}

// A checkpoint of replicated state saved by `saved` processes, loaded by
// `world` (an elastic job's new world). As Accelerate does when a process has no
// random_states_<rank> file: a process the saving run did not have keeps the
// generator state its seed gave it (the step and positions come from process 0's
// file). Each loader's position is carried over as batches of its sampler:
// `saved` processes each took batches_consumed of them, in turn, after the
// sampler_offset the saving run itself resumed at (without split_batches), so
// the new processes deal the epoch's batches from sampler_offset + consumed *
// saved on: no sample is seen twice, none is skipped. With split_batches every
// step takes one sampler batch at any world size: the position stays.
// `saved_world`: the processes that wrote random_states files; `saved` and
// `world`: the data-parallel processes then and now, which the loaders dealt
// batches to (fewer than the processes under tensor parallelism).
detail::RandomStates random_states_at_another_world_size(const CheckpointReader& reader, int rank, int saved_world,
                                                         int saved, int world, bool split_batches,
                                                         const std::vector<DataLoader*>& loaders) {
  const int source = rank < saved_world ? rank : 0;
  const std::string name = detail::random_states_file(source), legacy = detail::legacy_random_states_file(source);
  std::error_code error;
  const bool use_legacy =
      !std::filesystem::exists(reader.path(name), error) && std::filesystem::exists(reader.path(legacy), error);
  detail::RandomStates rng =
      use_legacy ? legacy_random_states(reader, legacy, loaders.size())
                 : detail::read_random_states(reader.bytes(name), loaders.size(), "load_state: " + reader.path(name));
  if (rank >= saved_world) {
    rng.cpu = at::Tensor();
    rng.cuda.clear();
  }
  if (!split_batches) {  // with split_batches, one global batch per step at any world size
    for (size_t i = 0; i < rng.positions.size(); ++i) {
      auto& position = rng.positions[i];
      require(position.batches_consumed <= (int64_t{1} << 40) && position.sampler_offset <= (int64_t{1} << 40),
              ErrorCode::IO,
              "load_state: " + reader.path(use_legacy ? legacy : name) + ": dataloaders[" + std::to_string(i) +
                  "] is beyond any dataloader (batches_consumed " + std::to_string(position.batches_consumed) +
                  ", sampler_offset " + std::to_string(position.sampler_offset) + ")");
      position.sampler_offset += position.batches_consumed * saved;
      position.batches_consumed = 0;
      // Saved at the end of a pass, the last round completed from the epoch's
      // start (even_batches) counts more batches than the sampler has: the pass is over.
      if (i < loaders.size() && !loaders[i]->is_iterable()) {
        position.sampler_offset =
            std::min(position.sampler_offset, loaders[i]->skip_first_batches(0)->num_batches() * world);
      }
    }
  }
  check_positions(rng, loaders, world, reader.path(use_legacy ? legacy : name));
  return rng;
}

bool saved_sharded_models_in(const JsonFile& manifest) {
  return manifest.has("sharded_models") && manifest.boolean("sharded_models");
}

// Whether the checkpoint was saved under the strategy running now; if not, its
// sharded state is cut again (checkpoint_layouts.hpp) even at the same world size.
bool saved_with_this_strategy(const JsonFile& manifest, const detail::AcceleratorState& st) {
  if (manifest.has("sharding_strategy")) return manifest.string("sharding_strategy") == to_string(st.sharding_strategy);
  // Written before the manifest named the strategy: FULL_SHARD (and
  // HYBRID_SHARD) also shard the models, the others do not.
  const bool now_full =
      st.sharding_strategy == ShardingStrategy::FullShard || st.sharding_strategy == ShardingStrategy::HybridShard;
  return saved_sharded_models_in(manifest) == now_full;
}

std::string newest_checkpoint(const detail::AcceleratorState& st) {
  // Interrupted saves are cleaned by every process before looking, so that
  // all of them see the same checkpoints.
  detail::remove_interrupted_saves(st);
  auto existing = detail::numbered_checkpoints(detail::checkpoints_root(st));
  require(!existing.empty(), ErrorCode::IO, "load_state: no checkpoint in " + detail::checkpoints_root(st));
  return existing.back().second;
}

}  // namespace

void Accelerator::load_state(const std::string& requested_dir) {
  detail::AcceleratorState& st = *state_;
  std::string dir = requested_dir;
  if (dir.empty()) {
    require(st.project.automatic_checkpoint_naming, ErrorCode::State,
            "load_state: no directory given and automatic_checkpoint_naming is off");
    dir = newest_checkpoint(st);
  }
  for (auto& [id, hook] : st.load_state_pre_hooks) hook(dir);
  const bool sharded = st.shards_models();
  if (detail::is_accelerate_checkpoint(dir)) {  // written by Python Accelerate: no manifest, its own files
    detail::load_accelerate_checkpoint(st, dir);
    return;
  }

  // 1. Read and check everything.
  const std::string manifest_path = dir + "/" + detail::kManifestName;
  std::error_code missing;
  require(std::filesystem::exists(manifest_path, missing), ErrorCode::IO,
          "load_state: " + manifest_path + " is missing: " + dir + " is not a complete libaccel checkpoint");
  JsonFile manifest(manifest_path, detail::read_regular_file(manifest_path));
  require(manifest.string("format") == "libaccel-checkpoint", ErrorCode::IO,
          "load_state: " + manifest_path + " is not a libaccel checkpoint manifest (format \"" +
              manifest.string("format") + "\")");
  const int64_t version = manifest.integer("version");
  require(version >= detail::kOldestReadableCheckpointVersion && version <= detail::kCheckpointFormatVersion,
          ErrorCode::Unsupported,
          "load_state: " + manifest_path + " has format version " + std::to_string(version) +
              ", this libaccel reads versions " + std::to_string(detail::kOldestReadableCheckpointVersion) + " to " +
              std::to_string(detail::kCheckpointFormatVersion));
  const CheckpointReader reader(dir, manifest, static_cast<int>(version));

  detail::CheckpointTargets targets = detail::live_targets(st);
  auto expect_count = [&](const char* what, size_t have) {
    uint64_t saved = manifest.count(what);
    require(saved == have, ErrorCode::InvalidArgument,
            "load_state: " + dir + " holds " + std::to_string(saved) + " " + what + ", " + std::to_string(have) +
                " are prepared (registered) now");
  };
  expect_count("models", targets.models.size());
  expect_count("optimizers", targets.optimizers.size());
  expect_count("schedulers", targets.schedulers.size());
  expect_count("dataloaders", targets.loaders.size());
  expect_count("custom_objects", st.checkpoint_objects.size());
  const int64_t saved_processes = manifest.integer("num_processes");
  require(saved_processes >= 1, ErrorCode::IO,
          "load_state: " + manifest_path + ": num_processes is " + std::to_string(saved_processes));
  // The data-parallel processes the loaders dealt batches to (fewer than the
  // processes under tensor parallelism; recorded since the mesh was built).
  const int64_t saved_data_parallel =
      manifest.has("data_parallel_size") ? manifest.integer("data_parallel_size") : saved_processes;
  require(saved_data_parallel >= 1 && saved_data_parallel <= saved_processes, ErrorCode::IO,
          "load_state: " + manifest_path + ": data_parallel_size is " + std::to_string(saved_data_parallel) +
              " with num_processes " + std::to_string(saved_processes));
  const bool same_world = saved_processes == st.world_size();
  const bool same_loaders = same_world && saved_data_parallel == st.batch_parallel_size();
  const bool saved_sharded = manifest.has("sharded_optimizers") && manifest.boolean("sharded_optimizers");
  const bool saved_sharded_models = saved_sharded_models_in(manifest);
  // Replicated state (every process held all of it) loads at any world size, as
  // an elastic job that lost or gained a node needs. Sharded state (saved, or
  // wanted now) loads as saved at the same world size and strategy, and is cut
  // again for this process otherwise (checkpoint_layouts.hpp).
  // Saved with SHARDED_STATE_DICT: PyTorch distributed checkpoints, read one
  // parameter at a time and cut for this process (load_dcp_state.hpp), at any world size.
  const bool dcp = manifest.has("state_dict_type") && manifest.string("state_dict_type") == "SHARDED_STATE_DICT";
  require(!dcp || targets.models.size() == 1 || targets.optimizers.empty(), ErrorCode::Unsupported,
          "load_state: " + dir + " holds distributed checkpoints; reading them needs one prepared model, and " +
              std::to_string(targets.models.size()) + " are prepared");
  if (dcp) {  // the files the directories hold, checked against the manifest before anything reads them
    for (const auto& [name, entry] : manifest.field("files").items()) {
      if (name.find('/') != std::string::npos) reader.verify(name);
    }
  }
  // The same world and strategy can still lay the shards out differently
  // (HYBRID_SHARD over other nodes): the recorded layouts decide then.
  bool same_layouts = same_world && saved_with_this_strategy(manifest, st);
  for (size_t i = 0; same_layouts && manifest.has("layouts") && i < targets.models.size(); ++i) {
    same_layouts = detail::saved_layout(manifest, reader, *targets.models[i], i).to_json() ==
                   detail::live_layout(*targets.models[i]).to_json();
  }
  const bool reshard = !dcp && (saved_sharded || saved_sharded_models || sharded) && !same_layouts;
  // Cut again: each model's saved and running layouts, and the model each
  // optimizer steps (its state follows that model's layout).
  std::vector<detail::ShardLayout> sources, live_layouts;
  std::vector<size_t> optimizer_model(targets.optimizers.size(), 0);
  if (reshard) {
    for (size_t i = 0; i < targets.models.size(); ++i) {
      sources.push_back(detail::saved_layout(manifest, reader, *targets.models[i], i));
      // A split model reads the whole state (checked against whole shapes), then keeps its slices.
      const bool split = targets.models[i]->tensor_parallel() != nullptr;
      live_layouts.push_back(split ? detail::whole_layout(*targets.models[i])
                                   : detail::live_layout(*targets.models[i]));
      detail::check_same_parameters(sources.back(), live_layouts.back(),
                                    "load_state: " + dir + " (model " + std::to_string(i) + ")");
    }
    for (size_t j = 0; j < targets.optimizers.size(); ++j) {
      auto it = std::find_if(targets.models.begin(), targets.models.end(),
                             [&](const auto& m) { return m.get() == targets.optimizers[j].model; });
      require(it != targets.models.end(), ErrorCode::Unsupported,
              "load_state: " + dir + ": optimizer " + std::to_string(j) +
                  " steps a model that is not prepared, so its state cannot be cut for this world and strategy");
      optimizer_model[j] = static_cast<size_t>(it - targets.models.begin());
    }
  }
  require(manifest.boolean("scaler") == (st.scaler != nullptr), ErrorCode::InvalidArgument,
          std::string("load_state: ") + dir +
              (st.scaler ? " has no fp16 loss scaler state" : " holds fp16 loss scaler state but fp16 is off"));
  // Same world and strategy: the files are this process's as they are.
  require(
      reshard || dcp || saved_sharded == sharded || targets.optimizers.empty(), ErrorCode::InvalidArgument,
      "load_state: " + dir +
          (saved_sharded ? " holds sharded optimizer state (one chunk per process)" : " holds full optimizer state") +
          " but sharding_strategy is " + to_string(st.sharding_strategy) +
          (st.process_group ? "" : " with one process and no cpu_offload"));
  const int64_t iteration = manifest.integer("iteration");

  // Each model as model.safetensors, or pytorch_model.bin when saved with
  // safe_serialization=false (Accelerate's names); the manifest covers either.
  std::vector<std::optional<detail::ModelWeights>> model_files;  // none: cut again instead
  std::vector<detail::ModelLoadPlan> model_plans;
  // Models split for tensor parallelism: where their whole tensors are staged (by model index).
  std::vector<std::pair<size_t, detail::WholeModelTargets>> split_targets;
  // FULL_SHARD models loaded from a full model.safetensors: gathered until the
  // values are in, then each process keeps its slices (collective).
  std::vector<std::unique_ptr<detail::ModelImpl::Gathered>> gathered;
  model_files.reserve(targets.models.size());
  // Values of models whose saved shards were cut again: (tensor, value).
  std::vector<std::pair<at::Tensor, at::Tensor>> resharded_values;
  for (size_t i = 0; i < targets.models.size(); ++i) {
    const detail::ModelImpl& model = *targets.models[i];
    if (dcp && model.tensor_parallel()) {
      // Split: each whole tensor into staging (FULL_SHARD's units gathered), then this rank's slices.
      if (model.flat_shard()) gathered.push_back(std::make_unique<detail::ModelImpl::Gathered>(model));
      split_targets.emplace_back(i, detail::whole_model_targets(model, detail::model_state_dict(model)));
      auto values =
          detail::dcp_model_values(reader.path(detail::dcp_model_folder(i)), split_targets.back().second.targets);
      resharded_values.insert(resharded_values.end(), values.begin(), values.end());
      model_files.emplace_back();
      model_plans.emplace_back();
      continue;
    }
    if (dcp) {
      // ZeRO-1/2 keep a master copy of their chunk: refreshed from the parameters.
      if (model.flat_shard() && !model.full_shard())
        gathered.push_back(std::make_unique<detail::ModelImpl::Gathered>(model));
      auto values = detail::dcp_model_values(reader.path(detail::dcp_model_folder(i)), model);
      resharded_values.insert(resharded_values.end(), values.begin(), values.end());
      model_files.emplace_back();
      model_plans.emplace_back();
      continue;
    }
    if (saved_sharded_models && reshard) {
      require(!model.tensor_parallel(), ErrorCode::Unsupported,
              "load_state: " + dir + " holds model " + std::to_string(i) +
                  " as FULL_SHARD parameter shards of an unsplit run, which libaccel does not cut for tp_size > 1; "
                  "`accel merge-weights` turns them into model.safetensors");
      // ZeRO-1/2 keep a master copy of their chunk: refreshed from the parameters.
      if (model.flat_shard() && !model.full_shard())
        gathered.push_back(std::make_unique<detail::ModelImpl::Gathered>(model));
      auto values = detail::resharded_model(reader, i, sources[i], model);
      resharded_values.insert(resharded_values.end(), values.begin(), values.end());
      model_files.emplace_back();
      model_plans.emplace_back();
      continue;
    }
    if (saved_sharded_models) {
      const std::string name = detail::model_shard_file(i, st.rank());
      std::error_code error;
      require(model.full_shard() != nullptr && std::filesystem::exists(reader.path(name), error),
              ErrorCode::InvalidArgument,
              "load_state: " + dir + " holds model " + std::to_string(i) +
                  " as FULL_SHARD parameter shards (one per process) but sharding_strategy is " +
                  to_string(st.sharding_strategy) + (st.process_group ? "" : " with one process and no cpu_offload") +
                  "; `accel merge-weights` turns them into model.safetensors");
      reader.verify(name);
      model_files.emplace_back(detail::ModelWeights::open(reader.path(name)));
      model_plans.push_back(
          detail::plan_model_load(*model_files.back(), detail::sharded_model_state(model), reader.path(name), i));
      continue;
    }
    std::string name = detail::numbered_file("model", i, ".safetensors");
    const std::string pickled = detail::numbered_file("pytorch_model", i, ".bin");
    std::error_code error;
    if (!std::filesystem::exists(reader.path(name), error) && std::filesystem::exists(reader.path(pickled), error)) {
      name = pickled;
    }
    reader.verify(name);
    model_files.emplace_back(detail::ModelWeights::open(reader.path(name)));
    if (model.flat_shard()) gathered.push_back(std::make_unique<detail::ModelImpl::Gathered>(model));
    if (model.tensor_parallel()) {  // the whole tensors into staging, then this rank's slices
      split_targets.emplace_back(i, detail::whole_model_targets(model, detail::model_state_dict(model)));
      model_plans.push_back(
          detail::plan_model_load(*model_files.back(), split_targets.back().second.targets, reader.path(name), i));
      continue;
    }
    model_plans.push_back(
        detail::plan_model_load(*model_files.back(), detail::model_state_dict(model), reader.path(name), i));
  }
  // Each optimizer's state dict, read straight from its file into tensors
  // (format-1 checkpoints' LibTorch archives: their bytes, in legacy_optimizers).
  std::vector<c10::IValue> optimizer_states;
  std::map<size_t, std::string> legacy_optimizers;
  std::vector<std::string> scheduler_bytes, custom_bytes, custom_files;
  // Where optimizer i's state came from, for messages.
  auto optimizer_file = [&](size_t i) {
    if (dcp) return detail::dcp_optimizer_folder(i);
    return sharded ? detail::optimizer_shard_file(i, st.rank()) : detail::numbered_file("optimizer", i, ".bin");
  };
  for (size_t i = 0; i < targets.optimizers.size(); ++i) {
    if (dcp) {
      const detail::ModelImpl& model = *targets.models.front();
      const std::string folder = reader.path(detail::dcp_optimizer_folder(i));
      if (model.tensor_parallel()) {  // the whole state read, this rank's slices kept, cut again when sharded
        optimizer_states.push_back(detail::split_optimizer_from_whole(
            detail::dcp_optimizer_state(folder, detail::whole_layout(model), 0), model, "load_state: " + folder));
        continue;
      }
      optimizer_states.push_back(
          detail::dcp_optimizer_state(folder, detail::live_layout(model), detail::live_member(model)));
      continue;
    }
    if (reshard && targets.models[optimizer_model[i]]->tensor_parallel()) {
      optimizer_states.push_back(detail::split_optimizer_from_checkpoint(
          reader, i, sources[optimizer_model[i]], *targets.models[optimizer_model[i]],
          "load_state: " + dir + " (optimizer " + std::to_string(i) + ")"));
      continue;
    }
    if (reshard) {
      const size_t m = optimizer_model[i];
      optimizer_states.push_back(
          detail::resharded_optimizer(reader, i, sources[m], live_layouts[m], detail::live_member(*targets.models[m])));
      continue;
    }
    const std::string path = reader.path(optimizer_file(i));
    // Only format-1 checkpoints held LibTorch archives (TorchScript, read by LibTorch's
    // own unpickler); from format 2 optimizer.bin is a plain pickle that libaccel's
    // hardened reader reads, so an archive there is refused before LibTorch sees it.
    if (version == 1) {
      std::string bytes = reader.bytes(optimizer_file(i));
      if (detail::is_legacy_optimizer_archive(bytes)) {
        legacy_optimizers.emplace(i, std::move(bytes));
        optimizer_states.emplace_back();
        continue;
      }
    }
    reader.verify(optimizer_file(i));  // streamed: the file is never whole in memory
    require(!detail::is_torchscript_archive_file(path), ErrorCode::IO,
            "load_state: " + path +
                " is a LibTorch (TorchScript) archive, which only "
                "format-1 checkpoints hold; this checkpoint's manifest says format " +
                std::to_string(version) + ", whose optimizer state is a plain pickle");
    optimizer_states.push_back(detail::read_torch_save_file(path, "load_state: " + path));
    // Split for tensor parallelism: this rank's slices of the whole state.
    const detail::ModelImpl* stepped = targets.optimizers[i].model;
    if (stepped && stepped->tensor_parallel()) {
      optimizer_states.back() = detail::split_optimizer_state(optimizer_states.back(), *stepped, "load_state: " + path);
    }
  }
  for (size_t i = 0; i < targets.schedulers.size(); ++i) {
    scheduler_bytes.push_back(reader.bytes(detail::numbered_file("scheduler", i, ".bin")));
  }
  for (size_t i = 0; i < st.checkpoint_objects.size(); ++i) {
    const std::string name = detail::custom_object_file(i), legacy = detail::legacy_custom_object_file(i);
    std::error_code error;
    if (!std::filesystem::exists(reader.path(name), error) && std::filesystem::exists(reader.path(legacy), error)) {
      custom_bytes.push_back(reader.bytes(legacy));  // written before the pickle: the raw bytes
      custom_files.push_back(legacy);
      continue;
    }
    custom_files.push_back(name);
    const c10::IValue value = detail::read_torch_save(reader.bytes(name), "load_state: " + reader.path(name));
    require(value.isString(), ErrorCode::IO,
            "load_state: " + reader.path(name) + " holds a " + value.tagKind() + ", not the object's bytes");
    custom_bytes.push_back(value.toStringRef());
  }
  double scale = 0;
  int64_t growth_tracker = 0;
  if (st.scaler) {
    JsonFile scaler(reader.path("scaler.pt"), reader.bytes("scaler.pt"));
    const nlohmann::json& value = scaler.field("scale");
    require(value.is_number() && std::isfinite(value.get<double>()) && value.get<double>() > 0, ErrorCode::IO,
            "load_state: " + scaler.path() + ": \"scale\" is " + JsonFile::describe(value) + ", not a positive number");
    scale = value.get<double>();
    growth_tracker = scaler.integer("growth_tracker");
    require(growth_tracker >= 0, ErrorCode::IO,
            "load_state: " + scaler.path() + ": \"growth_tracker\" is " + std::to_string(growth_tracker) +
                ", not a non-negative count");
  }
  const detail::RandomStates rng =
      same_loaders ? random_states(reader, st.rank(), st.batch_parallel_size(), targets.loaders)
                   : random_states_at_another_world_size(
                         reader, st.rank(), static_cast<int>(saved_processes), static_cast<int>(saved_data_parallel),
                         st.batch_parallel_size(), st.dataloader_config.split_batches, targets.loaders);

  // 2. Apply. Optimizers, schedulers and the user's objects first, rolled back
  // if one of them fails (their load functions can reject what the checks
  // above could not judge); everything after them was checked and cannot fail.
  // An optimizer's backup is its state dict: the live tensors themselves, kept
  // while load_state_dict installs others (no copy of the state).
  std::vector<c10::IValue> optimizer_backup;
  std::vector<std::string> scheduler_backup, custom_backup;
  for (auto& o : targets.optimizers) optimizer_backup.push_back(o.state_dict());
  for (auto& s : targets.schedulers) scheduler_backup.push_back(s.save());
  for (auto& c : st.checkpoint_objects) custom_backup.push_back(c.save());
  size_t custom_loaded = 0;
  try {
    for (size_t i = 0; i < targets.optimizers.size(); ++i) {
      try {
        auto legacy = legacy_optimizers.find(i);
        if (legacy != legacy_optimizers.end()) {
          targets.optimizers[i].load_bytes(legacy->second);
        } else {
          targets.optimizers[i].load_state_dict(optimizer_states[i]);
        }
      } catch (const Error& e) {  // the optimizer knows its key, not its file
        fail(e.code(), "load_state: " + reader.path(optimizer_file(i)) + ": " + e.what());
      }
    }
    for (size_t i = 0; i < targets.schedulers.size(); ++i) {
      try {
        targets.schedulers[i].load(scheduler_bytes[i]);
      } catch (const Error& e) {  // the scheduler knows its key, not its file
        fail(e.code(), "load_state: " + reader.path(detail::numbered_file("scheduler", i, ".bin")) + ": " + e.what());
      }
    }
    for (; custom_loaded < st.checkpoint_objects.size(); ++custom_loaded) {
      try {
        st.checkpoint_objects[custom_loaded].load(custom_bytes[custom_loaded]);
      } catch (const Error& e) {  // the object's load function knows nothing of files
        fail(e.code(), "load_state: " + reader.path(custom_files[custom_loaded]) + ": " + e.what());
      }
    }
  } catch (...) {
    for (size_t i = 0; i < targets.optimizers.size(); ++i) targets.optimizers[i].load_state_dict(optimizer_backup[i]);
    for (size_t i = 0; i < targets.schedulers.size(); ++i) targets.schedulers[i].load(scheduler_backup[i]);
    for (size_t i = 0; i < custom_loaded; ++i) st.checkpoint_objects[i].load(custom_backup[i]);
    throw;
  }
  {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < targets.models.size(); ++i) {
      for (auto& [tensor, stored] : model_plans[i]) tensor.copy_(model_files[i]->values(*stored));
    }
    for (auto& [tensor, value] : resharded_values) tensor.copy_(value);
    for (const auto& [i, staged] : split_targets) staged.keep_slices(targets.models[i]->tensor_parallel()->slot);
    for (auto& g : gathered) g->scattered();
    gathered.clear();
  }
  if (st.scaler) st.scaler->restore(scale, growth_tracker);
  if (rng.cpu.defined()) {  // undefined: a process the saving run did not have keeps its own
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng.cpu);
  }
  for (auto [gen, state] : rng.cuda) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
  }
  for (size_t i = 0; i < rng.positions.size(); ++i) targets.loaders[i]->resume_from(rng.positions[i]);
  st.gradient_state->step = rng.step;
  if (st.project.automatic_checkpoint_naming) st.project.iteration = iteration + 1;
}

}  // namespace accel
