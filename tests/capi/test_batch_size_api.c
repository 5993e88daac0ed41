/* Accelerate's find_executable_batch_size through the C ABI: the batch sizes
   it tries (Accelerate 1.x's tests/test_memory_utils.py expects 128, 115,
   103, ... 9, 8), the end at zero, other errors returned at once, and a real
   host allocation failure. For that one, RLIMIT_AS is lowered to 1 GiB above
   what the process maps, so an embedding lookup whose output needs more fails
   in LibTorch's CPU allocator (not run under AddressSanitizer, whose shadow
   memory needs the address space). */
#define _GNU_SOURCE /* RLIMIT_AS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "capi_test.h"

/* AddressSanitizer (GCC says so with __SANITIZE_ADDRESS__, Clang with __has_feature). */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

struct tries {
  int64_t sizes[64];
  int count;
  int64_t fits;           /* the size that succeeds (simulated), or 0 */
  accel_status otherwise; /* what the others return */
};

static accel_status simulated(void* user, int64_t batch_size) {
  struct tries* t = (struct tries*)user;
  if (t->count < 64) t->sizes[t->count++] = batch_size;
  if (batch_size == t->fits) return ACCEL_OK;
  accel_set_error(t->otherwise == ACCEL_ERR_RESOURCE ? "CPU out of memory." : "bad data");
  return t->otherwise;
}

static void accelerates_sequence(void) {
  static const int64_t expected[] = {128, 115, 103, 92, 82, 73, 65, 58, 52, 46, 41, 36,
                                     32,  28,  25,  22, 19, 17, 15, 13, 11, 9,  8};
  const int n = (int)(sizeof expected / sizeof expected[0]);
  struct tries t = {{0}, 0, 8, ACCEL_ERR_RESOURCE};
  int64_t found = 0;
  EXPECT_OK(accel_find_executable_batch_size(128, simulated, &t, &found));
  EXPECT(found == 8 && t.count == n);
  for (int i = 0; i < n && i < t.count; ++i) EXPECT(t.sizes[i] == expected[i]);

  /* Never fits: 128 ... 1, then 0 ends it. Start at 0: nothing is called. */
  t.count = 0;
  t.fits = -1;
  found = -7;
  EXPECT_ERROR(accel_find_executable_batch_size(128, simulated, &t, &found), ACCEL_ERR_RESOURCE,
               "No executable batch size found, reached zero.");
  EXPECT(found == -7 && t.count == 30 && t.sizes[29] == 1);
  t.count = 0;
  EXPECT_ERROR(accel_find_executable_batch_size(0, simulated, &t, &found), ACCEL_ERR_RESOURCE,
               "No executable batch size found, reached zero.");
  EXPECT(t.count == 0);

  /* Any other failure is the caller's: returned at the first size, its message kept. */
  t.otherwise = ACCEL_ERR_INVALID_ARGUMENT;
  EXPECT_ERROR(accel_find_executable_batch_size(64, simulated, &t, &found), ACCEL_ERR_INVALID_ARGUMENT, "bad data");
  EXPECT(t.count == 1 && t.sizes[0] == 64);

  EXPECT_ERROR(accel_find_executable_batch_size(-1, simulated, &t, &found), ACCEL_ERR_INVALID_ARGUMENT,
               "starting_batch_size must be >= 0, got -1");
  EXPECT_ERROR(accel_find_executable_batch_size(8, NULL, &t, &found), ACCEL_ERR_INVALID_ARGUMENT, "fn is NULL");
  EXPECT_ERROR(accel_find_executable_batch_size(8, simulated, &t, NULL), ACCEL_ERR_INVALID_ARGUMENT, "out");
}

#if !defined(UNDER_ASAN)
/* An Embedding(1, 2^20) forward: its output needs batch_size * 4 MiB, and no
   BLAS call (OpenBLAS waits forever for its work buffer when malloc fails). */
struct real {
  accel_model* model;
  int64_t sizes[128];
  int count;
};

static accel_status forward_batch(void* user, int64_t batch_size) {
  struct real* r = (struct real*)user;
  int64_t shape[1] = {batch_size};
  int64_t* input = calloc((size_t)batch_size, sizeof(int64_t));
  accel_tensor *x = NULL, *out = NULL;
  accel_status status;
  if (r->count < 128) r->sizes[r->count++] = batch_size;
  if (input == NULL) return ACCEL_ERR_RESOURCE;
  status = accel_tensor_from_buffer(input, (size_t)batch_size * sizeof(int64_t), ACCEL_INT64, shape, 1, &x);
  if (status == ACCEL_OK) status = accel_model_forward(r->model, x, &out);
  accel_tensor_free(out);
  accel_tensor_free(x);
  free(input);
  return status;
}

static void real_allocation_failure(void) {
  const char* spec = "[{\"type\": \"Embedding\", \"num_embeddings\": 1, \"embedding_dim\": 1048576}]";
  const int64_t row = (int64_t)1 << 22; /* bytes of one output row */
  struct real r = {NULL, {0}, 0};
  struct rlimit saved, tight;
  int64_t found = 0;
  size_t mapped;
  EXPECT_OK(accel_model_from_json(spec, &r.model));
  mapped = capi_mapped_bytes();
  if (mapped == 0 || getrlimit(RLIMIT_AS, &saved) != 0) {
    EXPECT(!"the process's mapped size and RLIMIT_AS can be read");
    accel_model_free(r.model);
    return;
  }
  tight = saved;
  tight.rlim_cur = mapped + ((size_t)1 << 30);
  EXPECT(setrlimit(RLIMIT_AS, &tight) == 0);
  /* 4096 rows need 16 GiB: refused by the allocator, reported as RESOURCE,
     and the search goes down until the output fits in the 1 GiB left. */
  EXPECT_OK(accel_find_executable_batch_size(4096, forward_batch, &r, &found));
  EXPECT(setrlimit(RLIMIT_AS, &saved) == 0);
  EXPECT(r.count >= 2 && r.sizes[0] == 4096 && found == r.sizes[r.count - 1]);
  EXPECT(found * row < ((int64_t)1 << 30) && found >= 16);
  for (int i = 1; i < r.count && i < 128; ++i) EXPECT(r.sizes[i] == (int64_t)((double)r.sizes[i - 1] * 0.9));
  accel_model_free(r.model);
}
#endif

int main(void) {
  accelerates_sequence();
#if !defined(UNDER_ASAN)
  real_allocation_failure();
#endif
  return capi_report("test_batch_size_api");
}
