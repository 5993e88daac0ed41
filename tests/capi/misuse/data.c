/* Misuse cases of datasets, dataloaders and token sequences (accel_data.h). */
#include "misuse.h"

void misuse_datasets(void) {
  const char* names[2] = {"x", NULL};
  int64_t zero_shape[1] = {0}, negative_shape[1] = {-3}, ok_shape[1] = {2};
  accel_field_spec field = {ACCEL_FLOAT32, 1, ok_shape};
  accel_dataset_callbacks cb;
  accel_stream_callbacks sc;
  accel_dataloader_options lo;
  accel_tensor* batch[2];
  accel_dataset_callbacks_init(NULL);
  accel_stream_callbacks_init(NULL);
  accel_dataloader_options_init(NULL);

  EACH_BAD(K_TENSOR, accel_tensor, t) {
    ARG(accel_dataset_from_tensors(t, ty, &ds_out));
    ARG(accel_dataset_from_tensors(tx, t, &ds_out));
  }
  ARG(accel_dataset_from_tensors(tx, ty, NULL));
  ARG(accel_dataset_from_tensors(scalar, ty, &ds_out)); /* no dim 0 */
  ARG(accel_dataset_from_tensors(tx, scalar, &ds_out));
  ARG(accel_dataset_from_idx(NULL, "labels", 0.0, 1.0, &ds_out));
  ARG(accel_dataset_from_idx("images", NULL, 0.0, 1.0, &ds_out));
  ARG(accel_dataset_from_idx("images", "labels", 0.0, 1.0, NULL));
  IO(accel_dataset_from_idx("/nonexistent/images", "/nonexistent/labels", 0.0, 1.0, &ds_out));
  ARG(accel_dataset_from_csv(NULL, "label", ACCEL_INT64, &ds_out));
  ARG(accel_dataset_from_csv("x.csv", NULL, ACCEL_INT64, &ds_out));
  ARG(accel_dataset_from_csv("x.csv", "label", ACCEL_INT64, NULL));
  ARG(accel_dataset_from_csv("x.csv", "label", BAD_ENUM(accel_dtype), &ds_out));
  ARG(accel_dataset_from_csv("x.csv", "label", NEG_ENUM(accel_dtype), &ds_out));
  IO(accel_dataset_from_csv("/nonexistent/x.csv", "label", ACCEL_INT64, &ds_out));
  ARG(accel_dataset_from_safetensors(NULL, names, 1, &ds_out));
  ARG(accel_dataset_from_safetensors(misuse_dir, NULL, 1, &ds_out));
  ARG(accel_dataset_from_safetensors(misuse_dir, names, 0, &ds_out));
  ARG(accel_dataset_from_safetensors(misuse_dir, names, -1, &ds_out));
  ARG(accel_dataset_from_safetensors(misuse_dir, names, 2, &ds_out)); /* names[1] is NULL */
  ARG(accel_dataset_from_safetensors(misuse_dir, names, 1, NULL));
  IO(accel_dataset_from_safetensors("/nonexistent", names, 1, &ds_out));

  accel_dataset_callbacks_init(&cb);
  cb.length = never_length;
  cb.get_sample = never_sample;
  ARG(accel_dataset_from_callbacks(&field, 1, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_callbacks(NULL, 1, &cb, NULL, &ds_out));
  ARG(accel_dataset_from_callbacks(&field, 0, &cb, NULL, &ds_out));
  ARG(accel_dataset_from_callbacks(&field, -1, &cb, NULL, &ds_out));
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, NULL));
  field.dtype = BAD_ENUM(accel_dtype);
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.dtype = NEG_ENUM(accel_dtype);
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.dtype = ACCEL_FLOAT32;
  field.ndim = -1;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.ndim = 1000;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.ndim = 1;
  field.shape = NULL;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.shape = zero_shape;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.shape = negative_shape;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.shape = ok_shape;
  cb.struct_size = 0;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  accel_dataset_callbacks_init(&cb);
  cb.get_sample = never_sample;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out)); /* no length */
  accel_dataset_callbacks_init(&cb);
  cb.length = never_length;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out)); /* no get_sample */

  accel_stream_callbacks_init(&sc);
  ARG(accel_dataset_from_stream(&field, 1, &sc, NULL, &ds_out)); /* no next_sample */
  sc.next_sample = never_next;
  ARG(accel_dataset_from_stream(&field, 1, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_stream(NULL, 1, &sc, NULL, &ds_out));
  ARG(accel_dataset_from_stream(&field, 0, &sc, NULL, &ds_out));
  ARG(accel_dataset_from_stream(&field, 1, &sc, NULL, NULL));
  field.shape = negative_shape;
  ARG(accel_dataset_from_stream(&field, 1, &sc, NULL, &ds_out));
  field.shape = ok_shape;
  sc.struct_size = UINT32_MAX;
  ARG(accel_dataset_from_stream(&field, 1, &sc, NULL, &ds_out));

  EACH_BAD(K_DATASET, accel_dataset, d) {
    ARG(accel_dataset_size(d, &i64_out));
    ARG(accel_dataset_is_iterable(d, &i_out));
    ARG(accel_dataloader_create(d, NULL, &dl_out));
    accel_dataset_free(d); /* ignored */
  }
  ARG(accel_dataset_size(ds, NULL));
  ARG(accel_dataset_is_iterable(ds, NULL));
  ARG(accel_dataloader_create(ds, NULL, NULL));
#define BAD_OPTION(field_name, value)               \
  do {                                              \
    accel_dataloader_options_init(&lo);             \
    lo.field_name = value;                          \
    ARG(accel_dataloader_create(ds, &lo, &dl_out)); \
  } while (0)
  BAD_OPTION(struct_size, 0);
  BAD_OPTION(struct_size, UINT32_MAX);
  BAD_OPTION(batch_size, 0);
  BAD_OPTION(batch_size, -1);
  BAD_OPTION(batch_size, INT64_MIN);
  BAD_OPTION(num_workers, -1);
  BAD_OPTION(num_workers, 257);
  BAD_OPTION(num_workers, 1000000);
  BAD_OPTION(num_workers, INT32_MAX);
  BAD_OPTION(prefetch_factor, 0);
  BAD_OPTION(prefetch_factor, -1);
#undef BAD_OPTION
  accel_dataloader_options_init(&lo);
  lo.num_workers = 1000000;
  EXPECT_ERROR(accel_dataloader_create(ds, &lo, &dl_out), ACCEL_ERR_INVALID_ARGUMENT, "1000000");
  {
    const int64_t idx[3] = {0, 1, 1000000}, lens[2] = {2, 1}, zero_len[2] = {2, 0}, neg_len[1] = {-3};
    EACH_BAD(K_DATASET, accel_dataset, d) { ARG(accel_dataloader_create_from_batches(d, idx, lens, 1, NULL, &dl_out)); }
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, 1, NULL, NULL));
    ARG(accel_dataloader_create_from_batches(ds, NULL, lens, 1, NULL, &dl_out));
    ARG(accel_dataloader_create_from_batches(ds, idx, NULL, 1, NULL, &dl_out));
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, -1, NULL, &dl_out));
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, INT64_MIN, NULL, &dl_out));
    ARG(accel_dataloader_create_from_batches(ds, idx, zero_len, 2, NULL, &dl_out));
    EXPECT_ERROR(accel_dataloader_create_from_batches(ds, idx, neg_len, 1, NULL, &dl_out), ACCEL_ERR_INVALID_ARGUMENT,
                 "-3");
    EXPECT_ERROR(accel_dataloader_create_from_batches(ds, idx, lens, 2, NULL, &dl_out), ACCEL_ERR_INVALID_ARGUMENT,
                 "1000000"); /* index outside the dataset */
    accel_dataloader_options_init(&lo);
    lo.shuffle = 1;
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, 1, &lo, &dl_out));
    accel_dataloader_options_init(&lo);
    lo.batch_size = -1;
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, 1, &lo, &dl_out));
    lo.batch_size = 1;
    lo.struct_size = UINT32_MAX;
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, 1, &lo, &dl_out));
  }

  EACH_BAD(K_LOADER, accel_dataloader, l) {
    ARG(accel_dataloader_next(l, &t_out, &t_out2));
    ARG(accel_dataloader_next_fields(l, batch, 2, &i_out));
    ARG(accel_dataloader_num_batches(l, &i64_out));
    ARG(accel_dataloader_skip_first_batches(l, 0, &dl_out));
    ARG(accel_dataloader_set_epoch(l, 0));
    ARG(accel_dataloader_set_progress(l, "epoch"));
    {
      const int64_t one_index[1] = {0}, one_length[1] = {1};
      uint64_t epoch = 0;
      ARG(accel_dataloader_epoch(l, &epoch));
      ARG(accel_dataloader_open_index(l, &i64_out));
      ARG(accel_dataloader_set_batches(l, one_index, one_length, 1));
    }
    accel_dataloader_free(l); /* ignored */
  }
  {
    /* set_batches: a plain loader has no batch sampler to replace; bad arrays
       and a started epoch are refused with the batches left as they were. */
    const int64_t idx[3] = {0, 1, 1000000}, lens[2] = {2, 1}, zero_len[2] = {2, 0};
    accel_dataloader* sampled = NULL;
    uint64_t epoch = 99;
    EXPECT_ERROR(accel_dataloader_set_batches(dl, idx, lens, 1), ACCEL_ERR_STATE, "not made from a batch sampler");
    ARG(accel_dataloader_epoch(dl, NULL));
    ARG(accel_dataloader_open_index(dl, NULL));
    EXPECT_OK(accel_dataloader_epoch(dl, &epoch));
    EXPECT(epoch == 0);
    EXPECT_OK(accel_dataloader_create_from_batches(ds, idx, lens, 1, NULL, &sampled));
    ARG(accel_dataloader_set_batches(sampled, NULL, lens, 1));
    ARG(accel_dataloader_set_batches(sampled, idx, NULL, 1));
    ARG(accel_dataloader_set_batches(sampled, idx, lens, -1));
    ARG(accel_dataloader_set_batches(sampled, idx, lens, INT64_MIN));
    ARG(accel_dataloader_set_batches(sampled, idx, zero_len, 2));
    EXPECT_ERROR(accel_dataloader_set_batches(sampled, idx, lens, 2), ACCEL_ERR_INVALID_ARGUMENT, "1000000");
    {
      accel_tensor *x = NULL, *y = NULL;
      int64_t rows = 0;
      EXPECT_OK(accel_dataloader_next(sampled, &x, &y)); /* the first batch: samples 0 and 1 */
      EXPECT(y != NULL && accel_tensor_numel(y, &rows) == ACCEL_OK && rows == 2);
      accel_tensor_free(x);
      accel_tensor_free(y);
    }
    EXPECT_ERROR(accel_dataloader_set_batches(sampled, idx, lens, 1), ACCEL_ERR_STATE, "an epoch is in progress");
    accel_dataloader_free(sampled);
  }
  ARG(accel_dataloader_next(dl, NULL, &t_out2));
  ARG(accel_dataloader_next(dl, &t_out, NULL));
  ARG(accel_dataloader_next_fields(dl, NULL, 2, &i_out));
  ARG(accel_dataloader_next_fields(dl, batch, 2, NULL));
  ARG(accel_dataloader_next_fields(dl, batch, 0, &i_out));
  ARG(accel_dataloader_next_fields(dl, batch, -1, &i_out));
  ARG(accel_dataloader_next_fields(dl, batch, INT32_MIN, &i_out));
  ARG(accel_dataloader_next_fields(dl, batch, 1, &i_out)); /* two fields: nothing consumed */
  ARG(accel_dataloader_num_batches(dl, NULL));
  ARG(accel_dataloader_skip_first_batches(dl, 0, NULL));
  ARG(accel_dataloader_skip_first_batches(dl, -1, &dl_out));
  ARG(accel_dataloader_skip_first_batches(dl, INT64_MIN, &dl_out));
  {
    /* The capacity error consumed nothing: the first batch is still sample 0. */
    accel_tensor *x = NULL, *y = NULL;
    int64_t first = -1;
    EXPECT_OK(accel_dataloader_next(dl, &x, &y));
    EXPECT(y != NULL && accel_tensor_copy_to(y, &first, sizeof first) == ACCEL_OK && first == 0);
    accel_tensor_free(x);
    accel_tensor_free(y);
    EXPECT_OK(accel_dataloader_set_epoch(dl, 0));
    EXPECT_OK(accel_dataloader_set_progress(dl, NULL)); /* off, as it was */
  }
  accel_dataset_free(NULL);
  accel_dataloader_free(NULL);
}

/* Token sequences, padding and collate datasets, length-grouped loaders, field names. */
static accel_status collate_nothing(void* user, const accel_tensor* const* ids, const accel_tensor* const* labels,
                                    size_t n, accel_tensor** fields, size_t num_fields) {
  (void)user;
  (void)ids;
  (void)labels;
  (void)n;
  (void)fields;
  (void)num_fields;
  accel_set_error("collate_nothing refuses");
  return ACCEL_ERR_INVALID_ARGUMENT;
}
void misuse_sequences(void) {
  const int64_t ids[3] = {1, 2, 3}, offsets[3] = {0, 1, 3}, bad_offsets[3] = {0, 2, 1}, neg[1] = {-4};
  const char* names[2] = {"input_ids", NULL};
  const char* got[4];
  accel_sequences *seq = NULL, *freed = NULL, *seq_out = NULL;
  accel_sequences* bad_seqs[4];
  accel_padding_options po;
  accel_dataloader_options lo;
  accel_dataset* padded = NULL;
  int b;
  accel_padding_options_init(NULL);
  accel_padding_options_init(&po);
  EXPECT_OK(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, 0, &seq));
  EXPECT_OK(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, 0, &freed));
  accel_sequences_free(freed);
  bad_seqs[0] = NULL;
  bad_seqs[1] = freed;
  bad_seqs[2] = (accel_sequences*)ds;
  bad_seqs[3] = (accel_sequences*)(void*)garbage;
  for (b = 0; b < 4; ++b) {
    bad_index = b;
    ARG(accel_sequences_count(bad_seqs[b], &i64_out));
    ARG(accel_sequences_length(bad_seqs[b], 0, &i64_out));
    ARG(accel_sequences_get(bad_seqs[b], 0, &t_out, &t_out2));
    ARG(accel_dataset_from_sequences(bad_seqs[b], NULL, &ds_out));
    ARG(accel_dataset_from_sequences_collate(bad_seqs[b], names, 1, collate_nothing, NULL, NULL, &ds_out));
    accel_sequences_free(bad_seqs[b]); /* ignored */
  }
  bad_index = -1;
  seq_out = (accel_sequences*)SENTINEL;
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, 0, NULL));
  ARG(accel_sequences_from_arrays(NULL, 3, offsets, 3, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, NULL, 3, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 2, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, bad_offsets, 3, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 1, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, -1, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, 3, &seq_out)); /* id 3 >= vocab 3 */
  ARG(accel_sequences_from_arrays(neg, 1, offsets, 2, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, ids, 1, 0, &seq_out)); /* labels: neither 2 nor 3 */
  ARG(accel_sequences_from_jsonl(NULL, "input_ids", NULL, 0, &seq_out));
  ARG(accel_sequences_from_jsonl("x.jsonl", "input_ids", NULL, 0, NULL));
  ARG(accel_sequences_from_jsonl("x.jsonl", "input_ids", NULL, -1, &seq_out));
  IO(accel_sequences_from_jsonl("/nonexistent/x.jsonl", "input_ids", NULL, 0, &seq_out));
  ARG(accel_sequences_from_text(NULL, ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text("x.txt", ACCEL_TEXT_LINES, NULL, 0, 0, NULL));
  ARG(accel_sequences_from_text("x.txt", BAD_ENUM(accel_text_split), NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text("x.txt", NEG_ENUM(accel_text_split), NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text("x.txt", ACCEL_TEXT_CHUNKS, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text("x.txt", ACCEL_TEXT_CHUNKS, NULL, 4, -1, &seq_out));
  ARG(accel_sequences_from_text("x.txt", ACCEL_TEXT_SEPARATOR, "", 0, 0, &seq_out));
  IO(accel_sequences_from_text("/nonexistent/x.txt", ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab(NULL, "v.txt", ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", NULL, ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", ACCEL_TEXT_LINES, NULL, 0, 0, NULL));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", BAD_ENUM(accel_text_split), NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", ACCEL_TEXT_CHUNKS, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", ACCEL_TEXT_CHUNKS, NULL, 4, -1, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", ACCEL_TEXT_SEPARATOR, "", 0, 0, &seq_out));
  IO(accel_sequences_from_text_vocab("x.txt", "/nonexistent/v.txt", ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_safetensors(NULL, NULL, NULL, NULL, 0, &seq_out));
  ARG(accel_sequences_from_safetensors("x.safetensors", NULL, NULL, NULL, 0, NULL));
  IO(accel_sequences_from_safetensors("/nonexistent/x.safetensors", NULL, NULL, NULL, 0, &seq_out));
  EXPECT(seq_out == (accel_sequences*)SENTINEL);
  ARG(accel_sequences_count(seq, NULL));
  ARG(accel_sequences_length(seq, 0, NULL));
  ARG(accel_sequences_length(seq, 2, &i64_out));
  ARG(accel_sequences_length(seq, -1, &i64_out));
  ARG(accel_sequences_length(seq, INT64_MIN, &i64_out));
  ARG(accel_sequences_get(seq, 0, NULL, &t_out2));
  ARG(accel_sequences_get(seq, 2, &t_out, &t_out2));
  ARG(accel_sequences_get(seq, -1, &t_out, NULL));
  {
    accel_sequences* labelled = NULL;
    EXPECT_OK(accel_sequences_from_arrays(ids, 3, offsets, 3, ids, 2, 0, &labelled));
    ARG(accel_sequences_get(labelled, 0, &t_out, NULL)); /* labels exist: the out-parameter is required */
    accel_sequences_free(labelled);
  }

  ARG(accel_dataset_from_sequences(seq, NULL, NULL));
  po.pad_id = -1;
  ARG(accel_dataset_from_sequences(seq, &po, &ds_out));
  accel_padding_options_init(&po);
  po.max_length = -2;
  ARG(accel_dataset_from_sequences(seq, &po, &ds_out));
  accel_padding_options_init(&po);
  po.pad_to_multiple_of = INT64_MIN;
  ARG(accel_dataset_from_sequences(seq, &po, &ds_out));
  accel_padding_options_init(&po);
  po.struct_size = UINT32_MAX;
  ARG(accel_dataset_from_sequences(seq, &po, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, names, 1, NULL, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, NULL, 1, collate_nothing, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, names, 0, collate_nothing, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, names, -1, collate_nothing, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, names, 2, collate_nothing, NULL, NULL, &ds_out)); /* NULL name */
  ARG(accel_dataset_from_sequences_collate(seq, names, 1, collate_nothing, NULL, NULL, NULL));
  {
    const char* twice[2] = {"a", "a"};
    const char* empty[1] = {""};
    ARG(accel_dataset_from_sequences_collate(seq, twice, 2, collate_nothing, NULL, NULL, &ds_out));
    ARG(accel_dataset_from_sequences_collate(seq, empty, 1, collate_nothing, NULL, NULL, &ds_out));
  }

  EXPECT_OK(accel_dataset_from_sequences(seq, NULL, &padded));
  accel_dataloader_options_init(&lo);
  EACH_BAD(K_DATASET, accel_dataset, d) { ARG(accel_dataloader_create_length_grouped(d, &lo, &dl_out)); }
  ARG(accel_dataloader_create_length_grouped(ds, &lo, &dl_out)); /* not a sequence dataset */
  ARG(accel_dataloader_create_length_grouped(padded, &lo, NULL));
  lo.shuffle = 1;
  ARG(accel_dataloader_create_length_grouped(padded, &lo, &dl_out));
  lo.shuffle = 0;
  lo.batch_size = 0;
  ARG(accel_dataloader_create_length_grouped(padded, &lo, &dl_out));
  lo.batch_size = 1;
  lo.num_workers = -1;
  ARG(accel_dataloader_create_length_grouped(padded, &lo, &dl_out));
  lo.num_workers = 0;
  lo.struct_size = UINT32_MAX;
  ARG(accel_dataloader_create_length_grouped(padded, &lo, &dl_out));

  EACH_BAD(K_LOADER, accel_dataloader, l) { ARG(accel_dataloader_field_names(l, got, 4, &i_out)); }
  ARG(accel_dataloader_field_names(dl, got, 4, NULL));
  ARG(accel_dataloader_field_names(dl, NULL, 4, &i_out));
  {
    accel_dataloader* named = NULL;
    EXPECT_OK(accel_dataloader_create(padded, NULL, &named));
    ARG(accel_dataloader_field_names(named, got, 2, &i_out)); /* three names */
    ARG(accel_dataloader_field_names(named, got, -1, &i_out));
    EXPECT_OK(accel_dataloader_field_names(dl, NULL, 0, &i_out)); /* positional fields: no names */
    EXPECT(i_out == 0);
    accel_dataloader_free(named);
  }
  accel_dataset_free(padded);
  accel_sequences_free(NULL);
  accel_sequences_free(seq);
}
