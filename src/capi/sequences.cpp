// C ABI of variable-length token sequences: loading, padding and caller
// collate functions, length-grouped loaders and the loader's field names.
#include <ATen/ATen.h>

#include "capi/handles.hpp"

using namespace accel::capi;

namespace {

void init_padding_options(accel_padding_options* opts) { *opts = accel_padding_options ACCEL_PADDING_OPTIONS_INIT; }

void init_loader_options(accel_dataloader_options* opts) {
  *opts = accel_dataloader_options ACCEL_DATALOADER_OPTIONS_INIT;
}

std::string optional_string(const char* text, const char* fallback) { return text != nullptr ? text : fallback; }

void publish_sequences(accel::TokenSequences sequences, accel_sequences** out) {
  auto handle = std::make_unique<accel_sequences>();
  handle->sequences = std::make_shared<const accel::TokenSequences>(std::move(sequences));
  publish(std::move(handle), out);
}

at::Tensor copy_array(const int64_t* data, size_t count) {
  return at::from_blob(const_cast<int64_t*>(data), {static_cast<int64_t>(count)}, at::kLong).clone();
}

// Borrowed tensor handles registered for the length of one collate call, so
// the callback may pass them to accel_tensor_* functions.
class BorrowedTensors {
 public:
  explicit BorrowedTensors(size_t count) : tensors_(count), pointers_(count) {
    for (size_t i = 0; i < count; ++i) pointers_[i] = &tensors_[i];
  }
  ~BorrowedTensors() {
    for (auto& t : tensors_) unregister_handle(&t, HandleKind::Tensor);
  }
  void set(size_t i, at::Tensor tensor) {
    tensors_[i].tensor = std::move(tensor);
    register_handle(&tensors_[i], HandleKind::Tensor);
  }
  const accel_tensor* const* data() const { return pointers_.data(); }
  bool holds(const accel_tensor* t) const {
    return !tensors_.empty() && t >= tensors_.data() && t < tensors_.data() + tensors_.size();
  }

 private:
  std::vector<accel_tensor> tensors_;
  std::vector<const accel_tensor*> pointers_;
};

// Takes every handle a collate callback wrote, valid or not, so none leaks;
// a borrowed input handle written back is refused, never freed.
accel::Batch take_fields(std::vector<accel_tensor*>& written, const std::vector<std::string>& names,
                         const BorrowedTensors& ids, const BorrowedTensors& labels) {
  accel::Batch batch(written.size());
  std::string problem;
  for (size_t f = 0; f < written.size(); ++f) {
    const std::string field = "collate: field '" + names[f] + "' ";
    if (written[f] != nullptr && (ids.holds(written[f]) || labels.holds(written[f]))) {
      written[f] = nullptr;
      if (problem.empty()) problem = field + "is a borrowed input tensor (write a new handle)";
      continue;
    }
    if (written[f] == nullptr) {
      if (problem.empty()) problem = field + "was not written";
      continue;
    }
    bool live = is_live(written[f], HandleKind::Tensor);
    if (live) batch[f] = written[f]->tensor;
    release(written[f]);
    written[f] = nullptr;
    if (!live && problem.empty()) problem = field + "is not a live accel_tensor";
  }
  accel::require_arg(problem.empty(), problem);
  return batch;
}

accel::CollateFn c_collate(accel_collate_fn fn, std::shared_ptr<void> user, std::vector<std::string> names) {
  return [fn, user, names](const std::vector<accel::SequenceSample>& samples) {
    const size_t n = samples.size();
    const bool has_labels = n > 0 && samples[0].labels.defined();
    BorrowedTensors ids(n), labels(has_labels ? n : 0);
    for (size_t s = 0; s < n; ++s) {
      ids.set(s, samples[s].input_ids);
      if (has_labels) labels.set(s, samples[s].labels);
    }
    std::vector<accel_tensor*> written(names.size(), nullptr);
    accel_set_error("");
    accel_status status =
        fn(user.get(), ids.data(), has_labels ? labels.data() : nullptr, n, written.data(), written.size());
    if (status != ACCEL_OK) {
      std::string message = accel_last_error();
      for (accel_tensor*& t : written) {
        if (!ids.holds(t) && !labels.holds(t)) release(t);
      }
      accel_set_error(message.c_str());
      check_callback(status, "collate callback for a batch of " + std::to_string(n) + " samples");
    }
    return take_fields(written, names, ids, labels);
  };
}

std::shared_ptr<const accel::TokenSequences> sequences_of(const accel_sequences* handle) {
  return deref(handle, "sequences").sequences;
}

}  // namespace

extern "C" {

ACCEL_API accel_status accel_sequences_from_arrays(const int64_t* ids, size_t num_ids, const int64_t* offsets,
                                                   size_t num_offsets, const int64_t* labels, size_t num_labels,
                                                   int64_t vocab_size, accel_sequences** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(ids != nullptr || num_ids == 0, "ids is NULL with num_ids = " + std::to_string(num_ids));
    accel::require_arg(offsets != nullptr, "offsets is NULL");
    accel::require_arg(labels != nullptr || num_labels == 0,
                       "labels is NULL with num_labels = " + std::to_string(num_labels));
    at::Tensor label_tensor = labels != nullptr ? copy_array(labels, num_labels) : at::Tensor();
    publish_sequences(accel::make_token_sequences(copy_array(ids, num_ids), copy_array(offsets, num_offsets),
                                                  label_tensor, vocab_size),
                      &result);
  });
}

ACCEL_API accel_status accel_sequences_from_jsonl(const char* path, const char* ids_key, const char* labels_key,
                                                  int64_t vocab_size, accel_sequences** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(path != nullptr, "path is NULL");
    publish_sequences(
        accel::load_jsonl_sequences(path, optional_string(ids_key, ""), optional_string(labels_key, ""), vocab_size),
        &result);
  });
}

// The split rule both text readers take, checked (the rule names the bad value).
static accel::TextSplit text_split(const accel_text_split& rule, const char* separator, int64_t chunk_length,
                                   int64_t stride) {
  const int raw = enum_value(rule);
  accel::require_arg(raw >= ACCEL_TEXT_LINES && raw <= ACCEL_TEXT_CHUNKS,
                     "rule " + std::to_string(raw) + " is not an accel_text_split");
  accel::TextSplit split;
  split.rule = static_cast<accel::TextSplit::Rule>(raw);
  split.separator = optional_string(separator, "%");
  split.chunk_length = chunk_length;
  split.stride = stride;
  return split;
}

ACCEL_API accel_status accel_sequences_from_text(const char* path, accel_text_split rule, const char* separator,
                                                 int64_t chunk_length, int64_t stride, accel_sequences** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(path != nullptr, "path is NULL");
    publish_sequences(accel::load_text_sequences(path, text_split(rule, separator, chunk_length, stride)), &result);
  });
}

ACCEL_API accel_status accel_sequences_from_text_vocab(const char* path, const char* vocab_path, accel_text_split rule,
                                                       const char* separator, int64_t chunk_length, int64_t stride,
                                                       accel_sequences** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(path != nullptr, "path is NULL");
    accel::require_arg(vocab_path != nullptr, "vocab_path is NULL");
    publish_sequences(
        accel::load_vocab_text_sequences(path, vocab_path, text_split(rule, separator, chunk_length, stride)), &result);
  });
}

ACCEL_API accel_status accel_sequences_from_safetensors(const char* path, const char* ids_name,
                                                        const char* offsets_name, const char* labels_name,
                                                        int64_t vocab_size, accel_sequences** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(path != nullptr, "path is NULL");
    publish_sequences(accel::load_safetensors_sequences(path, optional_string(ids_name, "input_ids"),
                                                        optional_string(offsets_name, "offsets"),
                                                        optional_string(labels_name, ""), vocab_size),
                      &result);
  });
}

ACCEL_API accel_status accel_sequences_count(const accel_sequences* sequences, int64_t* out) {
  return guarded([&] { out_param(out, "out") = sequences_of(sequences)->size(); });
}

ACCEL_API accel_status accel_sequences_length(const accel_sequences* sequences, int64_t index, int64_t* out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    result = sequences_of(sequences)->length(index);
  });
}

ACCEL_API accel_status accel_sequences_get(const accel_sequences* sequences, int64_t index, accel_tensor** ids,
                                           accel_tensor** labels) {
  return guarded([&] {
    auto& ids_out = out_param(ids, "ids");
    const accel::TokenSequences& seqs = *sequences_of(sequences);
    const int64_t length = seqs.length(index);  // checks index
    const bool has_labels = seqs.label_kind != accel::LabelKind::None;
    accel::require_arg(labels != nullptr || !has_labels, "out-parameter labels is NULL, but the sequences have labels");
    const int64_t begin = seqs.offsets[index].item<int64_t>();
    at::Tensor label = seqs.label_kind == accel::LabelKind::PerSample ? seqs.labels[index].clone()
                       : has_labels                                   ? seqs.labels.narrow(0, begin, length).clone()
                                                                      : at::Tensor();
    accel_tensor* first = nullptr;
    publish_tensor(seqs.ids.narrow(0, begin, length).clone(), &first);
    if (labels != nullptr) {
      if (has_labels) {
        try {
          publish_tensor(label, labels);
        } catch (...) {
          accel_tensor_free(first);
          throw;
        }
      } else {
        *labels = nullptr;
      }
    }
    ids_out = first;
  });
}

ACCEL_API void accel_sequences_free(accel_sequences* sequences) { release(sequences); }

ACCEL_API void accel_padding_options_init(accel_padding_options* opts) {
  if (opts != nullptr) init_padding_options(opts);
}

ACCEL_API accel_status accel_dataset_from_sequences(const accel_sequences* sequences, const accel_padding_options* opts,
                                                    accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto seqs = sequences_of(sequences);
    accel_padding_options o = read_options(opts, "opts", init_padding_options);
    accel::PaddingOptions core;
    core.pad_id = o.pad_id;
    core.pad_to_multiple_of = o.pad_to_multiple_of;
    core.max_length = o.max_length;
    core.truncate = o.truncate != 0;
    core.causal_lm_labels = o.causal_lm_labels != 0;
    auto dataset = std::make_shared<accel::SequenceDataset>(*seqs, core);
    publish(std::make_unique<accel_dataset>(accel_dataset{dataset, nullptr}), &result);
  });
}

ACCEL_API accel_status accel_dataset_from_sequences_collate(const accel_sequences* sequences,
                                                            const char* const* field_names, int num_fields,
                                                            accel_collate_fn collate, void* user,
                                                            void (*release_user)(void* user), accel_dataset** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto seqs = sequences_of(sequences);
    accel::require_arg(collate != nullptr, "collate is NULL");
    accel::require_arg(field_names != nullptr && num_fields > 0,
                       "field_names: need at least one name, got num_fields = " + std::to_string(num_fields));
    std::vector<std::string> names;
    for (int f = 0; f < num_fields; ++f) {
      accel::require_arg(field_names[f] != nullptr, "field_names[" + std::to_string(f) + "] is NULL");
      names.emplace_back(field_names[f]);
    }
    UserHold hold(user, release_user);
    auto dataset = std::make_shared<accel::SequenceDataset>(*seqs, names, c_collate(collate, hold.get(), names));
    publish(std::make_unique<accel_dataset>(accel_dataset{dataset, nullptr}), &result);
    hold.arm();
  });
}

ACCEL_API accel_status accel_dataloader_create_length_grouped(accel_dataset* dataset,
                                                              const accel_dataloader_options* opts,
                                                              accel_dataloader** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    auto& ds = deref(dataset, "dataset");
    auto sequences = std::dynamic_pointer_cast<accel::SequenceDataset>(ds.dataset);
    accel::require_arg(sequences != nullptr,
                       "accel_dataloader_create_length_grouped: the dataset is not a sequence dataset "
                       "(accel_dataset_from_sequences or accel_dataset_from_sequences_collate)");
    accel_dataloader_options o = read_options(opts, "opts", init_loader_options);
    accel::require_arg(o.shuffle == 0,
                       "accel_dataloader_create_length_grouped: shuffle must be 0 (the grouping "
                       "shuffles with seed)");
    accel::DataLoaderOptions core;
    core.batch_size = o.batch_size;
    core.drop_last = o.drop_last != 0;
    core.num_workers = o.num_workers;
    core.prefetch_factor = o.prefetch_factor;
    // Regrouped each epoch, as the sampler's generator draws a new permutation.
    accel::DataLoader::BatchesForEpoch batches = [lengths = sequences->sequences().lengths(), batch_size = o.batch_size,
                                                  seed = o.seed, drop_last = core.drop_last](uint64_t epoch) {
      return accel::length_grouped_batches(lengths, batch_size, seed, drop_last, epoch);
    };
    auto handle = std::make_unique<accel_dataloader>();
    handle->loader = std::make_unique<accel::DataLoader>(ds.dataset, std::move(batches), core);
    publish(std::move(handle), &result);
  });
}

ACCEL_API accel_status accel_dataloader_field_names(const accel_dataloader* loader, const char** names, int capacity,
                                                    int* count) {
  return guarded([&] {
    auto& count_out = out_param(count, "count");
    auto& handle = const_cast<accel_dataloader&>(deref(loader, "loader"));
    accel::require_arg(names != nullptr || capacity == 0, "names is NULL with capacity " + std::to_string(capacity));
    if (!handle.field_names_read) {
      handle.field_names = handle.loader->field_names();
      handle.field_names_read = true;
    }
    const auto n = static_cast<int>(handle.field_names.size());
    accel::require_arg(n <= capacity, "capacity " + std::to_string(capacity) + " is less than the loader's " +
                                          std::to_string(n) + " field names");
    for (int f = 0; f < n; ++f) names[f] = handle.field_names[static_cast<size_t>(f)].c_str();
    count_out = n;
  });
}

}  // extern "C"
