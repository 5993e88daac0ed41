#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

void init_default_optimizer_options(accel_optimizer_options* opts) {
  accel_optimizer_options_init(opts, ACCEL_OPTIM_ADAMW);
}

accel::OptimizerOptions to_core(const accel_optimizer_options& o) {
  const int kind = enum_value(o.kind);
  accel::require_arg(kind >= ACCEL_OPTIM_SGD && kind <= ACCEL_OPTIM_ADAGRAD,
                     "kind " + std::to_string(kind) + " is not an accel_optimizer_kind");
  accel::OptimizerOptions core;
  core.kind = static_cast<accel::OptimizerKind>(kind);
  core.lr = o.lr;
  core.weight_decay = o.weight_decay;
  core.momentum = o.momentum;
  core.dampening = o.dampening;
  core.nesterov = o.nesterov != 0;
  core.beta1 = o.beta1;
  core.beta2 = o.beta2;
  core.eps = o.eps;
  core.amsgrad = o.amsgrad != 0;
  core.alpha = o.alpha;
  core.centered = o.centered != 0;
  core.lr_decay = o.lr_decay;
  core.initial_accumulator_value = o.initial_accumulator_value;
  return core;
}

}  // namespace

extern "C" {

ACCEL_API void accel_optimizer_options_init(accel_optimizer_options* opts, accel_optimizer_kind kind) {
  if (opts == nullptr) return;
  const int value = enum_value(kind);
  bool known = value >= ACCEL_OPTIM_SGD && value <= ACCEL_OPTIM_ADAGRAD;
  accel::OptimizerOptions d =
      accel::OptimizerOptions::defaults(known ? static_cast<accel::OptimizerKind>(value) : accel::OptimizerKind::AdamW);
  *opts = accel_optimizer_options{};
  opts->struct_size = sizeof(accel_optimizer_options);
  std::memcpy(&opts->kind, &kind, sizeof kind);  // an unknown kind is kept (not loaded) so create() can name it
  opts->lr = d.lr;
  opts->weight_decay = d.weight_decay;
  opts->momentum = d.momentum;
  opts->dampening = d.dampening;
  opts->nesterov = d.nesterov;
  opts->beta1 = d.beta1;
  opts->beta2 = d.beta2;
  opts->eps = d.eps;
  opts->amsgrad = d.amsgrad;
  opts->alpha = d.alpha;
  opts->centered = d.centered;
  opts->lr_decay = d.lr_decay;
  opts->initial_accumulator_value = d.initial_accumulator_value;
}

ACCEL_API accel_status accel_optimizer_create(accel_model* model, const accel_optimizer_options* opts,
                                              accel_optimizer** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const accel::Model& m = deref(model, "model").model;
    accel::require_arg(opts != nullptr, "opts is NULL: initialise it with accel_optimizer_options_init");
    auto options = to_core(read_options(opts, "opts", init_default_optimizer_options));
    auto handle = std::make_unique<accel_optimizer>();
    handle->optimizer = std::make_shared<accel::Optimizer>(m, options);
    publish(std::move(handle), &result);
  });
}

ACCEL_API void accel_optimizer_free(accel_optimizer* optimizer) { release(optimizer); }

ACCEL_API accel_status accel_optimizer_step(accel_optimizer* optimizer) {
  return guarded([&] { deref(optimizer, "optimizer").optimizer->step(); });
}

ACCEL_API accel_status accel_optimizer_zero_grad(accel_optimizer* optimizer) {
  return guarded([&] { deref(optimizer, "optimizer").optimizer->zero_grad(); });
}

ACCEL_API accel_status accel_optimizer_step_was_skipped(const accel_optimizer* optimizer, int* out) {
  return guarded([&] { out_param(out, "out") = deref(optimizer, "optimizer").optimizer->step_was_skipped() ? 1 : 0; });
}

ACCEL_API accel_status accel_optimizer_get_lr(const accel_optimizer* optimizer, double* out) {
  return guarded([&] { out_param(out, "out") = deref(optimizer, "optimizer").optimizer->lr(); });
}

ACCEL_API accel_status accel_optimizer_set_lr(accel_optimizer* optimizer, double lr) {
  return guarded([&] { deref(optimizer, "optimizer").optimizer->set_lr(lr); });
}

}  // extern "C"
