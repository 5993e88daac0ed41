// save_state / load_state: everything a run needs to continue exactly, in a
// directory that appears only when complete (checkpoint_dir.hpp). Layout and
// file formats: docs/checkpointing.md.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "accel/accelerator.hpp"
#include "accel/data.hpp"
#include "accel/error.hpp"
#include "accel/optimizer.hpp"
#include "accel/scheduler.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "checkpoint/safetensors.hpp"
#include "checkpoint/tensor_io.hpp"
#include "model/model_impl.hpp"
#include "state/accelerator_state.hpp"
#include "state/environment.hpp"
#include "core/json.hpp"
#include "core/remove_tree.hpp"

namespace fs = std::filesystem;

namespace accel {

namespace {

constexpr int kFormatVersion = 1;
constexpr const char* kManifest = "manifest.json";

std::string numbered(const std::string& base, size_t i, const std::string& extension) {
  return (i == 0 ? base : base + "_" + std::to_string(i)) + extension;
}

std::string random_states_name(int rank) { return "random_states_" + std::to_string(rank) + ".safetensors"; }

// The registered objects still alive, in prepare order (the dead are forgotten).
template <class T>
std::vector<T> live(std::vector<std::pair<std::weak_ptr<const void>, T>>& list) {
  list.erase(std::remove_if(list.begin(), list.end(), [](const auto& e) { return e.first.expired(); }), list.end());
  std::vector<T> out;
  for (auto& e : list) out.push_back(e.second);
  return out;
}

std::vector<std::shared_ptr<detail::ModelImpl>> live_models(detail::AcceleratorState& state) {
  std::vector<std::shared_ptr<detail::ModelImpl>> out;
  for (auto& weak : state.prepared_models) {
    if (auto model = weak.lock()) out.push_back(model);
  }
  return out;
}

detail::NamedTensors state_dict(const detail::ModelImpl& model) {
  detail::NamedTensors dict = model.named_parameters();
  for (auto& b : model.named_buffers()) dict.push_back(b);
  return dict;
}

// Test hook: ACCEL_TEST_KILL_DURING_SAVE=<file> kills this process right after
// writing that file, to show an interrupted save leaves the previous checkpoint.
void maybe_die_after(const std::string& file) {
  static const auto target = detail::get_env("ACCEL_TEST_KILL_DURING_SAVE");
  if (target && *target == file) std::raise(SIGKILL);
}

// The processes that write shared files and commit the directory.
bool writes_shared_files(const detail::AcceleratorState& state) {
  return state.rank() == 0 || (state.project.save_on_each_node && state.env.local_rank == 0);
}

std::string project_root(const detail::AcceleratorState& state) {
  return state.project.project_dir.empty() ? std::string(".") : state.project.project_dir;
}

void prune_old_checkpoints(const detail::AcceleratorState& state) {
  if (state.project.total_limit <= 0) return;
  auto existing = detail::numbered_checkpoints(project_root(state) + "/checkpoints");
  // Room for the checkpoint about to be written.
  while (static_cast<int64_t>(existing.size()) + 1 > state.project.total_limit) {
    detail::remove_tree(existing.front().second);  // best effort: a leftover never blocks the new one
    existing.erase(existing.begin());
  }
}

at::Generator cpu_generator() { return at::detail::getDefaultCPUGenerator(); }

std::vector<std::pair<std::string, at::Tensor>> rng_states() {
  std::vector<std::pair<std::string, at::Tensor>> states;
  {
    at::Generator gen = cpu_generator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    states.emplace_back("cpu", gen.get_state());
  }
  if (torch::cuda::is_available()) {
    for (int i = 0, n = static_cast<int>(torch::cuda::device_count()); i < n; ++i) {
      at::Generator gen = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<int8_t>(i)));
      std::lock_guard<std::mutex> lock(gen.mutex());
      states.emplace_back("cuda_" + std::to_string(i), gen.get_state());
    }
  }
  return states;
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

void Accelerator::save_state(const std::string& requested_dir) {
  detail::AcceleratorState& st = *state_;
  std::string dir = requested_dir;
  const bool automatic = dir.empty();
  if (automatic) {
    require(st.project.automatic_checkpoint_naming, ErrorCode::State,
            "save_state: no directory given and automatic_checkpoint_naming is off");
    dir = project_root(st) + "/checkpoints/checkpoint_" + std::to_string(st.project.iteration);
  }
  for (auto& [id, hook] : st.save_state_pre_hooks) hook(dir);

  auto models = live_models(st);
  auto optimizers = live(st.prepared_optimizers);
  auto schedulers = live(st.prepared_schedulers);
  auto loaders = live(st.prepared_loaders);
  const std::string partial = detail::partial_dir_for(dir);
  const bool writer = writes_shared_files(st);

  if (writer) {
    if (automatic) prune_old_checkpoints(st);
    detail::recreate_directory(partial);
  }
  wait_for_everyone();

  // Per-process: RNG states and where each prepared loader stands.
  nlohmann::json positions = nlohmann::json::array();
  for (DataLoader* loader : loaders) {  // the loaders are not movable: the pointers are stable
    DataLoader::Position p = loader->position();
    positions.push_back({p.epoch, p.batches_consumed});
  }
  detail::write_durable(partial, random_states_name(st.rank()),
                        detail::serialize_tensors(rng_states(), {{"dataloaders", positions.dump()}}));

  nlohmann::json files = nlohmann::json::object();
  if (writer) {
    auto put = [&](const std::string& name, const std::string& bytes) {
      detail::write_durable(partial, name, bytes);
      files[name] = bytes.size();
      maybe_die_after(name);
    };
    for (size_t i = 0; i < models.size(); ++i) {
      put(numbered("model", i, ".safetensors"), detail::serialize_tensors(state_dict(*models[i]), {{"format", "pt"}}));
    }
    for (size_t i = 0; i < optimizers.size(); ++i) put(numbered("optimizer", i, ".bin"), optimizers[i].save());
    for (size_t i = 0; i < schedulers.size(); ++i) put(numbered("scheduler", i, ".bin"), schedulers[i].save());
    if (st.scaler) {
      put("scaler.pt", nlohmann::json{{"scale", st.scaler->scale()}, {"growth_tracker", st.scaler->growth_tracker()}}
                           .dump());
    }
    for (size_t i = 0; i < st.checkpoint_objects.size(); ++i) {
      put("custom_checkpoint_" + std::to_string(i) + ".bin", st.checkpoint_objects[i].save());
    }
  }
  wait_for_everyone();
  if (writer) {
    nlohmann::json manifest;
    manifest["format"] = "libaccel-checkpoint";
    manifest["version"] = kFormatVersion;
    manifest["num_processes"] = st.world_size();
    manifest["iteration"] = st.project.iteration;
    manifest["models"] = models.size();
    manifest["optimizers"] = optimizers.size();
    manifest["schedulers"] = schedulers.size();
    manifest["dataloaders"] = loaders.size();
    manifest["custom_objects"] = st.checkpoint_objects.size();
    manifest["scaler"] = st.scaler != nullptr;
    manifest["files"] = files;
    detail::write_durable(partial, kManifest, manifest.dump(2) + "\n");
    detail::commit_directory(partial, dir);
  }
  wait_for_everyone();
  if (automatic) ++st.project.iteration;
}

void Accelerator::load_state(const std::string& requested_dir) {
  detail::AcceleratorState& st = *state_;
  std::string dir = requested_dir;
  if (dir.empty()) {
    require(st.project.automatic_checkpoint_naming, ErrorCode::State,
            "load_state: no directory given and automatic_checkpoint_naming is off");
    auto existing = detail::numbered_checkpoints(project_root(st) + "/checkpoints");
    require(!existing.empty(), ErrorCode::IO, "load_state: no checkpoint in " + project_root(st) + "/checkpoints");
    dir = existing.back().second;
  }
  for (auto& [id, hook] : st.load_state_pre_hooks) hook(dir);

  // 1. Read and check everything.
  const std::string manifest_path = dir + "/" + kManifest;
  require(fs::exists(manifest_path), ErrorCode::IO,
          "load_state: " + manifest_path + " is missing: " + dir + " is not a complete libaccel checkpoint");
  nlohmann::json manifest =
      detail::parse_json(detail::read_file(manifest_path), "load_state: " + manifest_path, ErrorCode::IO);
  require(!manifest.is_discarded() && manifest.value("format", "") == "libaccel-checkpoint", ErrorCode::IO,
          "load_state: " + manifest_path + " is not a libaccel checkpoint manifest");
  require(manifest.value("version", 0) == kFormatVersion, ErrorCode::Unsupported,
          "load_state: " + manifest_path + " has format version " + std::to_string(manifest.value("version", 0)) +
              ", this libaccel reads version " + std::to_string(kFormatVersion));

  auto models = live_models(st);
  auto optimizers = live(st.prepared_optimizers);
  auto schedulers = live(st.prepared_schedulers);
  auto loaders = live(st.prepared_loaders);
  auto expect_count = [&](const char* what, size_t have) {
    size_t saved = manifest.value(what, size_t{0});
    require(saved == have, ErrorCode::InvalidArgument,
            "load_state: " + dir + " holds " + std::to_string(saved) + " " + what + ", " + std::to_string(have) +
                " are prepared (registered) now");
  };
  expect_count("models", models.size());
  expect_count("optimizers", optimizers.size());
  expect_count("schedulers", schedulers.size());
  expect_count("dataloaders", loaders.size());
  expect_count("custom_objects", st.checkpoint_objects.size());
  require(manifest.value("num_processes", 0) == st.world_size(), ErrorCode::InvalidArgument,
          "load_state: " + dir + " was saved by " + std::to_string(manifest.value("num_processes", 0)) +
              " processes, " + std::to_string(st.world_size()) + " are running");
  require(manifest.value("scaler", false) == (st.scaler != nullptr), ErrorCode::InvalidArgument,
          std::string("load_state: ") + dir + (st.scaler ? " has no fp16 loss scaler state" :
                                                            " holds fp16 loss scaler state but fp16 is off"));
  const nlohmann::json& files = manifest["files"];
  auto file_bytes = [&](const std::string& name) {
    std::string path = dir + "/" + name;
    require(fs::exists(path), ErrorCode::IO, "load_state: " + path + " is missing");
    std::string bytes = detail::read_file(path);
    if (files.contains(name)) {
      require(bytes.size() == files[name].get<size_t>(), ErrorCode::IO,
              "load_state: " + path + " has " + std::to_string(bytes.size()) + " bytes, the manifest says " +
                  std::to_string(files[name].get<size_t>()) + " (a truncated or replaced file)");
    }
    return bytes;
  };

  std::vector<safetensors::File> model_files;
  std::vector<std::vector<std::pair<at::Tensor, const safetensors::Entry*>>> model_plans;
  for (size_t i = 0; i < models.size(); ++i) {
    std::string path = dir + "/" + numbered("model", i, ".safetensors");
    require(fs::exists(path), ErrorCode::IO, "load_state: " + path + " is missing");
    model_files.push_back(safetensors::File::open(path));
    const safetensors::File& file = model_files.back();
    std::vector<std::pair<at::Tensor, const safetensors::Entry*>> plan;
    std::set<std::string> expected;
    for (auto& [name, tensor] : state_dict(*models[i])) {
      expected.insert(name);
      const safetensors::Entry* entry = file.find(name);
      require(entry != nullptr, ErrorCode::IO, "load_state: " + path + " lacks \"" + name + "\" of model " +
                                                   std::to_string(i));
      require(entry->shape == tensor.sizes().vec(), ErrorCode::InvalidArgument,
              "load_state: " + path + ": \"" + name + "\" has shape " + c10::str(at::IntArrayRef(entry->shape)) +
                  ", the model's has " + c10::str(tensor.sizes()));
      detail::scalar_type_of(*entry, path);
      plan.emplace_back(tensor, entry);
    }
    for (const auto& entry : file.entries()) {
      require(expected.count(entry.name) == 1, ErrorCode::InvalidArgument,
              "load_state: " + path + " holds \"" + entry.name + "\", which model " + std::to_string(i) + " lacks");
    }
    model_plans.push_back(std::move(plan));
  }
  std::vector<std::string> optimizer_bytes, scheduler_json, custom_bytes;
  for (size_t i = 0; i < optimizers.size(); ++i) optimizer_bytes.push_back(file_bytes(numbered("optimizer", i, ".bin")));
  for (size_t i = 0; i < schedulers.size(); ++i) scheduler_json.push_back(file_bytes(numbered("scheduler", i, ".bin")));
  for (size_t i = 0; i < st.checkpoint_objects.size(); ++i) {
    custom_bytes.push_back(file_bytes("custom_checkpoint_" + std::to_string(i) + ".bin"));
  }
  nlohmann::json scaler;
  if (st.scaler) {
    scaler = detail::parse_json(file_bytes("scaler.pt"), "load_state: " + dir + "/scaler.pt", ErrorCode::IO);
    require(!scaler.is_discarded() && scaler.contains("scale") && scaler.contains("growth_tracker"), ErrorCode::IO,
            "load_state: " + dir + "/scaler.pt is not the loss scaler state libaccel writes");
  }
  const std::string rng_path = dir + "/" + random_states_name(st.rank());
  require(fs::exists(rng_path), ErrorCode::IO, "load_state: " + rng_path + " is missing");
  safetensors::File rng_file = safetensors::File::open(rng_path);
  const safetensors::Entry* cpu_rng = rng_file.find("cpu");
  require(cpu_rng != nullptr, ErrorCode::IO, "load_state: " + rng_path + " lacks the CPU generator state");
  auto positions_it = rng_file.metadata().find("dataloaders");
  nlohmann::json positions = positions_it == rng_file.metadata().end()
                                 ? nlohmann::json()
                                 : detail::parse_json(positions_it->second,
                                                      "load_state: " + rng_path + " metadata \"dataloaders\"",
                                                      ErrorCode::IO);
  require(positions.is_array() && positions.size() == loaders.size(), ErrorCode::IO,
          "load_state: " + rng_path + " does not hold the positions of " + std::to_string(loaders.size()) +
              " dataloaders");

  // 2. Apply. Optimizers and schedulers first, rolled back if a later step that
  // can fail (a user's load function) does; models and the rest cannot fail.
  std::vector<std::string> optimizer_backup, scheduler_backup;
  for (auto& o : optimizers) optimizer_backup.push_back(o.save());
  for (auto& s : schedulers) scheduler_backup.push_back(s.save());
  try {
    for (size_t i = 0; i < optimizers.size(); ++i) optimizers[i].load(optimizer_bytes[i]);
    for (size_t i = 0; i < schedulers.size(); ++i) schedulers[i].load(scheduler_json[i]);
    for (size_t i = 0; i < st.checkpoint_objects.size(); ++i) st.checkpoint_objects[i].load(custom_bytes[i]);
  } catch (...) {
    for (size_t i = 0; i < optimizers.size(); ++i) optimizers[i].load(optimizer_backup[i]);
    for (size_t i = 0; i < schedulers.size(); ++i) schedulers[i].load(scheduler_backup[i]);
    throw;
  }
  {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < models.size(); ++i) {
      for (auto& [tensor, entry] : model_plans[i]) tensor.copy_(detail::mapped_tensor(model_files[i], *entry));
    }
  }
  if (st.scaler) st.scaler->restore(scaler["scale"].get<double>(), scaler["growth_tracker"].get<int64_t>());
  {
    at::Generator gen = cpu_generator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(detail::read_tensor(rng_file, *cpu_rng));
  }
  if (torch::cuda::is_available()) {
    for (int i = 0, n = static_cast<int>(torch::cuda::device_count()); i < n; ++i) {
      const safetensors::Entry* entry = rng_file.find("cuda_" + std::to_string(i));
      if (!entry) continue;
      at::Generator gen = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<int8_t>(i)));
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(detail::read_tensor(rng_file, *entry));
    }
  }
  for (size_t i = 0; i < loaders.size(); ++i) {
    loaders[i]->resume_from(DataLoader::Position{positions[i][0].get<uint64_t>(), positions[i][1].get<int64_t>()});
  }
  if (st.project.automatic_checkpoint_naming) st.project.iteration = manifest.value("iteration", int64_t{0}) + 1;
}

}  // namespace accel
