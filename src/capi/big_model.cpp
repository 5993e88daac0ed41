// C ABI for the big-model tools (include/accel/big_model.h): converts and forwards.
#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "accel/big_model.hpp"
#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

c10::optional<c10::ScalarType> dtype_arg(const char* dtype) {
  if (dtype == nullptr || *dtype == '\0') return c10::nullopt;
  static const std::vector<std::pair<std::string, c10::ScalarType>> names = {
      {"float32", c10::kFloat},     {"float64", c10::kDouble}, {"float16", c10::kHalf},
      {"bfloat16", c10::kBFloat16}, {"int8", c10::kChar},      {"uint8", c10::kByte}};
  for (const auto& [name, type] : names) {
    if (name == dtype) return type;
  }
  accel::fail(accel::ErrorCode::InvalidArgument,
              std::string("dtype \"") + dtype + "\" is not one of float32, float64, float16, bfloat16, int8, uint8");
}

// Budgets per device as a JSON object string, in their order (a malloc'd copy).
char* budgets_json(const std::vector<std::pair<std::string, int64_t>>& budgets) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const auto& [device, bytes] : budgets) json[device] = bytes;
  return new_string(json.dump());
}

// The no_split_module_classes array of the device-map calls.
std::vector<std::string> class_names(const char* const* no_split, size_t count) {
  return string_array(no_split, count, "no_split");
}

}  // namespace

extern "C" {

ACCEL_API void accel_string_free(char* text) { std::free(text); }

ACCEL_API accel_status accel_model_from_json_empty(const char* spec, accel_model** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(spec != nullptr, "spec is NULL");
    publish(std::make_unique<accel_model>(accel_model{accel::model_from_json_empty(spec)}), &result);
  });
}

ACCEL_API accel_status accel_model_from_torchscript_empty(const char* path, const char* const* output_names,
                                                          size_t count, accel_model** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(path != nullptr, "path is NULL");
    std::vector<std::string> names = string_array(output_names, count, "output_names");
    publish(std::make_unique<accel_model>(accel_model{accel::Model::from_torchscript_empty(path, std::move(names))}),
            &result);
  });
}

ACCEL_API accel_status accel_model_materialize(accel_model* model, const char* checkpoint, const char* dtype) {
  return guarded([&] {
    const auto& m = deref(model, "model").model;
    accel::require_arg(checkpoint != nullptr, "checkpoint is NULL");
    accel::materialize(m, checkpoint, dtype_arg(dtype));
  });
}

ACCEL_API accel_status accel_load_checkpoint_and_dispatch(accel_model* model, const char* checkpoint,
                                                          const char* device_map, const char* offload_folder,
                                                          const char* dtype) {
  return guarded([&] {
    const auto& m = deref(model, "model").model;
    accel::require_arg(checkpoint != nullptr, "checkpoint is NULL");
    const accel::DeviceMap map = accel::resolve_device_map(m, device_map ? device_map : "", {}, dtype_arg(dtype));
    accel::load_checkpoint_and_dispatch(m, checkpoint, map, offload_folder ? offload_folder : "", dtype_arg(dtype));
  });
}

ACCEL_API accel_status accel_dispatch_model(accel_model* model, const char* device_map, const char* offload_dir) {
  return guarded([&] {
    const auto& m = deref(model, "model").model;
    accel::require_arg(device_map != nullptr, "device_map is NULL");
    accel::dispatch_model(m, accel::device_map_from_json(device_map), offload_dir ? offload_dir : "");
  });
}

ACCEL_API accel_status accel_disk_offload(accel_model* model, const char* offload_dir) {
  return guarded([&] {
    const auto& m = deref(model, "model").model;
    accel::require_arg(offload_dir != nullptr, "offload_dir is NULL");
    accel::disk_offload(m, offload_dir);
  });
}

ACCEL_API accel_status accel_cpu_offload(accel_model* model, const char* execution_device, int offload_buffers) {
  return guarded([&] {
    const auto& m = deref(model, "model").model;
    accel::cpu_offload(m, execution_device ? execution_device : "", offload_buffers != 0);
  });
}

ACCEL_API accel_status accel_disk_offload_on_device(accel_model* model, const char* offload_dir,
                                                    const char* execution_device) {
  return guarded([&] {
    const auto& m = deref(model, "model").model;
    accel::require_arg(offload_dir != nullptr, "offload_dir is NULL");
    accel::disk_offload(m, offload_dir, execution_device ? execution_device : "");
  });
}

ACCEL_API accel_status accel_model_module_sizes(const accel_model* model, const char* dtype, char** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    nlohmann::ordered_json sizes = nlohmann::ordered_json::object();
    for (const auto& [name, bytes] : accel::compute_module_sizes(deref(model, "model").model, dtype_arg(dtype))) {
      sizes[name] = bytes;
    }
    result = new_string(sizes.dump());
  });
}

ACCEL_API accel_status accel_infer_auto_device_map(const accel_model* model, const char* max_memory,
                                                   const char* const* no_split, size_t count, const char* dtype,
                                                   char** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const auto& m = deref(model, "model").model;
    const auto classes = class_names(no_split, count);
    auto map = accel::infer_auto_device_map(
        m, max_memory ? accel::parse_max_memory(max_memory) : accel::available_memory(), classes, dtype_arg(dtype));
    result = new_string(accel::device_map_to_json(map));
  });
}

ACCEL_API accel_status accel_balanced_memory(const accel_model* model, const char* max_memory,
                                             const char* const* no_split, size_t count, const char* dtype, int low_zero,
                                             char** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const auto& m = deref(model, "model").model;
    const auto classes = class_names(no_split, count);
    const bool given = max_memory != nullptr;
    const auto budgets =
        accel::balanced_memory(m, given ? accel::parse_max_memory(max_memory) : accel::available_memory(), classes,
                               dtype_arg(dtype), low_zero != 0, given);
    result = budgets_json(budgets);
  });
}

ACCEL_API accel_status accel_available_memory(char** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    result = budgets_json(accel::available_memory());
  });
}

ACCEL_API accel_status accel_model_hf_device_map(const accel_model* model, char** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    result = new_string(accel::device_map_to_json(accel::hf_device_map(deref(model, "model").model)));
  });
}

ACCEL_API accel_status accel_verify_device_map(const accel_model* model, const char* device_map) {
  return guarded([&] {
    const auto& m = deref(model, "model").model;
    accel::require_arg(device_map != nullptr, "device_map is NULL");
    accel::verify_device_map(m, accel::device_map_from_json(device_map));
  });
}

}  // extern "C"
