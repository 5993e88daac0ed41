/* Token sequences through the C ABI: JSONL and text loading, dynamic padding
   with named fields, a C collate function (and its failures), length-grouped
   loaders. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <stdlib.h>

#include "capi_test.h"

static char dir[64];

static const char* write_file(const char* name, const char* text) {
  static char path[2][128];
  static int next = 0;
  char* p = path[next++ % 2];
  FILE* f;
  snprintf(p, 128, "%s/%s", dir, name);
  f = fopen(p, "wb");
  fputs(text, f);
  fclose(f);
  return p;
}

static int64_t at(const accel_tensor* t, size_t i) {
  int64_t values[64] = {0};
  int64_t n = 0;
  accel_tensor_numel(t, &n);
  if (n > 64 || accel_tensor_copy_to(t, values, (size_t)n * sizeof(int64_t)) != ACCEL_OK) return -999;
  return values[i];
}

static void padded_batches_have_names(void) {
  accel_sequences* seqs = NULL;
  accel_dataset* ds = NULL;
  accel_dataloader* dl = NULL;
  accel_dataloader_options lo = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_padding_options po = ACCEL_PADDING_OPTIONS_INIT;
  accel_tensor* fields[4] = {NULL};
  const char* names[4] = {NULL};
  int count = 0, f;
  int64_t n = 0, len = 0, shape[2] = {0, 0};
  const char* path = write_file("ids.jsonl", "{\"input_ids\": [7, 8, 9]}\n\n{\"input_ids\": [3]}\n");
  EXPECT_OK(accel_sequences_from_jsonl(path, "input_ids", NULL, 10, &seqs));
  EXPECT_OK(accel_sequences_count(seqs, &n));
  EXPECT(n == 2);
  EXPECT_OK(accel_sequences_length(seqs, 1, &len));
  EXPECT(len == 1);
  po.pad_id = 1;
  po.pad_to_multiple_of = 4;
  EXPECT_OK(accel_dataset_from_sequences(seqs, &po, &ds));
  accel_sequences_free(seqs); /* the dataset keeps its own reference */
  lo.batch_size = 2;
  EXPECT_OK(accel_dataloader_create(ds, &lo, &dl));
  EXPECT_OK(accel_dataloader_field_names(dl, names, 4, &count));
  EXPECT(count == 3 && strcmp(names[0], "input_ids") == 0 && strcmp(names[1], "attention_mask") == 0 &&
         strcmp(names[2], "labels") == 0);
  EXPECT_OK(accel_dataloader_next_fields(dl, fields, 4, &count));
  EXPECT(count == 3);
  EXPECT_OK(accel_tensor_shape(fields[0], shape, 2));
  EXPECT(shape[0] == 2 && shape[1] == 4);
  EXPECT(at(fields[0], 3) == 1 && at(fields[0], 4) == 3 && at(fields[0], 5) == 1);
  EXPECT(at(fields[1], 2) == 1 && at(fields[1], 3) == 0 && at(fields[1], 5) == 0);
  EXPECT(at(fields[2], 0) == 7 && at(fields[2], 3) == -100 && at(fields[2], 4) == 3 && at(fields[2], 5) == -100);
  for (f = 0; f < count; ++f) accel_tensor_free(fields[f]);
  EXPECT_OK(accel_dataloader_next_fields(dl, fields, 4, &count));
  EXPECT(count == 0);
  accel_dataloader_free(dl);
  accel_dataset_free(ds);
}

static void bad_files_name_file_line_and_value(void) {
  accel_sequences* seqs = NULL;
  EXPECT_ERROR(accel_sequences_from_jsonl(write_file("f.jsonl", "{\"input_ids\": [1]}\n{\"input_ids\": [1.5]}\n"),
                                          "input_ids", NULL, 0, &seqs),
               ACCEL_ERR_IO, "f.jsonl:2: 'input_ids'[0] = 1.5 is not an integer id");
  EXPECT_ERROR(accel_sequences_from_jsonl(write_file("k.jsonl", "{\"ids\": [1]}\n"), "input_ids", NULL, 0, &seqs),
               ACCEL_ERR_IO, "k.jsonl:1: no key 'input_ids'");
  EXPECT_ERROR(accel_sequences_from_jsonl(write_file("v.jsonl", "[1, 300]\n"), NULL, NULL, 256, &seqs), ACCEL_ERR_IO,
               ":1: ids[1] = 300 is not below the vocab size 256");
  EXPECT_ERROR(accel_sequences_from_jsonl(write_file("n.jsonl", "[-1]\n"), "", NULL, 0, &seqs), ACCEL_ERR_IO,
               "= -1 is negative");
  EXPECT(seqs == NULL);
}

static void text_is_read_as_bytes(void) {
  accel_sequences* seqs = NULL;
  int64_t n = 0, len = 0;
  const char* path = write_file("fortunes", "Be kind.\n%\nTwo\nlines.\n%\n");
  EXPECT_OK(accel_sequences_from_text(path, ACCEL_TEXT_SEPARATOR, "%", 0, 0, &seqs));
  EXPECT_OK(accel_sequences_count(seqs, &n));
  EXPECT(n == 2);
  EXPECT_OK(accel_sequences_length(seqs, 1, &len));
  EXPECT(len == 11); /* "Two\nlines.\n" */
  accel_sequences_free(seqs);
  EXPECT_OK(accel_sequences_from_text(path, ACCEL_TEXT_CHUNKS, NULL, 10, 5, &seqs));
  EXPECT_OK(accel_sequences_count(seqs, &n));
  EXPECT(n == 4); /* 24 bytes: windows at 0, 5, 10, 15 (the last reaches the end) */
  accel_sequences_free(seqs);
}

static void text_is_read_with_a_vocabulary(void) {
  accel_sequences* seqs = NULL;
  accel_tensor *ids = NULL, *labels = NULL;
  int64_t n = 0, len = 0;
  char lines_vocab[128], json_vocab[128], text[128]; /* write_file keeps only its last two paths */
  strcpy(lines_vocab, write_file("vocab.txt", "<pad>\n<unk>\nthe\ncat\nsat\r\n"));
  strcpy(json_vocab, write_file("vocab.json", "{\"the\": 7, \"cat\": 8, \"sat\": 9}"));
  strcpy(text, write_file("cats.txt", "the cat\n\n  the  dog sat\n"));
  EXPECT_OK(accel_sequences_from_text_vocab(text, lines_vocab, ACCEL_TEXT_LINES, NULL, 0, 0, &seqs));
  EXPECT_OK(accel_sequences_count(seqs, &n));
  EXPECT(n == 2); /* the empty line is skipped */
  EXPECT_OK(accel_sequences_get(seqs, 1, &ids, &labels));
  EXPECT(labels == NULL);
  EXPECT_OK(accel_tensor_numel(ids, &len));
  EXPECT(len == 3 && at(ids, 0) == 2 && at(ids, 1) == 1 && at(ids, 2) == 4); /* dog -> <unk>; "sat\r" read as sat */
  accel_tensor_free(ids);
  accel_sequences_free(seqs);
  EXPECT_OK(accel_sequences_from_text_vocab(text, lines_vocab, ACCEL_TEXT_CHUNKS, NULL, 2, 0, &seqs));
  EXPECT_OK(accel_sequences_count(seqs, &n));
  EXPECT(n == 3); /* 5 tokens in windows of 2 tokens */
  accel_sequences_free(seqs);
  seqs = NULL;
  /* No <unk>: the unknown token is named with its line. */
  EXPECT_ERROR(accel_sequences_from_text_vocab(text, json_vocab, ACCEL_TEXT_LINES, NULL, 0, 0, &seqs), ACCEL_ERR_IO,
               "cats.txt:3: the token \"dog\" is not in the vocabulary");
  EXPECT_ERROR(
      accel_sequences_from_text_vocab(text, write_file("dup.txt", "a\nb\na\n"), ACCEL_TEXT_LINES, NULL, 0, 0, &seqs),
      ACCEL_ERR_IO, "dup.txt:3: the token \"a\" was already listed at line 1");
  EXPECT_ERROR(
      accel_sequences_from_text_vocab(text, write_file("neg.json", "{\"a\": -1}"), ACCEL_TEXT_LINES, NULL, 0, 0, &seqs),
      ACCEL_ERR_IO, "the id of \"a\" is -1");
  EXPECT_ERROR(accel_sequences_from_text_vocab(write_file("blank.txt", " \n\n"), lines_vocab, ACCEL_TEXT_LINES, NULL, 0,
                                               0, &seqs),
               ACCEL_ERR_IO, "blank.txt yields no sample");
  EXPECT(seqs == NULL);
}

/* A C collate function: field "lengths" [B] and "first" [B, 1] with each sample's first id. */
static int collate_calls = 0, released = 0;
static accel_status collate_lengths(void* user, const accel_tensor* const* ids, const accel_tensor* const* labels,
                                    size_t n, accel_tensor** fields, size_t num_fields) {
  int64_t lengths[17] = {0}, first[16];
  int64_t shape[2];
  size_t s;
  (void)labels;
  ++collate_calls;
  if (num_fields != 2 || n > 16) return ACCEL_ERR_INVALID_ARGUMENT;
  for (s = 0; s < n; ++s) {
    accel_tensor_numel(ids[s], &lengths[s]);
    first[s] = at(ids[s], 0);
  }
  shape[0] = *(const int*)user == 1 ? (int64_t)n + 1 : (int64_t)n; /* mode 1: one row too many */
  shape[1] = 1;
  if (*(const int*)user == 2) {
    accel_set_error("the host collate refused the batch");
    return ACCEL_ERR_INVALID_ARGUMENT;
  }
  if (*(const int*)user == 3) { /* hands back a borrowed input: refused, never freed */
    fields[0] = (accel_tensor*)ids[0];
    return accel_tensor_from_buffer(first, n * sizeof(int64_t), ACCEL_INT64, shape, 1, &fields[1]);
  }
  if (accel_tensor_from_buffer(lengths, (size_t)shape[0] * sizeof(int64_t), ACCEL_INT64, shape, 1, &fields[0]) !=
      ACCEL_OK) {
    return ACCEL_ERR_INTERNAL;
  }
  shape[0] = (int64_t)n;
  return accel_tensor_from_buffer(first, n * sizeof(int64_t), ACCEL_INT64, shape, 2, &fields[1]);
}
static void release_mode(void* user) {
  (void)user;
  ++released;
}

static void c_collate_function(void) {
  const int64_t ids[6] = {4, 5, 6, 7, 8, 9}, offsets[4] = {0, 1, 4, 6};
  const char* names[2] = {"lengths", "first"};
  const char* got[2] = {NULL, NULL};
  accel_sequences* seqs = NULL;
  accel_dataset* ds = NULL;
  accel_dataloader* dl = NULL;
  accel_dataloader_options lo = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_tensor* fields[2] = {NULL, NULL};
  int count = 0, mode = 0;
  EXPECT_OK(accel_sequences_from_arrays(ids, 6, offsets, 4, NULL, 0, 0, &seqs));
  EXPECT_OK(accel_dataset_from_sequences_collate(seqs, names, 2, collate_lengths, &mode, release_mode, &ds));
  lo.batch_size = 3;
  lo.num_workers = 1;
  EXPECT_OK(accel_dataloader_create(ds, &lo, &dl));
  EXPECT_OK(accel_dataloader_field_names(dl, got, 2, &count));
  EXPECT(count == 2 && strcmp(got[0], "lengths") == 0 && strcmp(got[1], "first") == 0);
  EXPECT_OK(accel_dataloader_next_fields(dl, fields, 2, &count));
  EXPECT(count == 2 && at(fields[0], 0) == 1 && at(fields[0], 1) == 3 && at(fields[0], 2) == 2);
  EXPECT(at(fields[1], 0) == 4 && at(fields[1], 1) == 5 && at(fields[1], 2) == 8);
  accel_tensor_free(fields[0]);
  accel_tensor_free(fields[1]);
  EXPECT_OK(accel_dataloader_next_fields(dl, fields, 2, &count));
  EXPECT(count == 0);
  mode = 1; /* a field with the wrong number of rows */
  EXPECT_ERROR(accel_dataloader_next_fields(dl, fields, 2, &count), ACCEL_ERR_INVALID_ARGUMENT,
               "field 'lengths' has shape [4], expected [3, ...]");
  accel_dataloader_free(dl);
  lo.num_workers = 0;
  EXPECT_OK(accel_dataloader_create(ds, &lo, &dl));
  mode = 2; /* the callback fails: its message reaches the caller */
  EXPECT_ERROR(accel_dataloader_next_fields(dl, fields, 2, &count), ACCEL_ERR_INVALID_ARGUMENT,
               "the host collate refused the batch");
  mode = 3;
  EXPECT_ERROR(accel_dataloader_next_fields(dl, fields, 2, &count), ACCEL_ERR_INVALID_ARGUMENT,
               "field 'lengths' is a borrowed input tensor");
  accel_dataloader_free(dl);
  EXPECT(released == 0);
  accel_dataset_free(ds);
  EXPECT(released == 1);
  EXPECT(collate_calls >= 3);
  accel_sequences_free(seqs);
}

/* The sequences of one epoch in order (sequence i's ids are all i; each is
   seen once), from the first column of input_ids. */
static void sequence_order(accel_dataloader* dl, int64_t order[10]) {
  accel_tensor* fields[3];
  int count = 0, f, seen = 0;
  int64_t rows[10 * 7], shape[2] = {0, 0}, r;
  while (accel_dataloader_next_fields(dl, fields, 3, &count) == ACCEL_OK && count > 0) {
    EXPECT_OK(accel_tensor_shape(fields[0], shape, 2));
    EXPECT(shape[0] * shape[1] <= 10 * 7);
    EXPECT_OK(accel_tensor_copy_to(fields[0], rows, (size_t)(shape[0] * shape[1]) * sizeof(int64_t)));
    for (r = 0; r < shape[0] && seen < 10; ++r) order[seen++] = rows[r * shape[1]];
    for (f = 0; f < count; ++f) accel_tensor_free(fields[f]);
  }
  EXPECT(seen == 10);
}

static void length_grouped_loader(void) {
  int64_t ids[40], offsets[11];
  int64_t i, total = 0, shape[2] = {0, 0}, batches = 0, seen = 0;
  accel_sequences* seqs = NULL;
  accel_dataset* ds = NULL;
  accel_dataloader* dl = NULL;
  accel_dataloader_options lo = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_tensor* fields[3];
  int count = 0, f;
  offsets[0] = 0;
  for (i = 0; i < 10; ++i) { /* sequence i has length (i * 3) % 7 + 1 */
    int64_t k, len = (i * 3) % 7 + 1;
    for (k = 0; k < len; ++k) ids[total++] = i;
    offsets[i + 1] = total;
  }
  EXPECT_OK(accel_sequences_from_arrays(ids, (size_t)total, offsets, 11, NULL, 0, 0, &seqs));
  EXPECT_OK(accel_dataset_from_sequences(seqs, NULL, &ds));
  lo.batch_size = 3;
  lo.seed = 42;
  EXPECT_OK(accel_dataloader_create_length_grouped(ds, &lo, &dl));
  EXPECT_OK(accel_dataloader_num_batches(dl, &batches));
  EXPECT(batches == 4);
  /* megabatches of one batch (10 < 4 * 3); the longest sequence (7) is moved into the first batch */
  EXPECT_OK(accel_dataloader_next_fields(dl, fields, 3, &count));
  EXPECT_OK(accel_tensor_shape(fields[0], shape, 2));
  EXPECT(shape[1] == 7);
  seen += shape[0];
  for (f = 0; f < count; ++f) accel_tensor_free(fields[f]);
  while (accel_dataloader_next_fields(dl, fields, 3, &count) == ACCEL_OK && count > 0) {
    EXPECT_OK(accel_tensor_shape(fields[0], shape, 2));
    seen += shape[0];
    for (f = 0; f < count; ++f) accel_tensor_free(fields[f]);
  }
  EXPECT(seen == 10);
  {
    /* Each epoch regroups from a new permutation, a pure function of the
       epoch: epoch 1 differs from epoch 0, and epoch 0 comes back. */
    int64_t order[3][10];
    int e, differs = 0;
    for (e = 0; e < 3; ++e) {
      EXPECT_OK(accel_dataloader_set_epoch(dl, e == 2 ? 0 : (uint64_t)e));
      sequence_order(dl, order[e]);
    }
    for (i = 0; i < 10; ++i) {
      differs |= order[0][i] != order[1][i];
      EXPECT(order[2][i] == order[0][i]);
    }
    EXPECT(differs);
  }
  accel_dataloader_free(dl);
  accel_dataset_free(ds);
  accel_sequences_free(seqs);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/accel_seq_XXXXXX");
  if (mkdtemp(dir) == NULL) return 2;
  padded_batches_have_names();
  bad_files_name_file_line_and_value();
  text_is_read_as_bytes();
  text_is_read_with_a_vocabulary();
  c_collate_function();
  length_grouped_loader();
  return capi_report("test_sequences_api");
}
