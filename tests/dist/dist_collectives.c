/* 2- and 3-process collectives through the C ABI: gather with unequal dim-0
   sizes, scalars, shape mismatches reported on every rank without a deadlock,
   reduce sum/mean, barrier. Run by `accel launch --nproc_per_node N`. */
#include <math.h>
#include <string.h>

#include "dist_check.h"

static accel_tensor* make_rows(int rows, int cols, float base) {
  float data[64];
  int64_t shape[2] = {rows, cols};
  accel_tensor* t = NULL;
  for (int i = 0; i < rows * cols; ++i) data[i] = base + (float)i;
  CHECK_OK(accel_tensor_from_buffer(data, sizeof(float) * (size_t)(rows * cols), ACCEL_FLOAT32, shape, 2, &t));
  return t;
}

int main(void) {
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  int rank = 0, world = 0;
  accel_accelerator_options_init(&opts);
  opts.timeout_ms = 30000;
  CHECK_OK(accel_accelerator_create(&opts, &acc));
  CHECK_OK(accel_accelerator_process_index(acc, &rank));
  CHECK_OK(accel_accelerator_num_processes(acc, &world));
  dist_check_rank = rank;
  CHECK(world >= 2);
  {
    accel_distributed_type type;
    CHECK_OK(accel_accelerator_distributed_type(acc, &type));
    CHECK(type == ACCEL_DISTRIBUTED_MULTI_CPU);
  }

  /* gather: rank r contributes r+1 rows of 3 columns, values 100*r + i. */
  {
    accel_tensor* mine = make_rows(rank + 1, 3, 100.0f * (float)rank);
    accel_tensor* all = NULL;
    int64_t shape[2] = {0, 0};
    int expected_rows = world * (world + 1) / 2;
    float got[64];
    int row = 0;
    CHECK_OK(accel_accelerator_gather(acc, mine, &all));
    CHECK_OK(accel_tensor_shape(all, shape, 2));
    CHECK(shape[0] == expected_rows && shape[1] == 3);
    CHECK_OK(accel_tensor_copy_to(all, got, sizeof(float) * (size_t)(expected_rows * 3)));
    for (int r = 0; r < world; ++r) {
      for (int i = 0; i < (r + 1) * 3; ++i) CHECK(got[row * 3 + i] == 100.0f * (float)r + (float)i);
      row += r + 1;
    }
    accel_tensor_free(all);
    accel_tensor_free(mine);
  }

  /* gather of a scalar: one row per process. */
  {
    double value = rank + 0.5, got[8];
    accel_tensor *scalar = NULL, *all = NULL;
    int64_t numel = 0;
    CHECK_OK(accel_tensor_from_buffer(&value, sizeof value, ACCEL_FLOAT64, NULL, 0, &scalar));
    CHECK_OK(accel_accelerator_gather(acc, scalar, &all));
    CHECK_OK(accel_tensor_numel(all, &numel));
    CHECK(numel == world);
    CHECK_OK(accel_tensor_copy_to(all, got, sizeof(double) * (size_t)world));
    for (int r = 0; r < world; ++r) CHECK(got[r] == r + 0.5);
    accel_tensor_free(all);
    accel_tensor_free(scalar);
  }

  /* gather when every process has zero rows: an empty result, not a crash in the backend. */
  {
    accel_tensor* none = make_rows(0, 3, 0.0f);
    accel_tensor* all = NULL;
    int64_t numel = -1;
    CHECK_OK(accel_accelerator_gather(acc, none, &all));
    CHECK_OK(accel_tensor_numel(all, &numel));
    CHECK(numel == 0);
    accel_tensor_free(all);
    accel_tensor_free(none);
  }

  /* gather with different trailing dims: every rank gets the same error, nobody hangs. */
  {
    accel_tensor* mine = make_rows(2, 3 + rank, 0.0f);
    accel_tensor* all = NULL;
    CHECK(accel_accelerator_gather(acc, mine, &all) == ACCEL_ERR_INVALID_ARGUMENT);
    CHECK(all == NULL);
    CHECK(strstr(accel_last_error(), "rank 1") != NULL);
    accel_tensor_free(mine);
  }

  /* reduce: sum and mean of [rank, 2*rank]. */
  {
    float data[2] = {(float)rank, 2.0f * (float)rank}, got[2];
    int64_t shape[1] = {2};
    accel_tensor *t = NULL, *sum = NULL, *mean = NULL;
    float total = (float)(world * (world - 1) / 2);
    CHECK_OK(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, shape, 1, &t));
    CHECK_OK(accel_accelerator_reduce(acc, t, ACCEL_REDUCE_SUM, &sum));
    CHECK_OK(accel_tensor_copy_to(sum, got, sizeof got));
    CHECK(got[0] == total && got[1] == 2.0f * total);
    CHECK_OK(accel_accelerator_reduce(acc, t, ACCEL_REDUCE_MEAN, &mean));
    CHECK_OK(accel_tensor_copy_to(mean, got, sizeof got));
    CHECK(fabsf(got[0] - total / (float)world) < 1e-6f);
    CHECK(accel_accelerator_reduce(acc, t, (accel_reduce_op)7, &sum) == ACCEL_ERR_INVALID_ARGUMENT);
    accel_tensor_free(sum);
    accel_tensor_free(mean);
    accel_tensor_free(t);
  }

  CHECK_OK(accel_accelerator_wait_for_everyone(acc));
  printf("rank %d of %d: collectives ok\n", rank, world);
  accel_accelerator_free(acc);
  return 0;
}
