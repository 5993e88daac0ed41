// The C ABI's handle types and the guard every exported function runs inside.
//
// Handles are registered while alive, so a NULL, foreign or already-freed
// pointer is reported as INVALID_ARGUMENT instead of being dereferenced.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "accel/accel.h"
#include "accel/accel.hpp"
#include "accel/logging.hpp"
#include "accel/profiler.hpp"
#include "state/out_of_memory.hpp"

struct accel_tensor {
  at::Tensor tensor;
};
struct accel_accelerator {
  std::unique_ptr<accel::Accelerator> accelerator;
  std::string device_name;
  std::vector<std::string> state_dict_names;  // what the last get_state_dict handed out
  std::string last_checkpoint_dir;            // what the last successful save_state wrote
};
struct accel_model {
  accel::Model model;
};
// A deque: names handed out by accel_tensor_map_name_at keep their address.
struct accel_tensor_map {
  std::deque<std::pair<std::string, at::Tensor>> entries;
};
struct accel_optimizer {
  std::shared_ptr<accel::Optimizer> optimizer;
};
struct accel_scheduler {
  std::shared_ptr<accel::Optimizer> optimizer;  // kept alive: the scheduler points into it
  std::unique_ptr<accel::Scheduler> scheduler;
};
struct accel_dataset {
  std::shared_ptr<accel::Dataset> dataset;         // map-style, or
  std::shared_ptr<accel::IterableDataset> stream;  // iterable
};
struct accel_dataloader {
  std::unique_ptr<accel::DataLoader> loader;
  std::vector<std::string> field_names;  // filled by the first accel_dataloader_field_names
  bool field_names_read = false;
};
struct accel_sequences {
  std::shared_ptr<const accel::TokenSequences> sequences;
};
struct accel_progress {
  std::unique_ptr<accel::ProgressBar> bar;
};
struct accel_profile {
  std::unique_ptr<accel::ProfileScope> scope;
};
// Lives on the stack of a save callback's caller, registered for the call only.
struct accel_bytes_writer {
  std::string bytes;
};
struct accel_partial_state {
  std::unique_ptr<accel::PartialState> state;
  std::string device_name;
};

namespace accel::capi {

enum class HandleKind {
  Tensor,
  Accelerator,
  Model,
  Optimizer,
  Scheduler,
  Dataset,
  DataLoader,
  Progress,
  Profile,
  BytesWriter,
  Sequences,
  TensorMap,
  PartialState
};

template <class H>
struct KindOf;
template <>
struct KindOf<accel_tensor> {
  static constexpr HandleKind value = HandleKind::Tensor;
  static constexpr const char* name = "accel_tensor";
};
template <>
struct KindOf<accel_accelerator> {
  static constexpr HandleKind value = HandleKind::Accelerator;
  static constexpr const char* name = "accel_accelerator";
};
template <>
struct KindOf<accel_model> {
  static constexpr HandleKind value = HandleKind::Model;
  static constexpr const char* name = "accel_model";
};
template <>
struct KindOf<accel_optimizer> {
  static constexpr HandleKind value = HandleKind::Optimizer;
  static constexpr const char* name = "accel_optimizer";
};
template <>
struct KindOf<accel_scheduler> {
  static constexpr HandleKind value = HandleKind::Scheduler;
  static constexpr const char* name = "accel_scheduler";
};
template <>
struct KindOf<accel_dataset> {
  static constexpr HandleKind value = HandleKind::Dataset;
  static constexpr const char* name = "accel_dataset";
};
template <>
struct KindOf<accel_dataloader> {
  static constexpr HandleKind value = HandleKind::DataLoader;
  static constexpr const char* name = "accel_dataloader";
};
template <>
struct KindOf<accel_progress> {
  static constexpr HandleKind value = HandleKind::Progress;
  static constexpr const char* name = "accel_progress";
};
template <>
struct KindOf<accel_profile> {
  static constexpr HandleKind value = HandleKind::Profile;
  static constexpr const char* name = "accel_profile";
};
template <>
struct KindOf<accel_tensor_map> {
  static constexpr HandleKind value = HandleKind::TensorMap;
  static constexpr const char* name = "accel_tensor_map";
};
template <>
struct KindOf<accel_bytes_writer> {
  static constexpr HandleKind value = HandleKind::BytesWriter;
  static constexpr const char* name = "accel_bytes_writer (valid only inside its save callback)";
};
template <>
struct KindOf<accel_partial_state> {
  static constexpr HandleKind value = HandleKind::PartialState;
  static constexpr const char* name = "accel_partial_state";
};
template <>
struct KindOf<accel_sequences> {
  static constexpr HandleKind value = HandleKind::Sequences;
  static constexpr const char* name = "accel_sequences";
};

void register_handle(const void* handle, HandleKind kind);
// True when handle was registered with kind and is still alive; unregisters it.
bool unregister_handle(const void* handle, HandleKind kind);
bool is_live(const void* handle, HandleKind kind);

// Registers a newly built handle and stores it in *out.
template <class H>
void publish(std::unique_ptr<H> handle, H** out) {
  register_handle(handle.get(), KindOf<H>::value);
  *out = handle.release();
}

// The handle itself, after checking it is a live handle of its type.
template <class H>
H& deref(H* handle, const char* parameter) {
  require_arg(handle != nullptr, std::string(parameter) + " is NULL");
  require_arg(is_live(handle, KindOf<H>::value),
              std::string(parameter) + " is not a live " + KindOf<H>::name + " (already freed, or another type)");
  return *handle;
}
template <class H>
const H& deref(const H* handle, const char* parameter) {
  return deref(const_cast<H*>(handle), parameter);
}

// The integer a caller passed for a C enum, read without loading it as the
// enum type: C lets any int through an enum parameter or field, but in C++ a
// load outside the enumerators' range is undefined behaviour (UBSan: "load of
// value ..., which is not a valid value for type"). Validate this integer,
// then convert.
template <class E>
int enum_value(const E& value) {
  static_assert(std::is_enum<E>::value && sizeof(E) == sizeof(int), "a C enum");
  int raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

template <class T>
T& out_param(T* pointer, const char* parameter) {
  require_arg(pointer != nullptr, std::string("out-parameter ") + parameter + " is NULL");
  return *pointer;
}

// Frees a live handle; NULL and unknown pointers are ignored.
template <class H>
void release(H* handle) {
  if (handle != nullptr && unregister_handle(handle, KindOf<H>::value)) delete handle;
}

// A caller's user pointer shared by the callbacks that use it: release(user)
// runs once the last copy of get() is gone, but only after arm(). A creation
// or registration that fails before arm() leaves user to the caller (the
// bindings free their callback objects themselves then).
class UserHold {
 public:
  UserHold(void* user, void (*release)(void*)) : armed_(std::make_shared<bool>(false)) {
    held_ = std::shared_ptr<void>(user, [release, armed = armed_](void* u) {
      if (*armed && release != nullptr) release(u);
    });
  }
  const std::shared_ptr<void>& get() const { return held_; }
  void arm() { *armed_ = true; }

 private:
  std::shared_ptr<bool> armed_;
  std::shared_ptr<void> held_;
};

accel_status record_error(accel_status status, const std::string& message);
// After a user callback returned status: throws an accel::Error with that code
// and "<what> failed: <message the callback set with accel_set_error>".
void check_callback(const accel_status& status, const std::string& what);

// Runs body, mapping every exception to a status and the thread's error message.
template <class Body>
accel_status guarded(Body&& body) noexcept {
  try {
    body();
    return ACCEL_OK;
  } catch (const accel::Error& e) {
    return record_error(static_cast<accel_status>(e.code()), e.what());
  } catch (const c10::Error& e) {
    // An allocation failure is the caller's to retry with less (find_executable_batch_size).
    return record_error(accel::detail::is_out_of_memory(e) ? ACCEL_ERR_RESOURCE : ACCEL_ERR_INTERNAL,
                        e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    return record_error(ACCEL_ERR_RESOURCE, "out of memory");
  } catch (const std::exception& e) {
    return record_error(ACCEL_ERR_INTERNAL, e.what());
  } catch (...) {
    return record_error(ACCEL_ERR_INTERNAL, "unknown C++ exception");
  }
}

// Reads a caller's options struct: defaults first, then the fields the caller's
// header version knows about (struct_size says how many bytes that is).
template <class Options>
Options read_options(const Options* user, const char* parameter, void (*init)(Options*)) {
  Options merged;
  init(&merged);
  if (user == nullptr) return merged;
  require_arg(user->struct_size >= sizeof(uint32_t) && user->struct_size <= sizeof(Options) * 4,
              std::string(parameter) + "->struct_size is " + std::to_string(user->struct_size) +
                  ": initialise the struct with its _init function");
  std::memcpy(static_cast<void*>(&merged), user, std::min<size_t>(user->struct_size, sizeof(Options)));
  merged.struct_size = sizeof(Options);
  return merged;
}

// dtype: an accel_dtype value as enum_value reads it.
at::ScalarType to_scalar_type(int dtype);
accel_dtype to_accel_dtype(at::ScalarType type);
// Wraps tensor in a new handle stored in *out.
void publish_tensor(at::Tensor tensor, accel_tensor** out);
// count strings of a C array argument, copied; InvalidArgument naming
// `parameter` for a NULL array with count > 0 or a NULL element.
std::vector<std::string> string_array(const char* const* items, size_t count, const char* parameter);
// A new malloc'd copy of text, for a char** result freed with accel_string_free.
char* new_string(const std::string& text);

}  // namespace accel::capi
