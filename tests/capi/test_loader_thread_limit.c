/* A dataloader whose worker threads the system refuses to start: the call
   that starts them returns ACCEL_ERR_RESOURCE (not std::terminate), nothing is
   consumed, and once threads can start again the same loader yields its first
   batch. The refusal is real: RLIMIT_AS is lowered to just above what the
   process maps, so there is no room for an 8 MiB thread stack. (Not run under
   AddressSanitizer, whose shadow memory needs the address space.) */
#define _GNU_SOURCE /* RLIMIT_AS, pthread_getattr_default_np */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "capi_test.h"

int main(void) {
  enum { N = 16 };
  float xs[N];
  int64_t ys[N], shape_x[1] = {N}, shape_y[1] = {N};
  accel_tensor *x = NULL, *y = NULL, *bx = NULL, *by = NULL;
  accel_dataset* ds = NULL;
  accel_dataloader* loader = NULL;
  accel_dataloader_options opts;
  struct rlimit saved, tight;
  pthread_attr_t attr;
  size_t stack = 0, headroom = 1 << 20;

  for (int i = 0; i < N; ++i) {
    xs[i] = (float)i;
    ys[i] = i;
  }
  EXPECT_OK(accel_tensor_from_buffer(xs, sizeof xs, ACCEL_FLOAT32, shape_x, 1, &x));
  EXPECT_OK(accel_tensor_from_buffer(ys, sizeof ys, ACCEL_INT64, shape_y, 1, &y));
  EXPECT_OK(accel_dataset_from_tensors(x, y, &ds));
  accel_dataloader_options_init(&opts);
  opts.batch_size = 4;
  opts.num_workers = 4;
  EXPECT_OK(accel_dataloader_create(ds, &opts, &loader));

  /* The limit must leave room for the loader's own small allocations but not
     for one thread stack. */
  if (pthread_getattr_default_np(&attr) == 0) {
    pthread_attr_getstacksize(&attr, &stack);
    pthread_attr_destroy(&attr);
  }
  EXPECT(stack > 2 * headroom);
  EXPECT(getrlimit(RLIMIT_AS, &saved) == 0);
  tight = saved;
  tight.rlim_cur = capi_mapped_bytes() + headroom;
  EXPECT(tight.rlim_cur > headroom);
  EXPECT(setrlimit(RLIMIT_AS, &tight) == 0);
  accel_status status = accel_dataloader_next(loader, &bx, &by);
  EXPECT(setrlimit(RLIMIT_AS, &saved) == 0); /* the soft limit goes back up to the hard one */
  EXPECT(status == ACCEL_ERR_RESOURCE);
  EXPECT(strstr(accel_last_error(), "worker thread") != NULL);
  EXPECT(strstr(accel_last_error(), "num_workers") != NULL);
  EXPECT(bx == NULL && by == NULL);

  /* Threads can start again: the same loader reads from the first batch. */
  EXPECT_OK(accel_dataloader_next(loader, &bx, &by));
  {
    int64_t batch[4] = {-1, -1, -1, -1};
    EXPECT(by != NULL && accel_tensor_copy_to(by, batch, sizeof batch) == ACCEL_OK);
    EXPECT(batch[0] == 0 && batch[3] == 3);
  }
  accel_tensor_free(bx);
  accel_tensor_free(by);
  accel_dataloader_free(loader);
  accel_dataset_free(ds);
  accel_tensor_free(x);
  accel_tensor_free(y);
  return capi_report("test_loader_thread_limit");
}
