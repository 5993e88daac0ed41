/* The data part of the C ABI: callback and stream datasets (including failing
   callbacks and release), CSV files, safetensors directories, multi-field batches, skip_first_batches,
   prefetching workers, and the errors bad input gets. */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "capi_test.h"

typedef struct squares {
  int64_t length;
  int64_t fail_at; /* get_sample fails for this index (-1: never) */
  int released;
} squares;

static accel_status squares_length(void* user, int64_t* out) {
  *out = ((squares*)user)->length;
  return ACCEL_OK;
}

static accel_status squares_get(void* user, int64_t index, void* const* fields, const size_t* nbytes) {
  squares* s = (squares*)user;
  float* x = (float*)fields[0];
  if (index == s->fail_at) {
    accel_set_error("the sample file is missing");
    return ACCEL_ERR_IO;
  }
  if (nbytes[0] != 2 * sizeof(float) || nbytes[1] != sizeof(int64_t)) return ACCEL_ERR_INTERNAL;
  x[0] = (float)index;
  x[1] = (float)(index * index);
  *(int64_t*)fields[1] = index;
  return ACCEL_OK;
}

static accel_status negate(void* user, int64_t index, void* const* fields, const size_t* nbytes) {
  float* x = (float*)fields[0];
  (void)user;
  (void)index;
  (void)nbytes;
  x[1] = -x[1];
  return ACCEL_OK;
}

static void squares_release(void* user) { ((squares*)user)->released += 1; }

typedef struct counter {
  int64_t next, end;
  uint64_t epoch;
  int released;
} counter;

static accel_status counter_next(void* user, void* const* fields, const size_t* nbytes, int* has_sample) {
  counter* c = (counter*)user;
  (void)nbytes;
  if (c->next == c->end) {
    *has_sample = 0;
    return ACCEL_OK;
  }
  *(float*)fields[0] = (float)c->next;
  *(int64_t*)fields[1] = c->next;
  c->next += 1;
  *has_sample = 1;
  return ACCEL_OK;
}

static accel_status counter_reset(void* user, uint64_t epoch) {
  counter* c = (counter*)user;
  c->next = 0;
  c->epoch = epoch;
  return ACCEL_OK;
}

static void counter_release(void* user) { ((counter*)user)->released += 1; }

static const int64_t pair_shape[1] = {2};

/* A dataset over data's squares (x float32 [2], y int64), without a transform. */
static accel_dataset* squares_dataset(squares* data) {
  accel_field_spec fields[2] = {{ACCEL_FLOAT32, 1, pair_shape}, {ACCEL_INT64, 0, NULL}};
  accel_dataset_callbacks cb = ACCEL_DATASET_CALLBACKS_INIT;
  accel_dataset* dataset = NULL;
  cb.length = squares_length;
  cb.get_sample = squares_get;
  EXPECT_OK(accel_dataset_from_callbacks(fields, 2, &cb, data, &dataset));
  return dataset;
}

static void test_callback_dataset(void) {
  squares data = {10, -1, 0};
  accel_field_spec fields[2] = {{ACCEL_FLOAT32, 1, pair_shape}, {ACCEL_INT64, 0, NULL}};
  accel_dataset_callbacks cb;
  accel_dataset* dataset = NULL;
  accel_dataloader* loader = NULL;
  accel_dataloader_options opts;
  accel_tensor* batch[3] = {NULL, NULL, NULL};
  int count = -1;
  int64_t size = 0;
  int iterable = -1;
  float x[8];
  int64_t y[4];

  accel_dataset_callbacks_init(&cb);
  cb.length = squares_length;
  cb.get_sample = squares_get;
  cb.transform = negate;
  cb.release = squares_release;
  EXPECT_OK(accel_dataset_from_callbacks(fields, 2, &cb, &data, &dataset));
  EXPECT_OK(accel_dataset_size(dataset, &size));
  EXPECT(size == 10);
  EXPECT_OK(accel_dataset_is_iterable(dataset, &iterable));
  EXPECT(iterable == 0);

  accel_dataloader_options_init(&opts);
  opts.batch_size = 4;
  opts.num_workers = 2;
  EXPECT_OK(accel_dataloader_create(dataset, &opts, &loader));
  accel_dataset_free(dataset); /* the loader keeps it */
  EXPECT(data.released == 0);
  EXPECT_OK(accel_dataloader_next_fields(loader, batch, 3, &count));
  EXPECT(count == 2);
  EXPECT_OK(accel_tensor_copy_to(batch[0], x, sizeof x));
  EXPECT_OK(accel_tensor_copy_to(batch[1], y, sizeof y));
  EXPECT(x[0] == 0.0f && x[2] == 1.0f && x[3] == -1.0f && x[7] == -9.0f);
  EXPECT(y[0] == 0 && y[3] == 3);
  accel_tensor_free(batch[0]);
  accel_tensor_free(batch[1]);

  /* Too small an array for the fields. */
  EXPECT_ERROR(accel_dataloader_next_fields(loader, batch, 1, &count), ACCEL_ERR_INVALID_ARGUMENT,
               "capacity 1 is less than the dataset's 2 fields");
  accel_dataloader_free(loader);
  EXPECT(data.released == 1); /* released once, when the last user is gone */
}

static void test_failing_callback(void) {
  squares data = {6, 3, 0};
  accel_dataset* dataset = squares_dataset(&data);
  accel_dataloader* loader = NULL;
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_tensor* x = NULL;
  accel_tensor* y = NULL;

  opts.batch_size = 2;
  EXPECT_OK(accel_dataloader_create(dataset, &opts, &loader));
  EXPECT_OK(accel_dataloader_next(loader, &x, &y)); /* samples 0, 1 */
  accel_tensor_free(x);
  accel_tensor_free(y);
  EXPECT_ERROR(accel_dataloader_next(loader, &x, &y), ACCEL_ERR_IO,
               "dataset callback get_sample for sample 3 failed: the sample file is missing");
  accel_dataloader_free(loader);
  accel_dataset_free(dataset);
}

static void test_stream_dataset(void) {
  counter data = {0, 7, 99, 0};
  accel_field_spec fields[2] = {{ACCEL_FLOAT32, 0, NULL}, {ACCEL_INT64, 0, NULL}};
  accel_stream_callbacks cb = ACCEL_STREAM_CALLBACKS_INIT;
  accel_dataset* dataset = NULL;
  accel_dataloader* loader = NULL;
  accel_dataloader* resumed = NULL;
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_tensor* x = NULL;
  accel_tensor* y = NULL;
  int64_t size = 0;
  int64_t labels[3];
  int batches = 0;

  cb.next_sample = counter_next;
  cb.reset = counter_reset;
  cb.release = counter_release;
  EXPECT_OK(accel_dataset_from_stream(fields, 2, &cb, &data, &dataset));
  EXPECT_ERROR(accel_dataset_size(dataset, &size), ACCEL_ERR_STATE, "iterable");
  opts.batch_size = 3;
  opts.shuffle = 1;
  EXPECT_ERROR(accel_dataloader_create(dataset, &opts, &loader), ACCEL_ERR_INVALID_ARGUMENT, "shuffle");
  opts.shuffle = 0;
  EXPECT_OK(accel_dataloader_create(dataset, &opts, &loader));
  EXPECT_ERROR(accel_dataloader_num_batches(loader, &size), ACCEL_ERR_STATE, "length is unknown");
  EXPECT_OK(accel_dataloader_set_epoch(loader, 5));
  for (;;) {
    EXPECT_OK(accel_dataloader_next(loader, &x, &y));
    if (x == NULL) break;
    ++batches;
    accel_tensor_free(x);
    accel_tensor_free(y);
  }
  EXPECT(batches == 3); /* 3 + 3 + 1: a single process keeps the short batch */
  EXPECT(data.epoch == 5);

  EXPECT_OK(accel_dataloader_skip_first_batches(loader, 1, &resumed));
  EXPECT_OK(accel_dataloader_next(resumed, &x, &y));
  EXPECT_OK(accel_tensor_copy_to(y, labels, sizeof labels));
  EXPECT(labels[0] == 3 && labels[2] == 5);
  accel_tensor_free(x);
  accel_tensor_free(y);
  accel_dataloader_free(resumed);
  accel_dataloader_free(loader);
  accel_dataset_free(dataset);
  EXPECT(data.released == 1);
}

static void test_csv(void) {
  const char* path = "test_data_api.csv";
  FILE* f = fopen(path, "w");
  accel_dataset* dataset = NULL;
  int64_t size = 0;
  fputs("f1,f2,label\n0.5,1,3\n2,oops,1\n", f);
  fclose(f);
  EXPECT_ERROR(accel_dataset_from_csv(path, "label", ACCEL_INT64, &dataset), ACCEL_ERR_IO,
               "test_data_api.csv:3: column \"f2\" holds \"oops\"");
  EXPECT(dataset == NULL);
  f = fopen(path, "w");
  fputs("f1,f2,label\n0.5,1,3\n2,4,1\n", f);
  fclose(f);
  EXPECT_ERROR(accel_dataset_from_csv(path, "target", ACCEL_INT64, &dataset), ACCEL_ERR_INVALID_ARGUMENT,
               "no column named \"target\"");
  EXPECT_OK(accel_dataset_from_csv(path, "label", ACCEL_INT64, &dataset));
  EXPECT_OK(accel_dataset_size(dataset, &size));
  EXPECT(size == 2);
  accel_dataset_free(dataset);
  remove(path);
}

static void test_safetensors_directory(void) {
  static const float rows[6] = {0, 1, 2, 3, 4, 5};
  static const int64_t labels[3] = {7, 8, 9};
  const int64_t x_shape[2] = {3, 2}, y_shape[1] = {3};
  const char* names[2] = {"x", "y"};
  const char* wrong[2] = {"x", "label"};
  accel_accelerator* acc = NULL;
  accel_tensor* tensors[2] = {NULL, NULL};
  accel_dataset* dataset = NULL;
  int64_t size = 0;

  mkdir("test_data_api_shards", 0755);
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_tensor_from_buffer(rows, sizeof rows, ACCEL_FLOAT32, x_shape, 2, &tensors[0]));
  EXPECT_OK(accel_tensor_from_buffer(labels, sizeof labels, ACCEL_INT64, y_shape, 1, &tensors[1]));
  EXPECT_OK(accel_accelerator_save_tensors(acc, names, (const accel_tensor* const*)tensors, 2,
                                           "test_data_api_shards/part-0.safetensors"));
  EXPECT_OK(accel_accelerator_save_tensors(acc, names, (const accel_tensor* const*)tensors, 2,
                                           "test_data_api_shards/part-1.safetensors"));
  EXPECT_OK(accel_dataset_from_safetensors("test_data_api_shards", names, 2, &dataset));
  EXPECT_OK(accel_dataset_size(dataset, &size));
  EXPECT(size == 6);
  accel_dataset_free(dataset);
  dataset = NULL;
  EXPECT_ERROR(accel_dataset_from_safetensors("test_data_api_shards", wrong, 2, &dataset), ACCEL_ERR_IO,
               "part-0.safetensors has no tensor 'label'");
  EXPECT_ERROR(accel_dataset_from_safetensors("test_data_api_shards", names, 0, &dataset), ACCEL_ERR_INVALID_ARGUMENT,
               "num_fields = 0");
  EXPECT_ERROR(accel_dataset_from_safetensors(NULL, names, 2, &dataset), ACCEL_ERR_INVALID_ARGUMENT, "dir is NULL");
  EXPECT(dataset == NULL);
  accel_tensor_free(tensors[0]);
  accel_tensor_free(tensors[1]);
  accel_accelerator_free(acc);
}

static void test_bad_arguments(void) {
  squares data = {3, -1, 0};
  static const int64_t zero_shape[1] = {0};
  accel_field_spec good[1] = {{ACCEL_FLOAT32, 1, pair_shape}};
  accel_field_spec zero[1] = {{ACCEL_FLOAT32, 1, zero_shape}};
  accel_field_spec bad_dtype[1] = {{(accel_dtype)77, 0, NULL}};
  accel_dataset_callbacks cb = ACCEL_DATASET_CALLBACKS_INIT;
  accel_dataset* dataset = NULL;
  accel_dataloader* loader = NULL;
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;

  cb.length = squares_length;
  EXPECT_ERROR(accel_dataset_from_callbacks(good, 1, &cb, &data, &dataset), ACCEL_ERR_INVALID_ARGUMENT,
               "callbacks->get_sample is NULL");
  cb.get_sample = squares_get;
  EXPECT_ERROR(accel_dataset_from_callbacks(good, 0, &cb, &data, &dataset), ACCEL_ERR_INVALID_ARGUMENT,
               "num_fields must be positive, got 0");
  cb.release = squares_release;
  EXPECT_ERROR(accel_dataset_from_callbacks(zero, 1, &cb, &data, &dataset), ACCEL_ERR_INVALID_ARGUMENT,
               "non-positive dimension 0");
  EXPECT(data.released == 0); /* a failed creation leaves user to the caller */
  cb.release = NULL;
  EXPECT_ERROR(accel_dataset_from_callbacks(bad_dtype, 1, &cb, &data, &dataset), ACCEL_ERR_INVALID_ARGUMENT, "77");
  EXPECT_ERROR(accel_dataset_from_callbacks(good, 1, NULL, &data, &dataset), ACCEL_ERR_INVALID_ARGUMENT,
               "callbacks is NULL");
  EXPECT(dataset == NULL);
  EXPECT_OK(accel_dataset_from_callbacks(good, 1, &cb, &data, &dataset));
  opts.num_workers = -2;
  EXPECT_ERROR(accel_dataloader_create(dataset, &opts, &loader), ACCEL_ERR_INVALID_ARGUMENT,
               "num_workers must be >= 0, got -2");
  opts.num_workers = 0;
  EXPECT_OK(accel_dataloader_create(dataset, &opts, &loader));
  EXPECT_ERROR(accel_dataloader_skip_first_batches(loader, -1, &loader), ACCEL_ERR_INVALID_ARGUMENT,
               "num_batches must not be negative, got -1");
  accel_dataloader_free(loader);
  accel_dataset_free(dataset);
  EXPECT_ERROR(accel_dataloader_skip_first_batches(loader, 1, &loader), ACCEL_ERR_INVALID_ARGUMENT, "loader");
}

static void test_prepared_loader_and_join(void) {
  squares data = {5, -1, 0};
  accel_accelerator* acc = NULL;
  accel_dataset* dataset = squares_dataset(&data);
  accel_dataloader* loader = NULL;
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_tensor* batch[2] = {NULL, NULL};
  int count = 0, end = -1, batches = 0;
  int64_t remainder = -1;

  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  opts.batch_size = 2;
  EXPECT_OK(accel_dataloader_create(dataset, &opts, &loader));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, loader));
  for (;;) {
    EXPECT_OK(accel_dataloader_next_fields(loader, batch, 2, &count));
    if (count == 0) break;
    ++batches;
    EXPECT_OK(accel_accelerator_end_of_dataloader(acc, &end));
    EXPECT(end == (batches == 3));
    EXPECT_OK(accel_accelerator_remainder(acc, &remainder));
    EXPECT(remainder == 1); /* Accelerate's 5 % 2, from the first batch on, in one process too */
    accel_tensor_free(batch[0]);
    accel_tensor_free(batch[1]);
  }
  EXPECT(batches == 3);

  EXPECT_ERROR(accel_accelerator_join_uneven_inputs_end(acc), ACCEL_ERR_STATE, "without join_uneven_inputs_begin");
  EXPECT_OK(accel_accelerator_join_uneven_inputs_begin(acc));
  EXPECT_ERROR(accel_accelerator_join_uneven_inputs_begin(acc), ACCEL_ERR_STATE, "already inside");
  EXPECT_OK(accel_accelerator_join_uneven_inputs_end(acc));
  accel_dataloader_free(loader);
  accel_dataset_free(dataset);
  accel_accelerator_free(acc);
}

/* One batch of loader (freed); 1 when there was one, 0 at the epoch's end. */
static int take_batch(accel_dataloader* loader) {
  accel_tensor* batch[2] = {NULL, NULL};
  int count = -1;
  EXPECT_OK(accel_dataloader_next_fields(loader, batch, 2, &count));
  accel_tensor_free(batch[0]);
  accel_tensor_free(batch[1]);
  return count > 0;
}

static int64_t open_index(const accel_dataloader* loader) {
  int64_t index = -7;
  EXPECT_OK(accel_dataloader_open_index(loader, &index));
  return index;
}

static int in_dataloader(const accel_accelerator* acc) {
  int in = -1;
  EXPECT_OK(accel_accelerator_in_dataloader(acc, &in));
  return in;
}

/* Accelerate's gradient_state.in_dataloader and dataloader_references: a
   prepared loader counts from the next that opens its epoch to the one that
   reports its end, nested loaders in the order they opened, and a loader
   broken out of stays in its epoch (as Accelerate's suspended iterator) until
   set_epoch or its free. */
static void test_in_dataloader(void) {
  squares data = {5, -1, 0};
  accel_accelerator* acc = NULL;
  accel_dataset* dataset = squares_dataset(&data);
  accel_dataloader *train = NULL, *eval = NULL, *plain = NULL, *skipped = NULL;
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
  int batches = 0;

  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  opts.batch_size = 2;
  EXPECT_OK(accel_dataloader_create(dataset, &opts, &train));
  EXPECT_OK(accel_dataloader_create(dataset, &opts, &eval));
  EXPECT_OK(accel_dataloader_create(dataset, &opts, &plain));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, train));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, eval));
  EXPECT(in_dataloader(acc) == 0);
  EXPECT(open_index(train) == -1);

  while (take_batch(train)) {
    ++batches;
    EXPECT(in_dataloader(acc) == 1);
    EXPECT(open_index(train) == 0);
    if (batches == 2) { /* an evaluation inside the epoch: the active loader while it runs */
      while (take_batch(eval)) {
        EXPECT(open_index(eval) == 1);
        EXPECT(open_index(train) == 0);
      }
      EXPECT(open_index(eval) == -1);
      EXPECT(in_dataloader(acc) == 1);
    }
  }
  EXPECT(batches == 3);
  EXPECT(in_dataloader(acc) == 0); /* the next that reported the end closed the epoch */
  EXPECT(open_index(train) == -1);

  /* A loader that was never prepared belongs to no accelerator. */
  EXPECT(take_batch(plain) == 1);
  EXPECT(open_index(plain) == -1);
  EXPECT(in_dataloader(acc) == 0);

  /* Broken out of: still in its epoch, until set_epoch restarts it. */
  EXPECT(take_batch(train) == 1);
  EXPECT(in_dataloader(acc) == 1);
  EXPECT_OK(accel_dataloader_set_epoch(train, 5));
  EXPECT(in_dataloader(acc) == 0);

  /* skip_first_batches' loader is prepared as its source; freed mid-epoch, it leaves. */
  EXPECT_OK(accel_dataloader_skip_first_batches(train, 1, &skipped));
  EXPECT(take_batch(skipped) == 1);
  EXPECT(open_index(skipped) == 0);
  EXPECT(take_batch(eval) == 1);
  EXPECT(open_index(eval) == 1);
  accel_dataloader_free(skipped);
  EXPECT(open_index(eval) == 0);
  accel_dataloader_free(eval);
  EXPECT(in_dataloader(acc) == 0);

  accel_dataloader_free(plain);
  accel_dataloader_free(train);
  accel_dataset_free(dataset);
  accel_accelerator_free(acc);
}

int main(void) {
  test_prepared_loader_and_join();
  test_in_dataloader();
  test_callback_dataset();
  test_failing_callback();
  test_stream_dataset();
  test_csv();
  test_safetensors_directory();
  test_bad_arguments();
  return capi_report("test_data_api");
}
