#include "capi/handles.hpp"
#include "state/environment.hpp"

#include <algorithm>
#include <tuple>

using namespace accel::capi;

namespace {

void init_accelerator_options(accel_accelerator_options* opts) {
  *opts = accel_accelerator_options ACCEL_ACCELERATOR_OPTIONS_INIT;
}

// "tensorboard, jsonl" → {"tensorboard", "jsonl"}; empty items dropped.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items = accel::detail::split_comma_list(text);
  items.erase(std::remove(items.begin(), items.end(), std::string()), items.end());
  return items;
}

accel::AcceleratorOptions to_core(const accel_accelerator_options& o) {
  accel::AcceleratorOptions core;
  core.cpu = o.cpu != 0;
  core.timeout = std::chrono::milliseconds(o.timeout_ms);  // checked once, with the rest, by resolve_options
  const int precision = enum_value(o.mixed_precision);
  if (precision != ACCEL_PRECISION_DEFAULT) {
    accel::require_arg(precision >= ACCEL_PRECISION_NO && precision <= ACCEL_PRECISION_FP8,
                       "mixed_precision " + std::to_string(precision) + " is not an accel_mixed_precision value");
    core.mixed_precision = static_cast<accel::MixedPrecision>(precision);
  }
  core.bucket_cap_mb = o.bucket_cap_mb;
  accel::require_arg(o.gradient_accumulation_steps >= 0,
                     "gradient_accumulation_steps must be >= 1 (0: from the "
                     "environment), got " +
                         std::to_string(o.gradient_accumulation_steps));
  if (o.gradient_accumulation_steps > 0) core.gradient_accumulation_steps = o.gradient_accumulation_steps;
  core.sync_with_dataloader = o.sync_with_dataloader != 0;
  core.sync_each_batch = o.sync_each_batch != 0;
  core.adjust_scheduler = o.adjust_scheduler != 0;
  core.scaler_init_scale = o.scaler_init_scale;
  core.scaler_growth_factor = o.scaler_growth_factor;
  core.scaler_backoff_factor = o.scaler_backoff_factor;
  core.scaler_growth_interval = o.scaler_growth_interval;
  core.dataloader.split_batches = o.split_batches != 0;
  core.dataloader.even_batches = o.even_batches != 0;
  accel::require_arg(o.dispatch_batches >= -1,
                     "dispatch_batches must be -1 (unset), 0 or 1, got " + std::to_string(o.dispatch_batches));
  if (o.dispatch_batches >= 0) core.dataloader.dispatch_batches = o.dispatch_batches != 0;
  core.dataloader.use_seedable_sampler = o.use_seedable_sampler != 0;
  accel::require_arg(o.data_seed >= -1, "data_seed must be >= 0, or -1 for none, got " + std::to_string(o.data_seed));
  if (o.data_seed >= 0) core.dataloader.data_seed = static_cast<uint64_t>(o.data_seed);
  core.device_placement = o.device_placement != 0;
  if (o.project_dir != nullptr) core.project.project_dir = o.project_dir;
  if (o.logging_dir != nullptr) core.project.logging_dir = o.logging_dir;
  core.project.automatic_checkpoint_naming = o.automatic_checkpoint_naming != 0;
  accel::require_arg(o.total_limit >= 0, "total_limit must be >= 0, got " + std::to_string(o.total_limit));
  core.project.total_limit = o.total_limit;
  core.project.save_on_each_node = o.save_on_each_node != 0;
  if (o.log_with != nullptr) core.log_with = split_list(o.log_with);
  core.first_bucket_cap_mb = o.first_bucket_cap_mb;
  core.gradient_as_bucket_view = o.gradient_as_bucket_view != 0;
  core.static_graph = o.static_graph != 0;
  core.find_unused_parameters = o.find_unused_parameters != 0;
  core.comm_hook = static_cast<accel::CommHook>(enum_value(o.comm_hook));  // checked by resolve_options
  core.broadcast_buffers = o.broadcast_buffers != 0;
  const int sharding = enum_value(o.sharding_strategy);
  if (sharding != ACCEL_SHARDING_DEFAULT) {
    accel::require_arg(sharding >= ACCEL_SHARDING_NO_SHARD && sharding <= ACCEL_SHARDING_HYBRID_SHARD,
                       "sharding_strategy " + std::to_string(sharding) + " is not an accel_sharding_strategy value");
    core.sharding_strategy = static_cast<accel::ShardingStrategy>(sharding);
  }
  if (o.fsdp_min_num_params != -1) {
    accel::require_arg(o.fsdp_min_num_params >= 0, "fsdp_min_num_params must be -1 (default) or 0 or more, got " +
                                                       std::to_string(o.fsdp_min_num_params));
    core.fsdp_min_num_params = o.fsdp_min_num_params;
  }
  if (o.fsdp_activation_checkpointing != -1) {
    accel::require_arg(o.fsdp_activation_checkpointing == 0 || o.fsdp_activation_checkpointing == 1,
                       "fsdp_activation_checkpointing must be -1 (default), 0 or 1, got " +
                           std::to_string(o.fsdp_activation_checkpointing));
    core.fsdp_activation_checkpointing = o.fsdp_activation_checkpointing == 1;
  }
  for (const auto& [field, value, name] :
       {std::tuple{&core.fsdp_backward_prefetch, o.fsdp_backward_prefetch, "fsdp_backward_prefetch"},
        std::tuple{&core.fsdp_forward_prefetch, o.fsdp_forward_prefetch, "fsdp_forward_prefetch"},
        std::tuple{&core.cpu_offload, o.cpu_offload, "cpu_offload"}}) {
    accel::require_arg(value >= -1 && value <= 1,
                       std::string(name) + " must be -1 (default), 0 or 1, got " + std::to_string(value));
    if (value != -1) *field = value == 1;
  }
  if (o.fsdp_state_dict_type != nullptr) core.fsdp_state_dict_type = std::string(o.fsdp_state_dict_type);
  const std::tuple<int64_t, const char*> sizes[] = {{o.parallelism_dp_replicate_size, "parallelism_dp_replicate_size"},
                                                    {o.parallelism_dp_shard_size, "parallelism_dp_shard_size"},
                                                    {o.parallelism_tp_size, "parallelism_tp_size"},
                                                    {o.parallelism_cp_size, "parallelism_cp_size"}};
  bool mesh = false;
  for (const auto& [size, name] : sizes) {
    accel::require_arg(size >= 0,
                       std::string(name) + " must be 0 (default) or a positive size, got " + std::to_string(size));
    mesh = mesh || size > 0;
  }
  if (mesh) {
    auto size_or_one = [](int64_t size) { return size > 0 ? size : int64_t{1}; };
    core.parallelism_config =
        accel::ParallelismConfig{size_or_one(o.parallelism_dp_replicate_size), size_or_one(o.parallelism_dp_shard_size),
                                 size_or_one(o.parallelism_tp_size), size_or_one(o.parallelism_cp_size)};
  }
  core.autocast_enabled = o.autocast_enabled != 0;
  accel::require_arg(
      o.autocast_cache_enabled >= -1 && o.autocast_cache_enabled <= 1,
      "autocast_cache_enabled must be -1 (default), 0 or 1, got " + std::to_string(o.autocast_cache_enabled));
  if (o.autocast_cache_enabled != -1) core.autocast_cache_enabled = o.autocast_cache_enabled == 1;
  core.scaler_enabled = o.scaler_enabled != 0;
  if (o.backend != nullptr) core.backend = o.backend;
  if (o.init_method != nullptr) core.init_method = o.init_method;
  if (o.rng_types != nullptr) core.rng_types = split_list(o.rng_types);
  core.dataloader.non_blocking = o.non_blocking != 0;
  core.dataloader.use_stateful_dataloader = o.use_stateful_dataloader != 0;
  core.step_scheduler_with_optimizer = o.step_scheduler_with_optimizer != 0;
  if (o.fsdp_transformer_layer_cls_to_wrap != nullptr) {  // an empty name is refused with the accelerator's options
    core.fsdp_transformer_layer_cls_to_wrap = accel::detail::split_comma_list(o.fsdp_transformer_layer_cls_to_wrap);
  }
  return core;
}

// The borrowed tensors of a list argument; a NULL array with count > 0 or a bad
// element is INVALID_ARGUMENT naming it.
std::vector<at::Tensor> tensor_list(const accel_tensor* const* tensors, size_t count) {
  accel::require_arg(tensors != nullptr || count == 0, "tensors is NULL but count is " + std::to_string(count));
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < count; ++i) {
    const std::string name = "tensors[" + std::to_string(i) + "]";
    out.push_back(deref(tensors[i], name.c_str()).tensor);
  }
  return out;
}

// Checked before any work so a NULL out fails without communicating.
void require_out_list(accel_tensor** out, size_t count) {
  accel::require_arg(out != nullptr || count == 0, "out is NULL but count is " + std::to_string(count));
}

// All handles or none: out is written only once every result is published.
void publish_list(std::vector<at::Tensor> results, accel_tensor** out) {
  std::vector<accel_tensor*> handles(results.size(), nullptr);
  try {
    for (size_t i = 0; i < results.size(); ++i) publish_tensor(std::move(results[i]), &handles[i]);
  } catch (...) {
    for (accel_tensor* h : handles) accel_tensor_free(h);
    throw;
  }
  std::copy(handles.begin(), handles.end(), out);
}

// By reference: copying an out-of-range enum value is itself undefined (UBSan).
accel::ReduceOp reduce_op_of(const accel_reduce_op& op) {
  const int value = enum_value(op);
  accel::require_arg(
      value == ACCEL_REDUCE_SUM || value == ACCEL_REDUCE_MEAN || value == ACCEL_REDUCE_NONE,
      "op " + std::to_string(value) + " is not ACCEL_REDUCE_SUM, ACCEL_REDUCE_MEAN or ACCEL_REDUCE_NONE");
  return static_cast<accel::ReduceOp>(value);
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
ACCEL_API accel_status accel_accelerator_sharding_strategy(const accel_accelerator* acc, accel_sharding_strategy* out) {
  return query(acc, [&](const accel::Accelerator& a) {
    out_param(out, "out") = static_cast<accel_sharding_strategy>(a.sharding_strategy());
  });
}
ACCEL_API accel_status accel_accelerator_cpu_offload(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.cpu_offload() ? 1 : 0; });
}
ACCEL_API accel_status accel_accelerator_parallelism_config(const accel_accelerator* acc, int64_t* dp_replicate_size,
                                                            int64_t* dp_shard_size, int64_t* tp_size,
                                                            int64_t* cp_size) {
  return query(acc, [&](const accel::Accelerator& a) {
    const accel::ParallelismConfig mesh = a.parallelism_config();
    for (const auto& [out, value] :
         {std::pair{dp_replicate_size, mesh.dp_replicate_size}, std::pair{dp_shard_size, mesh.dp_shard_size},
          std::pair{tp_size, mesh.tp_size}, std::pair{cp_size, mesh.cp_size}}) {
      if (out != nullptr) *out = value;
    }
  });
}
ACCEL_API accel_status accel_accelerator_parallelism_ranks(const accel_accelerator* acc, int64_t* dp_replicate_rank,
                                                           int64_t* dp_shard_rank, int64_t* tp_rank, int64_t* cp_rank) {
  return query(acc, [&](const accel::Accelerator& a) {
    const accel::ParallelismRanks ranks = a.parallelism_ranks();
    for (const auto& [out, value] :
         {std::pair{dp_replicate_rank, ranks.dp_replicate_rank}, std::pair{dp_shard_rank, ranks.dp_shard_rank},
          std::pair{tp_rank, ranks.tp_rank}, std::pair{cp_rank, ranks.cp_rank}}) {
      if (out != nullptr) *out = value;
    }
  });
}
ACCEL_API accel_status accel_accelerator_held_bytes(const accel_accelerator* acc, const accel_model* model,
                                                    const accel_optimizer* optimizer, int64_t* parameters,
                                                    int64_t* gradients, int64_t* optimizer_state) {
  return guarded([&] {
    auto& p = out_param(parameters, "parameters");
    auto& g = out_param(gradients, "gradients");
    auto& s = out_param(optimizer_state, "optimizer_state");
    const accel::Optimizer* opt = optimizer ? deref(optimizer, "optimizer").optimizer.get() : nullptr;
    const accel::HeldBytes held = deref(acc, "acc").accelerator->held_bytes(deref(model, "model").model, opt);
    p = held.parameters;
    g = held.gradients;
    s = held.optimizer_state;
  });
}
ACCEL_API accel_status accel_accelerator_device(const accel_accelerator* acc, const char** out) {
  return guarded([&] { out_param(out, "out") = deref(acc, "acc").device_name.c_str(); });
}
ACCEL_API accel_status accel_accelerator_send_to_device(const accel_accelerator* acc, const accel_tensor* tensor,
                                                        accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const c10::Device device = deref(acc, "acc").accelerator->device();
    publish_tensor(deref(tensor, "tensor").tensor.to(device), &result);
  });
}
ACCEL_API accel_status accel_accelerator_send_map_to_device(const accel_accelerator* acc, const accel_tensor_map* map,
                                                            accel_tensor_map** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const c10::Device device = deref(acc, "acc").accelerator->device();
    auto moved = std::make_unique<accel_tensor_map>();
    for (const auto& [name, tensor] : deref(map, "map").entries) moved->entries.emplace_back(name, tensor.to(device));
    publish(std::move(moved), &result);
  });
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

ACCEL_API accel_status accel_accelerator_set_seed_ext(accel_accelerator* acc, uint64_t seed, int device_specific,
                                                      int deterministic) {
  return guarded([&] { deref(acc, "acc").accelerator->set_seed(seed, device_specific != 0, deterministic != 0); });
}

ACCEL_API accel_status accel_accelerator_gather(accel_accelerator* acc, const accel_tensor* tensor,
                                                accel_tensor** out) {
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
    const accel::ReduceOp reduce_op = reduce_op_of(op);
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_tensor(accelerator.reduce(deref(tensor, "tensor").tensor, reduce_op), &result);
  });
}

ACCEL_API accel_status accel_accelerator_broadcast(accel_accelerator* acc, const accel_tensor* tensor, int from,
                                                   accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    publish_tensor(deref(acc, "acc").accelerator->broadcast(deref(tensor, "tensor").tensor, from), &result);
  });
}

ACCEL_API accel_status accel_accelerator_pad_across_processes(accel_accelerator* acc, const accel_tensor* tensor,
                                                              int64_t dim, double pad_value, int pad_first,
                                                              accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_tensor(accelerator.pad_across_processes(deref(tensor, "tensor").tensor, dim, pad_value, pad_first != 0),
                   &result);
  });
}

ACCEL_API accel_status accel_accelerator_gather_tensors(accel_accelerator* acc, const accel_tensor* const* tensors,
                                                        size_t count, accel_tensor** out) {
  return guarded([&] {
    require_out_list(out, count);
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_list(accelerator.gather(tensor_list(tensors, count)), out);
  });
}

ACCEL_API accel_status accel_accelerator_gather_for_metrics_tensors(accel_accelerator* acc,
                                                                    const accel_tensor* const* tensors, size_t count,
                                                                    accel_tensor** out) {
  return guarded([&] {
    require_out_list(out, count);
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_list(accelerator.gather_for_metrics(tensor_list(tensors, count)), out);
  });
}

ACCEL_API accel_status accel_accelerator_reduce_tensors(accel_accelerator* acc, const accel_tensor* const* tensors,
                                                        size_t count, accel_reduce_op op, double scale,
                                                        accel_tensor** out) {
  return guarded([&] {
    require_out_list(out, count);
    const accel::ReduceOp reduce_op = reduce_op_of(op);
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_list(accelerator.reduce(tensor_list(tensors, count), reduce_op, scale), out);
  });
}

ACCEL_API accel_status accel_accelerator_broadcast_tensors(accel_accelerator* acc, const accel_tensor* const* tensors,
                                                           size_t count, int from, accel_tensor** out) {
  return guarded([&] {
    require_out_list(out, count);
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_list(accelerator.broadcast(tensor_list(tensors, count), from), out);
  });
}

ACCEL_API accel_status accel_accelerator_pad_across_processes_tensors(accel_accelerator* acc,
                                                                      const accel_tensor* const* tensors, size_t count,
                                                                      int64_t dim, double pad_value, int pad_first,
                                                                      accel_tensor** out) {
  return guarded([&] {
    require_out_list(out, count);
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_list(accelerator.pad_across_processes(tensor_list(tensors, count), dim, pad_value, pad_first != 0), out);
  });
}

ACCEL_API accel_status accel_accelerator_metrics_length(const accel_accelerator* acc, int64_t gathered, int64_t* out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(gathered >= 0, "gathered " + std::to_string(gathered) + " is negative");
    result = deref(acc, "acc").accelerator->metrics_length(gathered);
  });
}

ACCEL_API accel_status accel_accelerator_debug_mode(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.debug_mode() ? 1 : 0; });
}

ACCEL_API accel_status accel_accelerator_broadcast_object(accel_accelerator* acc, const void* data, size_t nbytes,
                                                          int from, accel_tensor** bytes) {
  return guarded([&] {
    auto& result = out_param(bytes, "bytes");
    accel::require_arg(data != nullptr || nbytes == 0, "data is NULL but nbytes is " + std::to_string(nbytes));
    auto& accelerator = *deref(acc, "acc").accelerator;
    const std::string all =
        accelerator.broadcast_object(std::string(static_cast<const char*>(data), data ? nbytes : 0), from);
    at::Tensor tensor = at::empty({static_cast<int64_t>(all.size())}, at::kByte);
    if (!all.empty()) std::memcpy(tensor.data_ptr(), all.data(), all.size());
    publish_tensor(tensor, &result);
  });
}

ACCEL_API accel_status accel_accelerator_split_range(const accel_accelerator* acc, int64_t n, int apply_padding,
                                                     int64_t* start, int64_t* end, int64_t* padded_length) {
  return guarded([&] {
    auto& start_out = out_param(start, "start");
    auto& end_out = out_param(end, "end");
    auto& padded_out = out_param(padded_length, "padded_length");
    const auto range = deref(acc, "acc").accelerator->split_range(n, apply_padding != 0);
    start_out = range.start;
    end_out = range.end;
    padded_out = range.padded_length;
  });
}

ACCEL_API accel_status accel_accelerator_split_between_processes_tensors(const accel_accelerator* acc,
                                                                         const accel_tensor* const* tensors,
                                                                         size_t count, int apply_padding,
                                                                         accel_tensor** out) {
  return guarded([&] {
    require_out_list(out, count);
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_list(accelerator.split_between_processes(tensor_list(tensors, count), apply_padding != 0), out);
  });
}

ACCEL_API accel_status accel_accelerator_gather_object(accel_accelerator* acc, const void* data, size_t nbytes,
                                                       accel_tensor** bytes, accel_tensor** lengths) {
  return guarded([&] {
    auto& bytes_out = out_param(bytes, "bytes");
    auto& lengths_out = out_param(lengths, "lengths");
    accel::require_arg(data != nullptr || nbytes == 0, "data is NULL but nbytes is " + std::to_string(nbytes));
    auto& accelerator = *deref(acc, "acc").accelerator;
    std::vector<std::string> all =
        accelerator.gather_object(std::string(static_cast<const char*>(data), data ? nbytes : 0));
    std::vector<int64_t> sizes;
    std::string joined;
    for (const auto& item : all) {
      sizes.push_back(static_cast<int64_t>(item.size()));
      joined += item;
    }
    at::Tensor joined_tensor = at::empty({static_cast<int64_t>(joined.size())}, at::kByte);
    if (!joined.empty()) std::memcpy(joined_tensor.data_ptr(), joined.data(), joined.size());
    accel_tensor* joined_handle = nullptr;
    publish_tensor(joined_tensor, &joined_handle);
    publish_tensor(at::tensor(sizes, at::kLong), &lengths_out);
    bytes_out = joined_handle;
  });
}

ACCEL_API accel_status accel_accelerator_split_between_processes(const accel_accelerator* acc,
                                                                 const accel_tensor* tensor, int apply_padding,
                                                                 accel_tensor** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto& accelerator = *deref(acc, "acc").accelerator;
    publish_tensor(accelerator.split_between_processes(deref(tensor, "tensor").tensor, apply_padding != 0), &result);
  });
}

ACCEL_API accel_status accel_accelerator_set_trigger(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->set_trigger(); });
}

ACCEL_API accel_status accel_accelerator_check_trigger(accel_accelerator* acc, int* out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    result = deref(acc, "acc").accelerator->check_trigger() ? 1 : 0;
  });
}

ACCEL_API accel_status accel_accelerator_main_process_first_begin(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->main_process_first_begin(); });
}
ACCEL_API accel_status accel_accelerator_main_process_first_end(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->main_process_first_end(); });
}
ACCEL_API accel_status accel_accelerator_local_main_process_first_begin(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->local_main_process_first_begin(); });
}
ACCEL_API accel_status accel_accelerator_local_main_process_first_end(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->local_main_process_first_end(); });
}
ACCEL_API accel_status accel_accelerator_free_memory(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->free_memory(); });
}

ACCEL_API accel_status accel_accelerator_prepare_scheduler(accel_accelerator* acc, accel_scheduler* scheduler) {
  return guarded([&] { deref(acc, "acc").accelerator->prepare(*deref(scheduler, "scheduler").scheduler); });
}

ACCEL_API accel_status accel_accelerator_accumulate_begin(accel_accelerator* acc, accel_model* model) {
  return guarded([&] { deref(acc, "acc").accelerator->accumulate_begin(deref(model, "model").model); });
}
ACCEL_API accel_status accel_accelerator_accumulate_end(accel_accelerator* acc, accel_model* model) {
  return guarded([&] { deref(acc, "acc").accelerator->accumulate_end(deref(model, "model").model); });
}
ACCEL_API accel_status accel_accelerator_join_uneven_inputs_begin(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->join_uneven_inputs_begin(); });
}

ACCEL_API accel_status accel_accelerator_join_uneven_inputs_end(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->join_uneven_inputs_end(); });
}

ACCEL_API accel_status accel_accelerator_end_of_dataloader(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.end_of_dataloader() ? 1 : 0; });
}

ACCEL_API accel_status accel_accelerator_in_dataloader(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.in_dataloader() ? 1 : 0; });
}

ACCEL_API accel_status accel_accelerator_remainder(const accel_accelerator* acc, int64_t* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.remainder(); });
}

ACCEL_API accel_status accel_accelerator_sync_gradients(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.sync_gradients() ? 1 : 0; });
}
ACCEL_API accel_status accel_accelerator_gradient_accumulation_steps(const accel_accelerator* acc, int64_t* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.gradient_accumulation_steps(); });
}
ACCEL_API accel_status accel_accelerator_accumulation_step(const accel_accelerator* acc, int64_t* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.accumulation_step(); });
}
ACCEL_API accel_status accel_accelerator_set_sync_gradients(accel_accelerator* acc, int sync) {
  return guarded([&] { deref(acc, "acc").accelerator->set_sync_gradients(sync != 0); });
}
ACCEL_API accel_status accel_accelerator_set_gradient_accumulation_steps(accel_accelerator* acc, int64_t steps) {
  return guarded([&] { deref(acc, "acc").accelerator->set_gradient_accumulation_steps(steps); });
}
ACCEL_API accel_status accel_accelerator_split_batches(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.dataloader_config().split_batches; });
}
ACCEL_API accel_status accel_accelerator_even_batches(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.dataloader_config().even_batches; });
}
ACCEL_API accel_status accel_accelerator_dispatch_batches(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) {
    const auto& dispatch = a.dataloader_config().dispatch_batches;
    out_param(out, "out") = dispatch ? (*dispatch ? 1 : 0) : -1;
  });
}
ACCEL_API accel_status accel_accelerator_use_seedable_sampler(const accel_accelerator* acc, int* out) {
  return query(
      acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.dataloader_config().use_seedable_sampler; });
}
ACCEL_API accel_status accel_accelerator_data_seed(const accel_accelerator* acc, int64_t* out) {
  return query(acc, [&](const accel::Accelerator& a) {
    const auto& seed = a.dataloader_config().data_seed;
    out_param(out, "out") = seed ? static_cast<int64_t>(*seed) : -1;
  });
}
ACCEL_API accel_status accel_accelerator_non_blocking(const accel_accelerator* acc, int* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.dataloader_config().non_blocking; });
}
ACCEL_API accel_status accel_accelerator_use_stateful_dataloader(const accel_accelerator* acc, int* out) {
  return query(
      acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.dataloader_config().use_stateful_dataloader; });
}
ACCEL_API accel_status accel_accelerator_set_even_batches(accel_accelerator* acc, int even) {
  return guarded([&] { deref(acc, "acc").accelerator->set_even_batches(even != 0); });
}
ACCEL_API accel_status accel_accelerator_synchronize_rng_states(accel_accelerator* acc, const char* rng_types) {
  return guarded([&] {
    accel::require_arg(rng_types != nullptr, "rng_types is NULL");
    deref(acc, "acc").accelerator->synchronize_rng_states(split_list(rng_types));
  });
}
ACCEL_API accel_status accel_accelerator_no_sync_begin(accel_accelerator* acc, accel_model* model) {
  return guarded([&] { deref(acc, "acc").accelerator->no_sync_begin(deref(model, "model").model); });
}
ACCEL_API accel_status accel_accelerator_no_sync_end(accel_accelerator* acc, accel_model* model) {
  return guarded([&] { deref(acc, "acc").accelerator->no_sync_end(deref(model, "model").model); });
}
ACCEL_API accel_status accel_accelerator_average_parameters(accel_accelerator* acc, accel_model* model) {
  return guarded([&] { deref(acc, "acc").accelerator->average_parameters(deref(model, "model").model); });
}
ACCEL_API accel_status accel_accelerator_trigger_sync_in_backward(accel_accelerator* acc, accel_model* model) {
  return guarded([&] { deref(acc, "acc").accelerator->trigger_sync_in_backward(deref(model, "model").model); });
}
ACCEL_API accel_status accel_accelerator_clip_grad_norm(accel_accelerator* acc, accel_model* model, double max_norm,
                                                        double norm_type, double* total_norm) {
  return guarded([&] {
    auto& result = out_param(total_norm, "total_norm");
    result = deref(acc, "acc").accelerator->clip_grad_norm(deref(model, "model").model, max_norm, norm_type);
  });
}
ACCEL_API accel_status accel_accelerator_clip_grad_value(accel_accelerator* acc, accel_model* model,
                                                         double clip_value) {
  return guarded([&] { deref(acc, "acc").accelerator->clip_grad_value(deref(model, "model").model, clip_value); });
}
ACCEL_API accel_status accel_accelerator_unscale_gradients(accel_accelerator* acc, accel_optimizer* optimizer) {
  return guarded([&] { deref(acc, "acc").accelerator->unscale_gradients(*deref(optimizer, "optimizer").optimizer); });
}
ACCEL_API accel_status accel_accelerator_loss_scale(const accel_accelerator* acc, double* out) {
  return query(acc, [&](const accel::Accelerator& a) { out_param(out, "out") = a.loss_scale(); });
}

ACCEL_API accel_status accel_accelerator_autocast_begin(accel_accelerator* acc, int enabled) {
  return guarded([&] {
    auto& accelerator = *deref(acc, "acc").accelerator;
    accel::require_arg(enabled >= -1 && enabled <= 1,
                       "enabled must be -1 (the options' autocast_enabled), 0 or 1, got " + std::to_string(enabled));
    if (enabled == -1) {
      accelerator.autocast_begin();
    } else {
      accelerator.autocast_begin(enabled == 1);
    }
  });
}
ACCEL_API accel_status accel_accelerator_autocast_end(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->autocast_end(); });
}
ACCEL_API accel_status accel_accelerator_no_grad_begin(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->no_grad_begin(); });
}
ACCEL_API accel_status accel_accelerator_no_grad_end(accel_accelerator* acc) {
  return guarded([&] { deref(acc, "acc").accelerator->no_grad_end(); });
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
