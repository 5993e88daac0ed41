#include <nlohmann/json.hpp>

#include "accel/checkpoint.hpp"
#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

// The C map into the core's load_state_dict (both C calls; what it skipped comes back).
accel::LoadReport load_state_dict(accel_model* model, const accel_tensor_map* tensors, int strict) {
  accel::Model& m = deref(model, "model").model;
  const auto& entries = deref(tensors, "tensors").entries;
  return m.load_state_dict(accel::Model::NamedTensors(entries.begin(), entries.end()), strict != 0);
}

}  // namespace

extern "C" {

ACCEL_API accel_status accel_model_from_torchscript(const char* path, accel_model** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(path != nullptr, "path is NULL");
    publish(std::make_unique<accel_model>(accel_model{accel::Model::from_torchscript(path)}), &result);
  });
}

ACCEL_API accel_status accel_model_from_json(const char* spec, accel_model** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(spec != nullptr, "spec is NULL");
    publish(std::make_unique<accel_model>(accel_model{accel::Model::from_json(spec)}), &result);
  });
}

ACCEL_API void accel_model_free(accel_model* model) { release(model); }

ACCEL_API accel_status accel_model_forward(accel_model* model, const accel_tensor* input, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    publish_tensor(deref(model, "model").model.forward(deref(input, "input").tensor), &result);
  });
}

ACCEL_API accel_status accel_model_train(accel_model* model, int training) {
  return guarded([&] { deref(model, "model").model.train(training != 0); });
}

ACCEL_API accel_status accel_model_num_parameters(const accel_model* model, int trainable_only, int64_t* out) {
  return guarded([&] { out_param(out, "out") = deref(model, "model").model.num_parameters(trainable_only != 0); });
}

}  // extern "C"

namespace {

void init_loss_options(accel_loss_options* opts) { *opts = accel_loss_options ACCEL_LOSS_OPTIONS_INIT; }

// kind by reference: copying an out-of-range enum value is undefined (UBSan).
accel_status compute_loss(const accel_loss_kind& kind, const accel_tensor* input, const accel_tensor* target,
                          const accel_loss_options* opts, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const int loss_kind = enum_value(kind);
    accel::require_arg(loss_kind >= ACCEL_LOSS_CROSS_ENTROPY && loss_kind <= ACCEL_LOSS_CAUSAL_LM,
                       "kind " + std::to_string(loss_kind) + " is not an accel_loss_kind");
    const accel_loss_options o = read_options(opts, "opts", init_loss_options);
    publish_tensor(
        accel::compute_loss(static_cast<accel::LossKind>(loss_kind), deref(input, "input").tensor,
                            deref(target, "target").tensor, accel::LossOptions{o.ignore_index, o.label_smoothing}),
        &result);
  });
}

}  // namespace

extern "C" {

ACCEL_API accel_status accel_loss(accel_loss_kind kind, const accel_tensor* input, const accel_tensor* target,
                                  accel_tensor** out) {
  return compute_loss(kind, input, target, nullptr, out);
}

ACCEL_API void accel_loss_options_init(accel_loss_options* opts) {
  if (opts != nullptr) init_loss_options(opts);
}

ACCEL_API accel_status accel_loss_ext(accel_loss_kind kind, const accel_tensor* input, const accel_tensor* target,
                                      const accel_loss_options* opts, accel_tensor** out) {
  return compute_loss(kind, input, target, opts, out);
}

}  // extern "C"

namespace {

// A new map holding named's tensors (references, not copies).
void publish_named(accel::Model::NamedTensors named, accel_tensor_map** out) {
  auto map = std::make_unique<accel_tensor_map>();
  for (auto& entry : named) map->entries.push_back(std::move(entry));
  publish(std::move(map), out);
}

}  // namespace

extern "C" {

ACCEL_API accel_status accel_tensor_map_create(accel_tensor_map** out) {
  return guarded([&] { publish(std::make_unique<accel_tensor_map>(), &out_param(out, "out")); });
}

ACCEL_API void accel_tensor_map_free(accel_tensor_map* map) { release(map); }

ACCEL_API accel_status accel_tensor_map_set(accel_tensor_map* map, const char* name, const accel_tensor* tensor) {
  return guarded([&] {
    auto& entries = deref(map, "map").entries;
    accel::require_arg(name != nullptr, "name is NULL");
    accel::require_arg(*name != '\0', "name is empty");
    const at::Tensor& value = deref(tensor, "tensor").tensor;
    for (auto& entry : entries) {
      if (entry.first == name) {
        entry.second = value;
        return;
      }
    }
    entries.emplace_back(name, value);
  });
}

ACCEL_API accel_status accel_tensor_map_count(const accel_tensor_map* map, size_t* out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    result = deref(map, "map").entries.size();
  });
}

ACCEL_API accel_status accel_tensor_map_name_at(const accel_tensor_map* map, size_t index, const char** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const auto& entries = deref(map, "map").entries;
    accel::require_arg(index < entries.size(), "index " + std::to_string(index) + " is out of range: the map holds " +
                                                   std::to_string(entries.size()) + " tensors");
    result = entries[index].first.c_str();
  });
}

ACCEL_API accel_status accel_tensor_map_get(const accel_tensor_map* map, const char* name, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const auto& entries = deref(map, "map").entries;
    accel::require_arg(name != nullptr, "name is NULL");
    std::string held;
    for (const auto& entry : entries) {
      if (entry.first == name) return publish_tensor(entry.second, &result);
      held += (held.empty() ? "" : ", ") + entry.first;
    }
    accel::fail(accel::ErrorCode::InvalidArgument, "no tensor named \"" + std::string(name) + "\" (the map holds " +
                                                       (held.empty() ? std::string("none") : held) + ")");
  });
}

ACCEL_API accel_status accel_model_from_torchscript_outputs(const char* path, const char* const* output_names,
                                                            size_t count, accel_model** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(path != nullptr, "path is NULL");
    std::vector<std::string> names = string_array(output_names, count, "output_names");
    publish(std::make_unique<accel_model>(accel_model{accel::Model::from_torchscript(path, std::move(names))}),
            &result);
  });
}

ACCEL_API accel_status accel_model_forward_named(accel_model* model, const accel_tensor_map* inputs,
                                                 accel_tensor_map** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::Model& m = deref(model, "model").model;
    const auto& entries = deref(inputs, "inputs").entries;
    publish_named(m.forward(accel::Model::NamedTensors(entries.begin(), entries.end())), &result);
  });
}

ACCEL_API accel_status accel_model_named_parameters(const accel_model* model, accel_tensor_map** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    publish_named(deref(model, "model").model.named_parameters(), &result);
  });
}

ACCEL_API accel_status accel_model_named_buffers(const accel_model* model, accel_tensor_map** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    publish_named(deref(model, "model").model.named_buffers(), &result);
  });
}

ACCEL_API accel_status accel_model_load_state_dict(accel_model* model, const accel_tensor_map* tensors, int strict) {
  return guarded([&] { load_state_dict(model, tensors, strict); });
}

ACCEL_API accel_status accel_model_load_state_dict_report(accel_model* model, const accel_tensor_map* tensors,
                                                          int strict, char** report_json) {
  return guarded([&] {
    auto& result = out_param(report_json, "report_json");
    const accel::LoadReport report = load_state_dict(model, tensors, strict);
    nlohmann::ordered_json json = {{"missing_keys", report.missing_keys}, {"unexpected_keys", report.unexpected_keys}};
    // A map's names are the caller's bytes: invalid UTF-8 is replaced, not an error after the load.
    result = new_string(json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  });
}

}  // extern "C"
