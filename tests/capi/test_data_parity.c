/* Accelerate parity of loaders through the C ABI (issue 17, items 1-6), in one
   process: skip_first_batches' length, the remainder from the epoch's start
   (-1 with drop_last), dispatch_batches' default for iterable datasets, user
   batch samplers of varying sizes, and the shuffle's seed (set_seed,
   use_seedable_sampler, data_seed). The multi-process cases are in
   tests/dist/dist_data_parity.cpp. */
#include <stdint.h>
#include <stdlib.h>

#include "capi_test.h"

static const int64_t one[1] = {1};

static accel_dataset* identity(int64_t n) {
  accel_tensor *x = NULL, *y = NULL;
  accel_dataset* dataset = NULL;
  float* xs = (float*)malloc((size_t)n * sizeof(float));
  int64_t* ys = (int64_t*)malloc((size_t)n * sizeof(int64_t));
  int64_t shape[2];
  int64_t i;
  for (i = 0; i < n; ++i) {
    xs[i] = (float)i;
    ys[i] = i;
  }
  shape[0] = n;
  shape[1] = 1;
  EXPECT_OK(accel_tensor_from_buffer(xs, (size_t)n * sizeof(float), ACCEL_FLOAT32, shape, 2, &x));
  EXPECT_OK(accel_tensor_from_buffer(ys, (size_t)n * sizeof(int64_t), ACCEL_INT64, shape, 1, &y));
  EXPECT_OK(accel_dataset_from_tensors(x, y, &dataset));
  accel_tensor_free(x);
  accel_tensor_free(y);
  free(xs);
  free(ys);
  return dataset;
}

typedef struct range {
  int64_t next, end;
} range;

static accel_status range_next(void* user, void* const* fields, const size_t* nbytes, int* has_sample) {
  range* r = (range*)user;
  (void)nbytes;
  *has_sample = r->next < r->end;
  if (*has_sample) {
    *(float*)fields[0] = (float)r->next;
    *(int64_t*)fields[1] = r->next++;
  }
  return ACCEL_OK;
}

static accel_status range_reset(void* user, uint64_t epoch) {
  (void)epoch;
  ((range*)user)->next = 0;
  return ACCEL_OK;
}

static accel_dataset* stream(range* r) {
  accel_field_spec fields[2] = {{ACCEL_FLOAT32, 1, one}, {ACCEL_INT64, 0, NULL}};
  accel_stream_callbacks cb = ACCEL_STREAM_CALLBACKS_INIT;
  accel_dataset* dataset = NULL;
  cb.next_sample = range_next;
  cb.reset = range_reset;
  EXPECT_OK(accel_dataset_from_stream(fields, 2, &cb, r, &dataset));
  return dataset;
}

/* One epoch: the labels of every batch into labels (sizes into sizes) and the
   accelerator's remainder after each batch; returns the number of batches. */
static int epoch(accel_accelerator* acc, accel_dataloader* loader, int64_t* labels, int64_t* sizes,
                 int64_t* remainders) {
  int batches = 0, written = 0;
  for (;;) {
    accel_tensor *x = NULL, *y = NULL;
    int64_t n = 0;
    EXPECT_OK(accel_dataloader_next(loader, &x, &y));
    if (y == NULL) break;
    EXPECT_OK(accel_tensor_numel(y, &n));
    if (labels) EXPECT_OK(accel_tensor_copy_to(y, labels + written, (size_t)n * sizeof(int64_t)));
    written += (int)n;
    if (sizes) sizes[batches] = n;
    if (remainders && acc) EXPECT_OK(accel_accelerator_remainder(acc, &remainders[batches]));
    ++batches;
    accel_tensor_free(x);
    accel_tensor_free(y);
  }
  return batches;
}

static void test_skip_first_batches_length(void) {
  accel_dataset* data = identity(10);
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_dataloader *loader = NULL, *rest = NULL, *none = NULL, *streaming = NULL, *skipped_stream = NULL;
  accel_dataset* s;
  range r = {0, 10};
  int64_t n = -1, sentinel = 1234;
  opts.batch_size = 3;
  EXPECT_OK(accel_dataloader_create(data, &opts, &loader));
  EXPECT_OK(accel_dataloader_num_batches(loader, &n));
  EXPECT(n == 4);
  EXPECT_OK(accel_dataloader_skip_first_batches(loader, 1, &rest));
  EXPECT_OK(accel_dataloader_num_batches(rest, &n));
  EXPECT(n == 3);
  EXPECT(epoch(NULL, rest, NULL, NULL, NULL) == 3);
  EXPECT_OK(accel_dataloader_num_batches(rest, &n));
  EXPECT(n == 4); /* the next pass is whole */
  EXPECT_OK(accel_dataloader_skip_first_batches(loader, 9, &none));
  EXPECT_OK(accel_dataloader_num_batches(none, &n));
  EXPECT(n == 0); /* never negative */
  s = stream(&r);
  EXPECT_OK(accel_dataloader_create(s, &opts, &streaming));
  EXPECT_OK(accel_dataloader_skip_first_batches(streaming, 1, &skipped_stream));
  EXPECT_ERROR(accel_dataloader_num_batches(skipped_stream, &sentinel), ACCEL_ERR_STATE, "iterable");
  EXPECT(sentinel == 1234);
  accel_dataloader_free(skipped_stream);
  accel_dataloader_free(streaming);
  accel_dataset_free(s);
  accel_dataloader_free(none);
  accel_dataloader_free(rest);
  accel_dataloader_free(loader);
  accel_dataset_free(data);
}

static void test_remainder_from_the_epoch_start(void) {
  accel_accelerator* acc = NULL;
  accel_dataset* data = identity(10);
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_dataloader *loader = NULL, *dropping = NULL;
  int64_t remainders[4] = {0, 0, 0, 0}, r = 0;
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  opts.batch_size = 4;
  EXPECT_OK(accel_dataloader_create(data, &opts, &loader));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, loader));
  EXPECT_OK(accel_accelerator_remainder(acc, &r));
  EXPECT(r == -1); /* no epoch yet */
  EXPECT(epoch(acc, loader, NULL, NULL, remainders) == 3);
  EXPECT(remainders[0] == 2 && remainders[1] == 2 && remainders[2] == 2); /* 10 % 4 from the first batch */
  EXPECT_OK(accel_accelerator_remainder(acc, &r));
  EXPECT(r == -1); /* the epoch is over */
  opts.drop_last = 1;
  EXPECT_OK(accel_dataloader_create(data, &opts, &dropping));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, dropping));
  EXPECT(epoch(acc, dropping, NULL, NULL, remainders) == 2);
  EXPECT(remainders[0] == -1 && remainders[1] == -1);
  accel_dataloader_free(dropping);
  accel_dataloader_free(loader);
  accel_dataset_free(data);
  accel_accelerator_free(acc);
}

static void test_iterable_datasets_dispatch_by_default(void) {
  accel_accelerator_options o;
  int dispatch;
  accel_accelerator_options_init(&o);
  EXPECT(o.dispatch_batches == -1 && o.use_seedable_sampler == 0 && o.data_seed == -1);
  for (dispatch = -1; dispatch <= 0; ++dispatch) {
    accel_accelerator* acc = NULL;
    range r = {0, 10};
    accel_dataset* s = stream(&r);
    accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
    accel_dataloader* loader = NULL;
    int64_t labels[10], sizes[3], remainders[3];
    o.dispatch_batches = dispatch;
    EXPECT_OK(accel_accelerator_create(&o, &acc));
    opts.batch_size = 4;
    EXPECT_OK(accel_dataloader_create(s, &opts, &loader));
    EXPECT_OK(accel_accelerator_prepare_dataloader(acc, loader));
    EXPECT(epoch(acc, loader, labels, sizes, remainders) == 3);
    EXPECT(sizes[0] == 4 && sizes[1] == 4 && sizes[2] == 2 && labels[9] == 9);
    EXPECT(remainders[0] == -1 && remainders[1] == -1);
    /* Dispatched (the default), the dispatcher reports the observed last batch; not dispatched, a stream has no length.
     */
    EXPECT(remainders[2] == (dispatch == -1 ? 2 : -1));
    accel_dataloader_free(loader);
    accel_dataset_free(s);
    accel_accelerator_free(acc);
  }
}

static void test_user_batch_sampler(void) {
  /* Accelerate's test_batch_sampler_with_varying_batch_size, in one process: the batches as they are. */
  const int64_t indices[14] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  const int64_t lengths[5] = {3, 2, 4, 3, 2};
  accel_accelerator* acc = NULL;
  accel_dataset* data = identity(14);
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_dataloader* loader = NULL;
  int64_t labels[14], sizes[5], n = -1;
  int k, pass;
  range r = {0, 3};
  accel_dataset* s = stream(&r);
  accel_dataloader* sentinel = (accel_dataloader*)&r;
  opts.batch_size = 0; /* sizes vary */
  EXPECT_OK(accel_dataloader_create_from_batches(data, indices, lengths, 5, &opts, &loader));
  EXPECT_OK(accel_dataloader_num_batches(loader, &n));
  EXPECT(n == 5);
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, loader)); /* one process: no even_batches check */
  for (pass = 0; pass < 2; ++pass) {
    EXPECT(epoch(acc, loader, labels, sizes, NULL) == 5);
    for (k = 0; k < 5; ++k) EXPECT(sizes[k] == lengths[k]);
    for (k = 0; k < 14; ++k) EXPECT(labels[k] == k);
  }
  {
    /* A sampler that draws new batches each epoch: set them between epochs. */
    const int64_t reversed[14] = {13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
    const int64_t reversed_lengths[3] = {7, 6, 1};
    uint64_t next_epoch = 0;
    EXPECT_OK(accel_dataloader_epoch(loader, &next_epoch));
    EXPECT(next_epoch == 2);
    EXPECT_OK(accel_dataloader_set_batches(loader, reversed, reversed_lengths, 3));
    EXPECT_OK(accel_dataloader_num_batches(loader, &n));
    EXPECT(n == 3);
    EXPECT(epoch(acc, loader, labels, sizes, NULL) == 3);
    EXPECT(sizes[0] == 7 && sizes[1] == 6 && sizes[2] == 1);
    for (k = 0; k < 14; ++k) EXPECT(labels[k] == 13 - k);
  }
  EXPECT_ERROR(accel_dataloader_create_from_batches(s, indices, lengths, 1, &opts, &sentinel), ACCEL_ERR_STATE,
               "iterable");
  EXPECT(sentinel == (accel_dataloader*)&r);
  /* No batches at all (NULL arrays allowed): an empty epoch. */
  EXPECT_OK(accel_dataloader_create_from_batches(data, NULL, NULL, 0, NULL, &sentinel));
  EXPECT(epoch(NULL, sentinel, NULL, NULL, NULL) == 0);
  accel_dataloader_free(sentinel);
  accel_dataset_free(s);
  accel_dataloader_free(loader);
  accel_dataset_free(data);
  accel_accelerator_free(acc);
}

/* The first epoch's order of a shuffled loader (batch = the whole dataset). */
static void first_order(accel_accelerator* acc, accel_dataloader* loader, int64_t* labels) {
  (void)epoch(acc, loader, labels, NULL, NULL);
}

static void test_shuffle_seeds(void) {
  accel_accelerator_options o;
  accel_dataset* data = identity(16);
  accel_dataloader_options opts = ACCEL_DATALOADER_OPTIONS_INIT;
  int64_t a[16], b[16], c[16], own[16];
  int k, same_ab = 1, same_ac = 1, same_own = 1;
  accel_accelerator *acc = NULL, *seedable = NULL;
  accel_dataloader *l1 = NULL, *l2 = NULL, *l3 = NULL, *l4 = NULL, *l5 = NULL;
  opts.batch_size = 16;
  opts.shuffle = 1; /* seed 0: no generator of its own */
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_dataloader_create(data, &opts, &l1));
  EXPECT_OK(accel_dataloader_create(data, &opts, &l2));
  EXPECT_OK(accel_dataloader_create(data, &opts, &l3));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, l1));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, l2));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, l3));
  EXPECT_OK(accel_accelerator_set_seed(acc, 42));
  first_order(acc, l1, a);
  EXPECT_OK(accel_accelerator_set_seed(acc, 42));
  first_order(acc, l2, b);
  EXPECT_OK(accel_accelerator_set_seed(acc, 43));
  first_order(acc, l3, c);
  for (k = 0; k < 16; ++k) {
    same_ab &= a[k] == b[k];
    same_ac &= a[k] == c[k];
  }
  EXPECT(same_ab);  /* set_seed decides the order */
  EXPECT(!same_ac); /* another seed, another order */

  /* use_seedable_sampler + data_seed 7: epoch 0 is shuffled with 7, as a loader whose own seed is 7. */
  accel_accelerator_options_init(&o);
  o.use_seedable_sampler = 1;
  o.data_seed = 7;
  EXPECT_OK(accel_accelerator_create(&o, &seedable));
  opts.seed = 123; /* overridden by the seedable sampler */
  EXPECT_OK(accel_dataloader_create(data, &opts, &l4));
  EXPECT_OK(accel_accelerator_prepare_dataloader(seedable, l4));
  first_order(seedable, l4, a);
  opts.seed = 7;
  EXPECT_OK(accel_dataloader_create(data, &opts, &l5));
  first_order(NULL, l5, own);
  for (k = 0; k < 16; ++k) same_own &= a[k] == own[k];
  EXPECT(same_own);
  accel_dataloader_free(l5);
  accel_dataloader_free(l4);
  accel_dataloader_free(l3);
  accel_dataloader_free(l2);
  accel_dataloader_free(l1);
  accel_accelerator_free(seedable);
  accel_accelerator_free(acc);
  accel_dataset_free(data);
}

int main(void) {
  test_skip_first_batches_length();
  test_remainder_from_the_epoch_start();
  test_iterable_datasets_dispatch_by_default();
  test_user_batch_sampler();
  test_shuffle_seeds();
  return capi_report("test_data_parity");
}
