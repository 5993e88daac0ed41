#include "capi/handles.hpp"

using namespace accel::capi;

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

ACCEL_API accel_status accel_loss(accel_loss_kind kind, const accel_tensor* input, const accel_tensor* target,
                                  accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const int loss_kind = enum_value(kind);
    accel::require_arg(loss_kind >= ACCEL_LOSS_CROSS_ENTROPY && loss_kind <= ACCEL_LOSS_BCE_WITH_LOGITS,
                       "kind " + std::to_string(loss_kind) + " is not an accel_loss_kind");
    publish_tensor(accel::compute_loss(static_cast<accel::LossKind>(loss_kind), deref(input, "input").tensor,
                                       deref(target, "target").tensor),
                   &result);
  });
}

}  // extern "C"
