#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

void init_accelerator_options(accel_accelerator_options* opts) {
  *opts = accel_accelerator_options ACCEL_ACCELERATOR_OPTIONS_INIT;
}

accel::AcceleratorOptions to_core(const accel_accelerator_options& o) {
  accel::AcceleratorOptions core;
  core.cpu = o.cpu != 0;
  accel::require_arg(o.timeout_ms > 0, "timeout_ms must be positive, got " + std::to_string(o.timeout_ms));
  core.timeout = std::chrono::milliseconds(o.timeout_ms);
  if (o.mixed_precision != ACCEL_PRECISION_DEFAULT) {
    accel::require_arg(o.mixed_precision >= ACCEL_PRECISION_NO && o.mixed_precision <= ACCEL_PRECISION_FP8,
                       "mixed_precision " + std::to_string(static_cast<int>(o.mixed_precision)) +
                           " is not an accel_mixed_precision value");
    core.mixed_precision = static_cast<accel::MixedPrecision>(o.mixed_precision);
  }
  core.bucket_cap_mb = o.bucket_cap_mb;
  return core;
}

template <class Query>
accel_status query(const accel_accelerator* acc, Query&& query_fn) {
  return guarded([&] { query_fn(*deref(acc, "acc").accelerator); });
}

}  // namespace

extern "C" {

ACCEL_API void accel_accelerator_options_init(accel_accelerator_options* opts) {
  if (opts != nullptr) init_accelerator_options(opts);
}

ACCEL_API accel_status accel_accelerator_create(const accel_accelerator_options* opts, accel_accelerator** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto options = to_core(read_options(opts, "opts", init_accelerator_options));
    auto handle = std::make_unique<accel_accelerator>();
    handle->accelerator = std::make_unique<accel::Accelerator>(options);
    handle->device_name = handle->accelerator->device().str();
    publish(std::move(handle), &result);
  });
}

ACCEL_API void accel_accelerator_free(accel_accelerator* acc) { release(acc); }

ACCEL_API accel_status accel_accelerator_process_index(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.process_index(); });
}
ACCEL_API accel_status accel_accelerator_local_process_index(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.local_process_index(); });
}
ACCEL_API accel_status accel_accelerator_num_processes(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.num_processes(); });
}
ACCEL_API accel_status accel_accelerator_is_main_process(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.is_main_process() ? 1 : 0; });
}
ACCEL_API accel_status accel_accelerator_is_local_main_process(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.is_local_main_process() ? 1 : 0; });
}
ACCEL_API accel_status accel_accelerator_distributed_type(const accel_accelerator* acc, accel_distributed_type* out) {
  return query(acc, [&](const accel::Accelerator& a) {
    out_param(out, "out") = static_cast<accel_distributed_type>(a.distributed_type());
  });
}
ACCEL_API accel_status accel_accelerator_mixed_precision(const accel_accelerator* acc, accel_mixed_precision* out) {
  return query(acc, [&](const accel::Accelerator& a) {
    out_param(out, "out") = static_cast<accel_mixed_precision>(a.mixed_precision());
  });
}
ACCEL_API accel_status accel_accelerator_device(const accel_accelerator* acc, const char** out) {
  return guarded([&] { out_param(out, "out") = deref(acc, "acc").device_name.c_str(); });
}
ACCEL_API accel_status accel_accelerator_timeout_ms(const accel_accelerator* acc, int64_t* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.timeout().count(); });
}

ACCEL_API accel_status accel_accelerator_wait_for_everyone(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->wait_for_everyone(); });
}

ACCEL_API accel_status accel_accelerator_print(const accel_accelerator* acc, const char* message) {
  return guarded([&] {
    accel::require_arg(message != nullptr, "message is NULL");
    deref(acc, "acc").accelerator->print(message);
  });
}

ACCEL_API accel_status accel_accelerator_set_seed(accel_accelerator* acc, uint64_t seed) {
  return guarded([&] { deref(acc, "acc").accelerator->set_seed(seed); });
}

ACCEL_API accel_status accel_accelerator_gather(accel_accelerator* acc, const accel_tensor* tensor, accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_tensor(accelerator.gather(deref(tensor, "tensor").tensor), &result);
  });
}

ACCEL_API accel_status accel_accelerator_gather_for_metrics(accel_accelerator* acc, const accel_tensor* tensor,
                                                            accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_tensor(accelerator.gather_for_metrics(deref(tensor, "tensor").tensor), &result);
  });
}

ACCEL_API accel_status accel_accelerator_reduce(accel_accelerator* acc, const accel_tensor* tensor, accel_reduce_op op,
                                                accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(op == ACCEL_REDUCE_SUM || op == ACCEL_REDUCE_MEAN,
                       "op " + std::to_string(static_cast<int>(op)) + " is not ACCEL_REDUCE_SUM or ACCEL_REDUCE_MEAN");
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_tensor(accelerator.reduce(deref(tensor, "tensor").tensor, static_cast<accel::ReduceOp>(op)), &result);
  });
}

ACCEL_API accel_status accel_accelerator_prepare_model(accel_accelerator* acc, accel_model* model) {
  return guarded([&] { deref(acc, "acc").accelerator->prepare(deref(model, "model").model); });
}

ACCEL_API accel_status accel_accelerator_prepare_optimizer(accel_accelerator* acc, accel_optimizer* optimizer) {
  return guarded([&] { deref(acc, "acc").accelerator->prepare(*deref(optimizer, "optimizer").optimizer); });
}

ACCEL_API accel_status accel_accelerator_prepare_dataloader(accel_accelerator* acc, accel_dataloader* loader) {
  return guarded([&] { deref(acc, "acc").accelerator->prepare(*deref(loader, "loader").loader); });
}

ACCEL_API accel_status accel_accelerator_backward(accel_accelerator* acc, const accel_tensor* loss) {
  return guarded([&] { deref(acc, "acc").accelerator->backward(deref(loss, "loss").tensor); });
}

}  // extern "C"
