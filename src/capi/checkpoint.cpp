#include "capi/handles.hpp"

#include <set>

using namespace accel::capi;

namespace {

void init_checkpoint_callbacks(accel_checkpoint_callbacks* callbacks) {
  *callbacks = accel_checkpoint_callbacks ACCEL_CHECKPOINT_CALLBACKS_INIT;
}

std::string or_empty(const char* text) { return text != nullptr ? text : ""; }

accel::StateHook state_hook(accel_state_hook hook, std::shared_ptr<void> user, const char* which) {
  return [hook, user, which](const std::string& dir) {
    accel_set_error("");
    check_callback(hook(user.get(), dir.c_str()), std::string(which) + " hook for " + dir);
  };
}

}  // namespace

extern "C" {

ACCEL_API accel_status accel_accelerator_save_state(accel_accelerator* acc, const char* dir) {
  return guarded([&] {
    accel_accelerator& handle = deref(acc, "acc");
    handle.last_checkpoint_dir = handle.accelerator->save_state(or_empty(dir));
  });
}

ACCEL_API accel_status accel_accelerator_save_state_ext(accel_accelerator* acc, const char* dir,
                                                        int safe_serialization) {
  return guarded([&] {
    accel_accelerator& handle = deref(acc, "acc");
    handle.last_checkpoint_dir = handle.accelerator->save_state(or_empty(dir), safe_serialization != 0);
  });
}

ACCEL_API accel_status accel_accelerator_last_checkpoint_dir(const accel_accelerator* acc, const char** out) {
  return guarded([&] { out_param(out, "out") = deref(acc, "acc").last_checkpoint_dir.c_str(); });
}

ACCEL_API accel_status accel_accelerator_load_state(accel_accelerator* acc, const char* dir) {
  return guarded([&] { deref(acc, "acc").accelerator->load_state(or_empty(dir)); });
}

ACCEL_API accel_status accel_accelerator_save_iteration(const accel_accelerator* acc, int64_t* out) {
  return guarded([&] { out_param(out, "out") = deref(acc, "acc").accelerator->save_iteration(); });
}

ACCEL_API accel_status accel_accelerator_set_save_iteration(accel_accelerator* acc, int64_t iteration) {
  return guarded([&] { deref(acc, "acc").accelerator->set_save_iteration(iteration); });
}

ACCEL_API accel_status accel_accelerator_save_model(accel_accelerator* acc, const accel_model* model, const char* dir,
                                                    const char* max_shard_size, int safe_serialization) {
  return guarded([&] {
    accel::require_arg(dir != nullptr && *dir != '\0', "dir is NULL or empty");
    deref(acc, "acc")
        .accelerator->save_model(deref(model, "model").model, dir, max_shard_size != nullptr ? max_shard_size : "10GB",
                                 safe_serialization != 0);
  });
}

ACCEL_API accel_status accel_accelerator_load_checkpoint_in_model(accel_accelerator* acc, accel_model* model,
                                                                  const char* path, int strict, int64_t* missing,
                                                                  int64_t* unexpected) {
  return guarded([&] {
    accel::require_arg(path != nullptr, "path is NULL");
    accel::LoadReport report =
        deref(acc, "acc").accelerator->load_checkpoint_in_model(deref(model, "model").model, path, strict != 0);
    if (missing) *missing = static_cast<int64_t>(report.missing_keys.size());
    if (unexpected) *unexpected = static_cast<int64_t>(report.unexpected_keys.size());
  });
}

ACCEL_API accel_status accel_accelerator_get_state_dict(accel_accelerator* acc, const accel_model* model,
                                                        const char** names, accel_tensor** tensors, size_t capacity,
                                                        size_t* count) {
  return guarded([&] {
    size_t& result = out_param(count, "count");
    accel_accelerator& handle = deref(acc, "acc");
    accel::TensorDict dict = handle.accelerator->get_state_dict(deref(model, "model").model);
    if (names != nullptr || tensors != nullptr) {
      accel::require_arg(capacity >= dict.size(), "capacity " + std::to_string(capacity) + " is below the " +
                                                      std::to_string(dict.size()) + " entries of the state dict");
      std::vector<std::string> kept;
      for (const auto& entry : dict) kept.push_back(entry.first);
      if (names != nullptr) {
        handle.state_dict_names = std::move(kept);
        for (size_t i = 0; i < dict.size(); ++i) names[i] = handle.state_dict_names[i].c_str();
      }
      if (tensors != nullptr) {
        for (size_t i = 0; i < dict.size(); ++i) publish_tensor(dict[i].second, &tensors[i]);
      }
    }
    result = dict.size();
  });
}

ACCEL_API accel_status accel_accelerator_save_tensors(accel_accelerator* acc, const char* const* names,
                                                      const accel_tensor* const* tensors, size_t count,
                                                      const char* path) {
  return guarded([&] {
    accel::require_arg(path != nullptr, "path is NULL");
    accel::require_arg(count == 0 || (names != nullptr && tensors != nullptr), "names or tensors is NULL");
    accel::TensorDict dict;
    for (size_t i = 0; i < count; ++i) {
      accel::require_arg(names[i] != nullptr, "names[" + std::to_string(i) + "] is NULL");
      dict.emplace_back(names[i], deref(tensors[i], ("tensors[" + std::to_string(i) + "]").c_str()).tensor);
    }
    deref(acc, "acc").accelerator->save(dict, path);
  });
}

ACCEL_API accel_status accel_bytes_write(accel_bytes_writer* writer, const void* data, size_t size) {
  return guarded([&] {
    auto& w = deref(writer, "writer");
    accel::require_arg(size == 0 || data != nullptr, "data is NULL but size is " + std::to_string(size));
    w.bytes.append(static_cast<const char*>(data), size);
  });
}

ACCEL_API void accel_checkpoint_callbacks_init(accel_checkpoint_callbacks* callbacks) {
  if (callbacks != nullptr) init_checkpoint_callbacks(callbacks);
}

ACCEL_API accel_status accel_accelerator_register_for_checkpointing(accel_accelerator* acc,
                                                                    const accel_checkpoint_callbacks* callbacks,
                                                                    void* user) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    accel::require_arg(callbacks != nullptr, "callbacks is NULL");
    accel_checkpoint_callbacks c = read_options(callbacks, "callbacks", init_checkpoint_callbacks);
    accel::require_arg(c.save != nullptr, "callbacks->save is NULL");
    accel::require_arg(c.load != nullptr, "callbacks->load is NULL");
    UserHold hold(user, c.release);
    const std::shared_ptr<void>& held = hold.get();
    accel::CheckpointObject object;
    object.save = [fn = c.save, held] {
      accel_bytes_writer writer;
      // Registered for the callback only, so accel_bytes_write refuses a
      // writer kept past it (or any other pointer) instead of writing through it.
      register_handle(&writer, HandleKind::BytesWriter);
      struct Unregister {
        accel_bytes_writer* w;
        ~Unregister() { unregister_handle(w, HandleKind::BytesWriter); }
      } unregister{&writer};
      accel_set_error("");
      check_callback(fn(held.get(), &writer), "checkpoint object save callback");
      return std::move(writer.bytes);
    };
    object.load = [fn = c.load, held](const std::string& bytes) {
      accel_set_error("");
      check_callback(fn(held.get(), bytes.data(), bytes.size()), "checkpoint object load callback");
    };
    accelerator.register_for_checkpointing(std::move(object));
    hold.arm();
  });
}

ACCEL_API accel_status accel_accelerator_register_save_state_pre_hook(accel_accelerator* acc, accel_state_hook hook,
                                                                      void* user, void (*release)(void*), int64_t* id) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    auto& out = out_param(id, "id");
    accel::require_arg(hook != nullptr, "hook is NULL");
    UserHold hold(user, release);
    out = accelerator.register_save_state_pre_hook(state_hook(hook, hold.get(), "save_state pre"));
    hold.arm();
  });
}

ACCEL_API accel_status accel_accelerator_register_load_state_pre_hook(accel_accelerator* acc, accel_state_hook hook,
                                                                      void* user, void (*release)(void*), int64_t* id) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    auto& out = out_param(id, "id");
    accel::require_arg(hook != nullptr, "hook is NULL");
    UserHold hold(user, release);
    out = accelerator.register_load_state_pre_hook(state_hook(hook, hold.get(), "load_state pre"));
    hold.arm();
  });
}

ACCEL_API accel_status accel_accelerator_remove_hook(accel_accelerator* acc, int64_t id) {
  return guarded([&] { deref(acc, "acc").accelerator->remove_hook(id); });
}

}  // extern "C"
