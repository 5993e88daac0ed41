// save_state: everything a run needs to continue exactly, in a directory that
// appears only when complete (checkpoint_dir.hpp), with a manifest of every
// file's size and checksum. load_state is in state_load.cpp. Layout and file
// formats: docs/checkpointing.md.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>

#include <csignal>
#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

#include "accel/accelerator.hpp"
#include "accel/data.hpp"
#include "accel/error.hpp"
#include "accel/optimizer.hpp"
#include "accel/scheduler.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/random_states.hpp"
#include "accelerator/checkpoint_files.hpp"
#include "accelerator/checkpoint_layouts.hpp"
#include "accelerator/save_dcp_state.hpp"
#include "accelerator/tensor_parallel_state.hpp"
#include "formats/tensor_io.hpp"
#include "formats/torch_pickle.hpp"
#include "model/model_impl.hpp"
#include "accelerator/accelerator_state.hpp"
#include "state/environment.hpp"

namespace accel {

namespace detail {

std::string numbered_file(const std::string& base, size_t i, const std::string& extension) {
  return (i == 0 ? base : base + "_" + std::to_string(i)) + extension;
}

std::string random_states_file(int rank) { return "random_states_" + std::to_string(rank) + ".pkl"; }
std::string optimizer_shard_file(size_t i, int rank) {
  return numbered_file("optimizer", i, "_rank" + std::to_string(rank) + ".bin");
}
std::string dcp_model_folder(size_t i) { return "pytorch_model_fsdp_" + std::to_string(i); }
std::string dcp_optimizer_folder(size_t i) { return "optimizer_" + std::to_string(i); }

std::string model_shard_file(size_t i, int rank) {
  return numbered_file("model", i, "_rank" + std::to_string(rank) + ".safetensors");
}
std::string legacy_random_states_file(int rank) { return "random_states_" + std::to_string(rank) + ".safetensors"; }

std::string custom_object_file(size_t i) { return "custom_checkpoint_" + std::to_string(i) + ".pkl"; }
std::string legacy_custom_object_file(size_t i) { return "custom_checkpoint_" + std::to_string(i) + ".bin"; }

std::string project_root(const AcceleratorState& state) {
  return state.project.project_dir.empty() ? std::string(".") : state.project.project_dir;
}

std::string checkpoints_root(const AcceleratorState& state) { return project_root(state) + "/checkpoints"; }

namespace {

// The registered objects still alive, in prepare order (the dead are forgotten).
template <class T>
std::vector<T> live(std::vector<std::pair<std::weak_ptr<const void>, T>>& list) {
  list.erase(std::remove_if(list.begin(), list.end(), [](const auto& e) { return e.first.expired(); }), list.end());
  std::vector<T> out;
  for (auto& e : list) out.push_back(e.second);
  return out;
}

}  // namespace

CheckpointTargets live_targets(AcceleratorState& state) {
  CheckpointTargets targets;
  for (auto& weak : state.prepared_models) {
    if (auto model = weak.lock()) targets.models.push_back(model);
  }
  targets.optimizers = live(state.prepared_optimizers);
  targets.schedulers = live(state.prepared_schedulers);
  targets.loaders = live(state.prepared_loaders);
  return targets;
}

NamedTensors model_state_dict(const ModelImpl& model) {
  NamedTensors dict = model.named_parameters();
  for (auto& b : model.named_buffers()) dict.push_back(b);
  return dict;
}

NamedTensors sharded_model_state(const ModelImpl& model) {
  NamedTensors dict{{"flat_param_shard", model.full_shard()->shard()}};
  for (auto& b : model.named_buffers()) dict.push_back(b);
  return dict;
}

void remove_interrupted_saves(const AcceleratorState& state) {
  if (state.project.automatic_checkpoint_naming) remove_leftovers(checkpoints_root(state));
}

}  // namespace detail

namespace {

// Test hook: ACCEL_TEST_KILL_DURING_SAVE=<file> kills this process right after
// writing that file ("commit": right after the commit, before pruning), to
// show an interrupted save leaves the newest committed checkpoint.
void maybe_die_after(const std::string& file) {
  static const auto target = detail::get_env("ACCEL_TEST_KILL_DURING_SAVE");
  if (target && *target == file) std::raise(SIGKILL);
}

// The processes that write shared files and commit the directory.
bool writes_shared_files(const detail::AcceleratorState& state) {
  return state.rank() == 0 || (state.project.save_on_each_node && state.env.local_rank == 0);
}

// Runs after the new checkpoint is committed, never before: a save interrupted
// at any moment must leave the newest committed checkpoint in place (with
// total_limit=1 pruning first would leave none). So total_limit+1 checkpoints
// exist on disk for a moment.
void prune_old_checkpoints(const detail::AcceleratorState& state) {
  if (state.project.total_limit <= 0) return;
  auto existing = detail::numbered_checkpoints(detail::checkpoints_root(state));
  while (static_cast<int64_t>(existing.size()) > state.project.total_limit) {
    detail::retire_directory(existing.front().second);  // best effort: a leftover never blocks a save
    existing.erase(existing.begin());
  }
}

}  // namespace

void Accelerator::register_for_checkpointing(CheckpointObject object) {
  require_arg(static_cast<bool>(object.save) && static_cast<bool>(object.load),
              "register_for_checkpointing: the object needs both a save and a load function");
  state_->checkpoint_objects.push_back(std::move(object));
}

int64_t Accelerator::register_save_state_pre_hook(StateHook hook) {
  require_arg(static_cast<bool>(hook), "register_save_state_pre_hook: the hook is empty");
  state_->save_state_pre_hooks.emplace_back(state_->next_hook_id, std::move(hook));
  return state_->next_hook_id++;
}

int64_t Accelerator::register_load_state_pre_hook(StateHook hook) {
  require_arg(static_cast<bool>(hook), "register_load_state_pre_hook: the hook is empty");
  state_->load_state_pre_hooks.emplace_back(state_->next_hook_id, std::move(hook));
  return state_->next_hook_id++;
}

void Accelerator::remove_hook(int64_t id) {
  for (auto* hooks : {&state_->save_state_pre_hooks, &state_->load_state_pre_hooks}) {
    auto it = std::find_if(hooks->begin(), hooks->end(), [id](const auto& h) { return h.first == id; });
    if (it != hooks->end()) {
      hooks->erase(it);
      return;
    }
  }
  fail(ErrorCode::InvalidArgument, "remove_hook: no hook has id " + std::to_string(id));
}

int64_t Accelerator::save_iteration() const { return state_->project.iteration; }

void Accelerator::set_save_iteration(int64_t iteration) {
  require_arg(iteration >= 0, "save iteration must be >= 0, got " + std::to_string(iteration));
  state_->project.iteration = iteration;
}

std::string Accelerator::save_state(const std::string& requested_dir, bool safe_serialization) {
  detail::AcceleratorState& st = *state_;
  std::string dir = requested_dir;
  const bool automatic = dir.empty();
  if (automatic) {
    require(st.project.automatic_checkpoint_naming, ErrorCode::State,
            "save_state: no directory given and automatic_checkpoint_naming is off");
    dir = detail::checkpoints_root(st) + "/checkpoint_" + std::to_string(st.project.iteration);
    // Accelerate's ValueError: an automatic save never replaces a checkpoint
    // (e.g. a restarted run whose iteration starts again at 0). Every process
    // sees the same shared directory, so all of them fail here, before any
    // hook runs or any file is written.
    std::error_code error;
    require_arg(!std::filesystem::exists(dir, error),
                "save_state: checkpoint directory " + dir + " (iteration " + std::to_string(st.project.iteration) +
                    ") already exists; set the project configuration's iteration (set_save_iteration) to the "
                    "number to continue from");
  }
  for (auto& [id, hook] : st.save_state_pre_hooks) hook(dir);

  detail::CheckpointTargets targets = detail::live_targets(st);
  const std::string partial = detail::partial_dir_for(dir);
  const bool writer = writes_shared_files(st);

  if (writer) {
    if (automatic) detail::remove_leftovers(detail::checkpoints_root(st));
    detail::recreate_directory(partial);
  }
  wait_for_everyone();

  // Per process: generator states and where each prepared loader stands. Every
  // process learns every file's size and checksum (the gather is also the
  // point after which all of them are on disk), so the manifest covers them.
  std::vector<DataLoader::Position> positions;
  for (DataLoader* loader : targets.loaders) positions.push_back(loader->position());
  const std::string rng_name = detail::random_states_file(st.rank());
  detail::FileDigest rng =
      detail::write_durable(partial, rng_name, detail::pickle_random_states(st.gradient_state->step, positions));
  nlohmann::json digests = nlohmann::json::object();  // file name -> [bytes, xxh3]
  digests[rng_name] = nlohmann::json::array({rng.bytes, rng.xxh3});
  // FSDP's SHARDED_STATE_DICT: the model and optimizers as PyTorch distributed
  // checkpoints (Accelerate's pytorch_model_fsdp_0/, optimizer_0/), each
  // process writing what it holds; a split model's slices where they lie in
  // the whole tensors.
  const bool dcp = st.shards_models() && st.sharded_state_dict;
  // Otherwise a sharded optimizer holds this process's chunk only: each process
  // writes its own (unless the model is split: then the whole state, gathered below).
  const bool sharded = st.shards_models() && !st.tp_group;
  // The whole model and optimizer state, from the writer (gathered over the tensor-parallel group first).
  const bool whole_files = !sharded && !dcp;
  nlohmann::json dcp_items;
  if (dcp) {
    dcp_items = detail::write_dcp_items(partial, targets, st.rank(), st.data_parallel_rank());
    for (const auto& [name, digest] : dcp_items["digests"].items()) digests[name] = digest;
  }
  const std::vector<std::string> dcp_records = dcp ? gather_object(dcp_items.dump()) : std::vector<std::string>{};
  for (size_t i = 0; sharded && !dcp && i < targets.optimizers.size(); ++i) {
    const std::string name = detail::optimizer_shard_file(i, st.rank());
    // Streamed from the state's own tensors: no copy of the shard in memory.
    detail::FileDigest shard = detail::write_durable(partial, name, [&](detail::ByteSink& sink) {
      detail::write_torch_save(sink, targets.optimizers[i].state_dict());
    });
    digests[name] = nlohmann::json::array({shard.bytes, shard.xxh3});
  }
  // FULL_SHARD: so does the model (a sharded state dict: its parameter chunks).
  bool sharded_models = false;
  for (size_t i = 0; sharded && !dcp && i < targets.models.size(); ++i) {
    if (!targets.models[i]->full_shard()) continue;
    sharded_models = true;
    const std::string name = detail::model_shard_file(i, st.rank());
    const std::map<std::string, std::string> metadata{
        {"format", "pt"},
        {"num_processes", std::to_string(st.world_size())},
        {"accel_fsdp_units", targets.models[i]->full_shard()->layout_json()},
        // HYBRID_SHARD: the node's processes share the units.
        {"accel_shard_group", std::to_string(targets.models[i]->full_shard()->shard_group_size())}};
    detail::FileDigest shard = detail::write_durable(partial, name, [&](detail::ByteSink& sink) {
      detail::write_tensors(sink, detail::sharded_model_state(*targets.models[i]), metadata);
    });
    digests[name] = nlohmann::json::array({shard.bytes, shard.xxh3});
  }
  const std::vector<std::string> rng_digests = gather_object(digests.dump());
  // Tensor parallelism: the whole model and optimizer state, gathered over
  // the group by every rank, written by the writer as an unsplit run would.
  std::vector<std::optional<detail::NamedTensors>> whole_models(targets.models.size());
  std::vector<std::optional<c10::IValue>> whole_optimizers(targets.optimizers.size());
  for (size_t i = 0; whole_files && i < targets.models.size(); ++i) {
    if (targets.models[i]->tensor_parallel()) whole_models[i] = detail::whole_model_state(*targets.models[i]);
  }
  for (size_t i = 0; whole_files && i < targets.optimizers.size(); ++i) {
    const detail::ModelImpl* model = targets.optimizers[i].model;
    if (!model || !model->tensor_parallel()) continue;
    c10::IValue slices = targets.optimizers[i].state_dict();
    if (model->flat_shard()) {  // a chunk of the slices: every member's first (over the shard group)
      detail::ProcessGroup& shard_group = st.shard_group ? *st.shard_group : *st.data_parallel_group();
      slices =
          detail::unsharded_optimizer_state(slices, *model, shard_group, "save_state: optimizer " + std::to_string(i));
    }
    whole_optimizers[i] = detail::whole_optimizer_state(slices, *model);
  }

  if (writer) {
    nlohmann::json files = nlohmann::json::object();
    auto put_streamed = [&](const std::string& name, const std::function<void(detail::ByteSink&)>& produce) {
      detail::FileDigest digest = detail::write_durable(partial, name, produce);
      files[name] = {{"bytes", digest.bytes}, {"xxh3", digest.xxh3}};
      maybe_die_after(name);
    };
    auto put = [&](const std::string& name, const std::string& bytes) {
      put_streamed(name, [&bytes](detail::ByteSink& sink) { sink.write(bytes.data(), bytes.size()); });
    };
    for (const auto& [name, bytes] : detail::dcp_metadata_files(dcp_records)) put(name, bytes);
    for (size_t i = 0; !dcp && i < targets.models.size(); ++i) {
      if (sharded && targets.models[i]->full_shard()) continue;  // written by every process above
      const detail::NamedTensors dict =
          whole_models[i] ? *whole_models[i] : detail::model_state_dict(*targets.models[i]);
      if (safe_serialization) {
        put_streamed(detail::numbered_file("model", i, ".safetensors"), [&](detail::ByteSink& sink) {
          detail::write_tensors(sink, dict, {{"format", "pt"}});
        });
      } else {  // what Accelerate 0.22's load_state reads: torch.load of pytorch_model.bin
        put_streamed(detail::numbered_file("pytorch_model", i, ".bin"),
                     [&](detail::ByteSink& sink) { detail::write_torch_save(sink, detail::tensor_dict(dict)); });
      }
    }
    for (size_t i = 0; whole_files && i < targets.optimizers.size(); ++i) {
      put_streamed(detail::numbered_file("optimizer", i, ".bin"), [&](detail::ByteSink& sink) {
        detail::write_torch_save(sink, whole_optimizers[i] ? *whole_optimizers[i] : targets.optimizers[i].state_dict());
      });
    }
    for (size_t i = 0; i < targets.schedulers.size(); ++i) {
      put(detail::numbered_file("scheduler", i, ".bin"), targets.schedulers[i].save());
    }
    if (st.scaler) {
      put("scaler.pt",
          nlohmann::json{{"scale", st.scaler->scale()}, {"growth_tracker", st.scaler->growth_tracker()}}.dump());
    }
    for (size_t i = 0; i < st.checkpoint_objects.size(); ++i) {
      // Accelerate's torch.load of it returns the bytes.
      put(detail::custom_object_file(i), detail::pickle_bytes(st.checkpoint_objects[i].save()));
    }
    for (const std::string& text : rng_digests) {
      const nlohmann::json digests_of_rank = nlohmann::json::parse(text);  // items() does not keep a temporary alive
      for (const auto& item : digests_of_rank.items()) {
        files[item.key()] = {{"bytes", item.value()[0]}, {"xxh3", item.value()[1]}};
      }
    }
    nlohmann::json manifest;
    manifest["format"] = "libaccel-checkpoint";
    manifest["version"] = detail::kCheckpointFormatVersion;
    manifest["num_processes"] = st.world_size();
    // The processes the dataloaders dealt batches to (fewer under tensor and context parallelism).
    manifest["data_parallel_size"] = st.batch_parallel_size();
    manifest["iteration"] = st.project.iteration;
    manifest["models"] = targets.models.size();
    manifest["optimizers"] = targets.optimizers.size();
    manifest["schedulers"] = targets.schedulers.size();
    manifest["dataloaders"] = targets.loaders.size();
    manifest["custom_objects"] = st.checkpoint_objects.size();
    manifest["scaler"] = st.scaler != nullptr;
    manifest["sharded_optimizers"] = sharded && !dcp;
    if (dcp) manifest["state_dict_type"] = "SHARDED_STATE_DICT";
    // Which strategy laid the shards out: load_state refuses another (check_strategy).
    manifest["sharding_strategy"] = to_string(st.sharding_strategy);
    manifest["sharded_models"] = sharded_models;
    // Where each parameter's elements sit in each process's files: load_state
    // cuts them again for another strategy or world size (checkpoint_layouts.hpp).
    nlohmann::json layouts = nlohmann::json::array();
    // A split model's files hold it whole, unsharded, whatever the strategy.
    for (const auto& model : targets.models) {
      layouts.push_back(
          (model->tensor_parallel() ? detail::whole_layout(*model) : detail::live_layout(*model)).to_json());
    }
    manifest["layouts"] = std::move(layouts);
    manifest["files"] = files;
    detail::write_durable(partial, detail::kManifestName, manifest.dump(2) + "\n");
    maybe_die_after(detail::kManifestName);
    detail::commit_directory(partial, dir);
    maybe_die_after("commit");
    if (automatic) prune_old_checkpoints(st);
  }
  wait_for_everyone();
  if (automatic) ++st.project.iteration;
  return dir;
}

}  // namespace accel
