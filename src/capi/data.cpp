#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

void init_dataloader_options(accel_dataloader_options* opts) {
  *opts = accel_dataloader_options ACCEL_DATALOADER_OPTIONS_INIT;
}

}  // namespace

extern "C" {

ACCEL_API accel_status accel_dataset_from_tensors(const accel_tensor* inputs, const accel_tensor* targets,
                                                  accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    std::vector<at::Tensor> fields{deref(inputs, "inputs").tensor, deref(targets, "targets").tensor};
    publish(std::make_unique<accel_dataset>(accel_dataset{std::make_shared<accel::TensorDataset>(fields)}), &result);
  });
}

ACCEL_API accel_status accel_dataset_from_idx(const char* images_path, const char* labels_path, double mean,
                                              double std, accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(images_path != nullptr, "images_path is NULL");
    accel::require_arg(labels_path != nullptr, "labels_path is NULL");
    publish(std::make_unique<accel_dataset>(accel_dataset{accel::load_idx_dataset(images_path, labels_path, mean, std)}),
            &result);
  });
}

ACCEL_API accel_status accel_dataset_size(const accel_dataset* dataset, int64_t* out) {
  return guarded([&] { out_param(out, "out") = deref(dataset, "dataset").dataset->size(); });
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
    core.seed = o.seed;
    core.drop_last = o.drop_last != 0;
    auto handle = std::make_unique<accel_dataloader>();
    handle->loader = std::make_unique<accel::DataLoader>(ds.dataset, core);
    publish(std::move(handle), &result);
  });
}

ACCEL_API void accel_dataloader_free(accel_dataloader* loader) { release(loader); }

ACCEL_API accel_status accel_dataloader_next(accel_dataloader* loader, accel_tensor** inputs, accel_tensor** targets) {
  return guarded([&] {
    auto& inputs_out = out_param(inputs, "inputs");
    auto& targets_out = out_param(targets, "targets");
    std::optional<accel::Batch> batch = deref(loader, "loader").loader->next();
    if (!batch) {
      inputs_out = nullptr;
      targets_out = nullptr;
      return;
    }
    accel::require_arg(batch->size() == 2, "accel_dataloader_next: the dataset yields " + std::to_string(batch->size()) +
                                               " tensors per sample, not an (input, target) pair");
    accel_tensor* x = nullptr;
    publish_tensor((*batch)[0], &x);
    publish_tensor((*batch)[1], &targets_out);
    inputs_out = x;
  });
}

ACCEL_API accel_status accel_dataloader_num_batches(const accel_dataloader* loader, int64_t* out) {
  return guarded([&] { out_param(out, "out") = deref(loader, "loader").loader->num_batches(); });
}

ACCEL_API accel_status accel_dataloader_set_epoch(accel_dataloader* loader, uint64_t epoch) {
  return guarded([&] { deref(loader, "loader").loader->set_epoch(epoch); });
}

}  // extern "C"
