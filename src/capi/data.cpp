#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

void init_dataloader_options(accel_dataloader_options* opts) {
  *opts = accel_dataloader_options ACCEL_DATALOADER_OPTIONS_INIT;
}

void init_dataset_callbacks(accel_dataset_callbacks* callbacks) {
  *callbacks = accel_dataset_callbacks ACCEL_DATASET_CALLBACKS_INIT;
}

void init_stream_callbacks(accel_stream_callbacks* callbacks) {
  *callbacks = accel_stream_callbacks ACCEL_STREAM_CALLBACKS_INIT;
}

std::vector<accel::FieldSpec> to_field_specs(const accel_field_spec* fields, int num_fields) {
  accel::require_arg(fields != nullptr, "fields is NULL");
  accel::require_arg(num_fields > 0, "num_fields must be positive, got " + std::to_string(num_fields));
  std::vector<accel::FieldSpec> specs;
  for (int f = 0; f < num_fields; ++f) {
    const accel_field_spec& field = fields[f];
    std::string name = "fields[" + std::to_string(f) + "]";
    accel::require_arg(field.ndim >= 0 && field.ndim <= 8,
                       name + ".ndim must be in [0, 8], got " + std::to_string(field.ndim));
    accel::require_arg(field.ndim == 0 || field.shape != nullptr, name + ".shape is NULL");
    accel::FieldSpec spec;
    spec.dtype = to_scalar_type(enum_value(field.dtype));
    spec.shape.assign(field.shape, field.shape + field.ndim);
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::vector<size_t> field_bytes(const std::vector<accel::FieldSpec>& specs) {
  std::vector<size_t> bytes;
  for (const auto& spec : specs) {
    size_t n = c10::elementSize(spec.dtype);
    for (int64_t d : spec.shape) n *= static_cast<size_t>(d);
    bytes.push_back(n);
  }
  return bytes;
}

// Adapts a C sample callback to the core's SampleWriter.
accel::SampleWriter sample_writer(accel_status (*fn)(void*, int64_t, void* const*, const size_t*),
                                  std::shared_ptr<void> user, std::vector<size_t> bytes, const char* name) {
  if (fn == nullptr) return nullptr;
  return [fn, user, bytes, name](int64_t index, const std::vector<void*>& fields) {
    accel_set_error("");
    check_callback(fn(user.get(), index, fields.data(), bytes.data()),
                   std::string("dataset callback ") + name + " for sample " + std::to_string(index));
  };
}

std::shared_ptr<accel::Dataset> map_dataset(const accel_dataset& handle, const char* what) {
  accel::require(handle.dataset != nullptr, accel::ErrorCode::State,
                 std::string(what) + ": the dataset is iterable (a stream has no length or index)");
  return handle.dataset;
}

// A batch sampler's batches from the C arrays: batch b is the batch_lengths[b]
// indices after the previous batches'.
std::vector<std::vector<int64_t>> batches_of(const int64_t* indices, const int64_t* batch_lengths,
                                             int64_t num_batches) {
  accel::require_arg(num_batches >= 0, "num_batches must not be negative, got " + std::to_string(num_batches));
  accel::require_arg(num_batches == 0 || (indices != nullptr && batch_lengths != nullptr),
                     "indices or batch_lengths is NULL with num_batches = " + std::to_string(num_batches));
  std::vector<std::vector<int64_t>> batches;
  const int64_t* next = indices;
  for (int64_t b = 0; b < num_batches; ++b) {
    accel::require_arg(batch_lengths[b] >= 1, "batch_lengths[" + std::to_string(b) + "] must be >= 1, got " +
                                                  std::to_string(batch_lengths[b]));
    batches.emplace_back(next, next + batch_lengths[b]);
    next += batch_lengths[b];
  }
  return batches;
}

}  // namespace

extern "C" {

ACCEL_API accel_status accel_dataset_from_tensors(const accel_tensor* inputs, const accel_tensor* targets,
                                                  accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    std::vector<at::Tensor> fields{deref(inputs, "inputs").tensor, deref(targets, "targets").tensor};
    publish(std::make_unique<accel_dataset>(accel_dataset{std::make_shared<accel::TensorDataset>(fields), nullptr}),
            &result);
  });
}

ACCEL_API accel_status accel_dataset_from_idx(const char* images_path, const char* labels_path, double mean, double std,
                                              accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(images_path != nullptr, "images_path is NULL");
    accel::require_arg(labels_path != nullptr, "labels_path is NULL");
    publish(std::make_unique<accel_dataset>(
                accel_dataset{accel::load_idx_dataset(images_path, labels_path, mean, std), nullptr}),
            &result);
  });
}

ACCEL_API accel_status accel_dataset_from_csv(const char* path, const char* label_column, accel_dtype label_dtype,
                                              accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(path != nullptr, "path is NULL");
    accel::require_arg(label_column != nullptr, "label_column is NULL");
    auto dataset = accel::load_csv_dataset(path, label_column, to_scalar_type(enum_value(label_dtype)));
    publish(std::make_unique<accel_dataset>(accel_dataset{dataset, nullptr}), &result);
  });
}

ACCEL_API accel_status accel_dataset_from_safetensors(const char* dir, const char* const* field_names, int num_fields,
                                                      accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(dir != nullptr, "dir is NULL");
    accel::require_arg(field_names != nullptr && num_fields > 0,
                       "field_names: need at least one name, got num_fields = " + std::to_string(num_fields));
    std::vector<std::string> names;
    for (int f = 0; f < num_fields; ++f) {
      accel::require_arg(field_names[f] != nullptr, "field_names[" + std::to_string(f) + "] is NULL");
      names.emplace_back(field_names[f]);
    }
    publish(std::make_unique<accel_dataset>(accel_dataset{accel::load_safetensors_dataset(dir, names), nullptr}),
            &result);
  });
}

ACCEL_API void accel_dataset_callbacks_init(accel_dataset_callbacks* callbacks) {
  if (callbacks != nullptr) init_dataset_callbacks(callbacks);
}

ACCEL_API void accel_stream_callbacks_init(accel_stream_callbacks* callbacks) {
  if (callbacks != nullptr) init_stream_callbacks(callbacks);
}

ACCEL_API accel_status accel_dataset_from_callbacks(const accel_field_spec* fields, int num_fields,
                                                    const accel_dataset_callbacks* callbacks, void* user,
                                                    accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(callbacks != nullptr, "callbacks is NULL");
    accel_dataset_callbacks c = read_options(callbacks, "callbacks", init_dataset_callbacks);
    accel::require_arg(c.length != nullptr, "callbacks->length is NULL");
    accel::require_arg(c.get_sample != nullptr, "callbacks->get_sample is NULL");
    std::vector<accel::FieldSpec> specs = to_field_specs(fields, num_fields);
    std::vector<size_t> bytes = field_bytes(specs);
    UserHold hold(user, c.release);  // released once the last loader or dataset using user is gone
    const std::shared_ptr<void>& held = hold.get();
    auto length = [fn = c.length, held]() {
      int64_t n = -1;
      accel_set_error("");
      check_callback(fn(held.get(), &n), "dataset callback length");
      return n;
    };
    auto dataset =
        std::make_shared<accel::CallbackDataset>(specs, length, sample_writer(c.get_sample, held, bytes, "get_sample"),
                                                 sample_writer(c.transform, held, bytes, "transform"));
    publish(std::make_unique<accel_dataset>(accel_dataset{dataset, nullptr}), &result);
    hold.arm();
  });
}

ACCEL_API accel_status accel_dataset_from_stream(const accel_field_spec* fields, int num_fields,
                                                 const accel_stream_callbacks* callbacks, void* user,
                                                 accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(callbacks != nullptr, "callbacks is NULL");
    accel_stream_callbacks c = read_options(callbacks, "callbacks", init_stream_callbacks);
    accel::require_arg(c.next_sample != nullptr, "callbacks->next_sample is NULL");
    std::vector<accel::FieldSpec> specs = to_field_specs(fields, num_fields);
    std::vector<size_t> bytes = field_bytes(specs);
    UserHold hold(user, c.release);
    const std::shared_ptr<void>& held = hold.get();
    auto next = [fn = c.next_sample, held, bytes](const std::vector<void*>& buffers) {
      int has_sample = 0;
      accel_set_error("");
      check_callback(fn(held.get(), buffers.data(), bytes.data(), &has_sample), "stream callback next_sample");
      return has_sample != 0;
    };
    std::function<void(uint64_t)> reset;
    if (c.reset != nullptr) {
      reset = [fn = c.reset, held](uint64_t epoch) {
        accel_set_error("");
        check_callback(fn(held.get(), epoch), "stream callback reset for epoch " + std::to_string(epoch));
      };
    }
    auto stream = std::make_shared<accel::CallbackStream>(specs, next, reset);
    publish(std::make_unique<accel_dataset>(accel_dataset{nullptr, stream}), &result);
    hold.arm();
  });
}

ACCEL_API accel_status accel_dataset_size(const accel_dataset* dataset, int64_t* out) {
  return guarded([&] { out_param(out, "out") = map_dataset(deref(dataset, "dataset"), "accel_dataset_size")->size(); });
}

ACCEL_API accel_status accel_dataset_is_iterable(const accel_dataset* dataset, int* out) {
  return guarded([&] { out_param(out, "out") = deref(dataset, "dataset").stream != nullptr ? 1 : 0; });
}

ACCEL_API void accel_dataset_free(accel_dataset* dataset) { release(dataset); }

ACCEL_API void accel_dataloader_options_init(accel_dataloader_options* opts) {
  if (opts != nullptr) init_dataloader_options(opts);
}

ACCEL_API accel_status accel_dataloader_create(accel_dataset* dataset, const accel_dataloader_options* opts,
                                               accel_dataloader** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto& ds = deref(dataset, "dataset");
    accel_dataloader_options o = read_options(opts, "opts", init_dataloader_options);
    accel::DataLoaderOptions core;
    core.batch_size = o.batch_size;
    core.shuffle = o.shuffle != 0;
    if (o.seed != 0) core.seed = o.seed;  // 0: no generator of its own
    core.drop_last = o.drop_last != 0;
    core.num_workers = o.num_workers;
    core.prefetch_factor = o.prefetch_factor;
    auto handle = std::make_unique<accel_dataloader>();
    handle->loader = ds.stream ? std::make_unique<accel::DataLoader>(ds.stream, core)
                               : std::make_unique<accel::DataLoader>(ds.dataset, core);
    publish(std::move(handle), &result);
  });
}

ACCEL_API accel_status accel_dataloader_create_from_batches(accel_dataset* dataset, const int64_t* indices,
                                                            const int64_t* batch_lengths, int64_t num_batches,
                                                            const accel_dataloader_options* opts,
                                                            accel_dataloader** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto loaded = map_dataset(deref(dataset, "dataset"), "accel_dataloader_create_from_batches");
    auto batches = batches_of(indices, batch_lengths, num_batches);
    accel_dataloader_options o = read_options(opts, "opts", init_dataloader_options);
    accel::DataLoaderOptions core;
    core.batch_size = o.batch_size;
    core.shuffle = o.shuffle != 0;
    core.drop_last = o.drop_last != 0;
    core.num_workers = o.num_workers;
    core.prefetch_factor = o.prefetch_factor;
    auto handle = std::make_unique<accel_dataloader>();
    handle->loader = std::make_unique<accel::DataLoader>(loaded, std::move(batches), core);
    publish(std::move(handle), &result);
  });
}

ACCEL_API void accel_dataloader_free(accel_dataloader* loader) { release(loader); }

ACCEL_API accel_status accel_dataloader_next(accel_dataloader* loader, accel_tensor** inputs, accel_tensor** targets) {
  return guarded([&] {
    auto& inputs_out = out_param(inputs, "inputs");
    auto& targets_out = out_param(targets, "targets");
    accel::DataLoader& core = *deref(loader, "loader").loader;
    const size_t width = core.next_batch_size_in_fields();  // checked before the batch is consumed
    accel::require_arg(width == 0 || width == 2, "accel_dataloader_next: the dataset yields " + std::to_string(width) +
                                                     " tensors per sample, not an (input, target) pair: use "
                                                     "accel_dataloader_next_fields");
    std::optional<accel::Batch> batch = core.next();
    if (!batch) {
      inputs_out = nullptr;
      targets_out = nullptr;
      return;
    }
    accel_tensor* x = nullptr;
    publish_tensor((*batch)[0], &x);
    publish_tensor((*batch)[1], &targets_out);
    inputs_out = x;
  });
}

ACCEL_API accel_status accel_dataloader_num_batches(const accel_dataloader* loader, int64_t* out) {
  return guarded([&] { out_param(out, "out") = deref(loader, "loader").loader->num_batches(); });
}

ACCEL_API accel_status accel_dataloader_next_fields(accel_dataloader* loader, accel_tensor** fields, int capacity,
                                                    int* count) {
  return guarded([&] {
    auto& count_out = out_param(count, "count");
    accel::require_arg(fields != nullptr, "fields is NULL");
    accel::require_arg(capacity > 0, "capacity must be positive, got " + std::to_string(capacity));
    accel::DataLoader& core = *deref(loader, "loader").loader;
    const size_t width = core.next_batch_size_in_fields();  // checked before the batch is consumed
    accel::require_arg(
        width <= static_cast<size_t>(capacity),
        "capacity " + std::to_string(capacity) + " is less than the dataset's " + std::to_string(width) + " fields");
    std::optional<accel::Batch> batch = core.next();
    if (!batch) {
      count_out = 0;
      return;
    }
    for (size_t f = 0; f < batch->size(); ++f) publish_tensor((*batch)[f], &fields[f]);
    count_out = static_cast<int>(batch->size());
  });
}

ACCEL_API accel_status accel_dataloader_skip_first_batches(const accel_dataloader* loader, int64_t num_batches,
                                                           accel_dataloader** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto handle = std::make_unique<accel_dataloader>();
    handle->loader = deref(loader, "loader").loader->skip_first_batches(num_batches);
    publish(std::move(handle), &result);
  });
}

ACCEL_API accel_status accel_dataloader_set_epoch(accel_dataloader* loader, uint64_t epoch) {
  return guarded([&] { deref(loader, "loader").loader->set_epoch(epoch); });
}

ACCEL_API accel_status accel_dataloader_epoch(const accel_dataloader* loader, uint64_t* out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    result = deref(loader, "loader").loader->epoch();
  });
}

ACCEL_API accel_status accel_dataloader_open_index(const accel_dataloader* loader, int64_t* out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    result = deref(loader, "loader").loader->open_index();
  });
}

ACCEL_API accel_status accel_dataloader_set_batches(accel_dataloader* loader, const int64_t* indices,
                                                    const int64_t* batch_lengths, int64_t num_batches) {
  return guarded([&] {
    auto& target = *deref(loader, "loader").loader;
    target.set_batches(batches_of(indices, batch_lengths, num_batches));
  });
}

ACCEL_API accel_status accel_dataloader_set_progress(accel_dataloader* loader, const char* description) {
  return guarded([&] {
    auto& target = *deref(loader, "loader").loader;
    target.set_progress(description ? std::optional<std::string>(description) : std::nullopt);
  });
}

}  // extern "C"
