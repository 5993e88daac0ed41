/* Datasets, token sequences and dataloaders: accel_data.h.
 * Part of accel_core.i, which declares the handles and includes this file. */

%newobject AccelDataset::from_tensors;
%newobject AccelDataset::from_idx;
%newobject AccelDataset::from_csv;
%newobject AccelDataset::from_safetensors;
%newobject AccelDataset::from_source;
%newobject AccelDataset::from_stream;
%newobject AccelDataset::from_sequences;
%newobject AccelDataset::from_sequences_collate;
%extend AccelDataset {
  static AccelDataset* from_tensors(const AccelTensor* inputs, const AccelTensor* targets) {
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_tensors(inputs, targets, &out));
    return out;
  }
  static AccelDataset* from_idx(const std::string& images_path, const std::string& labels_path, double mean = 0.0,
                                double std = 1.0) {
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_idx(images_path.c_str(), labels_path.c_str(), mean, std, &out));
    return out;
  }
  static AccelDataset* from_csv(const std::string& path, const std::string& label_column,
                                accel_dtype label_dtype = ACCEL_INT64) {
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_csv(path.c_str(), label_column.c_str(), label_dtype, &out));
    return out;
  }
  /* Every *.safetensors file of directory, concatenated in file-name order;
     each name in fields becomes one field of a sample. */
  static AccelDataset* from_safetensors(const std::string& directory, const std::vector<std::string>& fields) {
    std::vector<const char*> names;
    for (const std::string& name : fields) names.push_back(name.c_str());
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_safetensors(directory.c_str(), names.data(), static_cast<int>(names.size()), &out));
    return out;
  }
  /* A map-style dataset of length samples read from source, which the dataset
     owns from now on (the language adapters hand it over). */
  static AccelDataset* from_source(DatasetSource* source, int64_t length, const std::vector<FieldSpec>& fields) {
    std::vector<accel_field_spec> specs;
    for (const FieldSpec& f : fields) specs.push_back({f.dtype, static_cast<int>(f.shape.size()), f.shape.data()});
    accel_dataset_callbacks callbacks;
    accel_dataset_callbacks_init(&callbacks);
    callbacks.length = accel_bridge::map_length;
    callbacks.get_sample = accel_bridge::map_get_sample;
    callbacks.release = accel_bridge::map_release;
    auto* context = new accel_bridge::MapContext{source, length, static_cast<int>(fields.size())};
    accel_dataset* out = 0;
    accel_status status = accel_dataset_from_callbacks(specs.data(), static_cast<int>(specs.size()), &callbacks,
                                                       context, &out);
    if (status != ACCEL_OK) delete context;  /* the source stays the caller's */
    accel_check(status);
    return out;
  }
  static AccelDataset* from_stream(StreamSource* source, const std::vector<FieldSpec>& fields) {
    std::vector<accel_field_spec> specs;
    for (const FieldSpec& f : fields) specs.push_back({f.dtype, static_cast<int>(f.shape.size()), f.shape.data()});
    accel_stream_callbacks callbacks;
    accel_stream_callbacks_init(&callbacks);
    callbacks.next_sample = accel_bridge::stream_next;
    callbacks.reset = accel_bridge::stream_reset;
    callbacks.release = accel_bridge::stream_release;
    auto* context = new accel_bridge::StreamContext{source, static_cast<int>(fields.size())};
    accel_dataset* out = 0;
    accel_status status = accel_dataset_from_stream(specs.data(), static_cast<int>(specs.size()), &callbacks,
                                                    context, &out);
    if (status != ACCEL_OK) delete context;
    accel_check(status);
    return out;
  }
  /* Batches padded to their longest sequence (input_ids, attention_mask, labels). */
  static AccelDataset* from_sequences(const AccelSequences* sequences, const accel_padding_options* options = 0) {
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_sequences(sequences, options, &out));
    return out;
  }
  /* Batches made by collator, which the dataset owns from now on (the language
     adapters hand it over), with these field names. */
  static AccelDataset* from_sequences_collate(const AccelSequences* sequences, const std::vector<std::string>& names,
                                              Collator* collator) {
    std::vector<const char*> pointers;
    for (const std::string& name : names) pointers.push_back(name.c_str());
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_sequences_collate(sequences, pointers.data(), static_cast<int>(pointers.size()),
                                                     accel_bridge::collate_call, collator,
                                                     accel_bridge::collate_release, &out));
    return out;
  }
  ~AccelDataset() { accel_dataset_free($self); }
  int64_t size() const {
    int64_t n = 0;
    accel_check(accel_dataset_size($self, &n));
    return n;
  }
  bool is_iterable() const {
    int v = 0;
    accel_check(accel_dataset_is_iterable($self, &v));
    return v != 0;
  }
}

/* Token sequences (accel_data.h: accel_sequences_*). */
%newobject AccelSequences::from_arrays;
%newobject AccelSequences::from_jsonl;
%newobject AccelSequences::from_text;
%newobject AccelSequences::from_text_vocab;
%newobject AccelSequences::from_safetensors;
%newobject AccelSequences::ids;
%newobject AccelSequences::labels;
%extend AccelSequences {
  static AccelSequences* from_arrays(const std::vector<int64_t>& ids, const std::vector<int64_t>& offsets,
                                     const std::vector<int64_t>& labels, int64_t vocab_size = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_arrays(ids.data(), ids.size(), offsets.data(), offsets.size(),
                                            labels.empty() ? 0 : labels.data(), labels.size(), vocab_size, &out));
    return out;
  }
  static AccelSequences* from_jsonl(const std::string& path, const std::string& ids_key = "input_ids",
                                    const std::string& labels_key = "", int64_t vocab_size = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_jsonl(path.c_str(), ids_key.c_str(), labels_key.c_str(), vocab_size, &out));
    return out;
  }
  static AccelSequences* from_text(const std::string& path, accel_text_split rule = ACCEL_TEXT_LINES,
                                   const std::string& separator = "%", int64_t chunk_length = 128,
                                   int64_t stride = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_text(path.c_str(), rule, separator.c_str(), chunk_length, stride, &out));
    return out;
  }
  static AccelSequences* from_text_vocab(const std::string& path, const std::string& vocab_path,
                                         accel_text_split rule = ACCEL_TEXT_LINES, const std::string& separator = "%",
                                         int64_t chunk_length = 128, int64_t stride = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_text_vocab(path.c_str(), vocab_path.c_str(), rule, separator.c_str(),
                                                chunk_length, stride, &out));
    return out;
  }
  static AccelSequences* from_safetensors(const std::string& path, const std::string& ids_name = "input_ids",
                                          const std::string& offsets_name = "offsets",
                                          const std::string& labels_name = "", int64_t vocab_size = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_safetensors(path.c_str(), ids_name.c_str(), offsets_name.c_str(),
                                                 labels_name.c_str(), vocab_size, &out));
    return out;
  }
  ~AccelSequences() { accel_sequences_free($self); }
  int64_t size() const {
    int64_t n = 0;
    accel_check(accel_sequences_count($self, &n));
    return n;
  }
  int64_t length(int64_t index) const {
    int64_t n = 0;
    accel_check(accel_sequences_length($self, index, &n));
    return n;
  }
  /* Sequence index's ids, int64 [length]. */
  AccelTensor* ids(int64_t index) const {
    accel_tensor *ids = 0, *labels = 0;
    accel_check(accel_sequences_get($self, index, &ids, &labels));
    accel_tensor_free(labels);
    return ids;
  }
  /* Its labels, or null when the sequences have none. */
  AccelTensor* labels(int64_t index) const {
    accel_tensor *ids = 0, *labels = 0;
    accel_check(accel_sequences_get($self, index, &ids, &labels));
    accel_tensor_free(ids);
    return labels;
  }
}

%newobject AccelDataLoader::next_batch;
%newobject AccelDataLoader::skip_first_batches;
%extend AccelDataLoader {
  AccelDataLoader(AccelDataset* dataset, const accel_dataloader_options* options = 0) {
    accel_dataloader* out = 0;
    accel_check(accel_dataloader_create(dataset, options, &out));
    return out;
  }
  /* length_grouped true: length-grouped batches over a sequence dataset
     (accel_dataloader_create_length_grouped). */
  AccelDataLoader(AccelDataset* dataset, const accel_dataloader_options* options, bool length_grouped) {
    accel_dataloader* out = 0;
    accel_check(length_grouped ? accel_dataloader_create_length_grouped(dataset, options, &out)
                               : accel_dataloader_create(dataset, options, &out));
    return out;
  }
  /* A loader over a user's batch sampler: batch b holds lengths[b] indices,
     taken in order from indices (accel_dataloader_create_from_batches). */
  AccelDataLoader(AccelDataset* dataset, const std::vector<int64_t>& indices, const std::vector<int64_t>& lengths,
                  const accel_dataloader_options* options) {
    check_batch_layout(indices, lengths);
    accel_dataloader* out = 0;
    accel_check(accel_dataloader_create_from_batches(dataset, indices.data(), lengths.data(),
                                                     (int64_t)lengths.size(), options, &out));
    return out;
  }
  ~AccelDataLoader() { accel_dataloader_free($self); }
  /* The next batch, or null at the end of the epoch (the call after starts the next). */
  AccelBatch* next_batch() {
    accel_tensor* fields[16] = {0};
    int count = 0;
    accel_check(accel_dataloader_next_fields($self, fields, 16, &count));
    if (count == 0) return 0;
    AccelBatch* batch = new AccelBatch;
    batch->tensors.assign(fields, fields + count);
    return batch;
  }
  int64_t num_batches() const {
    int64_t n = 0;
    accel_check(accel_dataloader_num_batches($self, &n));
    return n;
  }
  AccelDataLoader* skip_first_batches(int64_t num_batches) const {
    accel_dataloader* out = 0;
    accel_check(accel_dataloader_skip_first_batches($self, num_batches, &out));
    return out;
  }
  void set_epoch(uint64_t epoch) { accel_check(accel_dataloader_set_epoch($self, epoch)); }
  /* The epoch being iterated, or the next one between epochs (accel_dataloader_epoch). */
  uint64_t epoch() const {
    uint64_t out = 0;
    accel_check(accel_dataloader_epoch($self, &out));
    return out;
  }
  /* This loader's place among its accelerator's loaders in an epoch, in the
     order they opened; -1 between epochs (accel_dataloader_open_index). */
  int64_t open_index() const {
    int64_t out = 0;
    accel_check(accel_dataloader_open_index($self, &out));
    return out;
  }
  /* New batch sampler batches from the next epoch on, laid out as in the
     constructor (accel_dataloader_set_batches). */
  void set_batches(const std::vector<int64_t>& indices, const std::vector<int64_t>& lengths) {
    check_batch_layout(indices, lengths);
    accel_check(accel_dataloader_set_batches($self, indices.data(), lengths.data(), (int64_t)lengths.size()));
  }
  /* A progress bar per epoch on rank 0 (accel_dataloader_set_progress): "" labels it
     "epoch N"; None/null turns it off. */
  void set_progress(const char* description = "") { accel_check(accel_dataloader_set_progress($self, description)); }
  /* Turns the bar off (set_progress(NULL)), for languages whose strings cannot be null. */
  void hide_progress() { accel_check(accel_dataloader_set_progress($self, 0)); }
  /* The names of the batch's fields (empty when they are positional). */
  std::vector<std::string> field_names() const {
    const char* names[64];
    int count = 0;
    accel_check(accel_dataloader_field_names($self, names, 64, &count));
    return std::vector<std::string>(names, names + count);
  }
}
