/* Collectives and process control through the C ABI with 2 or 3 processes:
   broadcast, pad_across_processes, gather_object, split_between_processes,
   triggers and main_process_first. */
#include <string.h>

#include "dist_check.h"

static double item(accel_tensor* t) {
  double v = 0;
  CHECK_OK(accel_tensor_item(t, &v));
  return v;
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

  { /* broadcast from the last process */
    float mine = (float)(10 * rank);
    int64_t shape[1] = {1};
    accel_tensor *t = NULL, *got = NULL;
    CHECK_OK(accel_tensor_from_buffer(&mine, sizeof mine, ACCEL_FLOAT32, shape, 1, &t));
    CHECK_OK(accel_accelerator_broadcast(acc, t, world - 1, &got));
    CHECK(item(got) == 10.0 * (world - 1));
    CHECK(accel_accelerator_broadcast(acc, t, world, &got) == ACCEL_ERR_INVALID_ARGUMENT);
    accel_tensor_free(got);
    accel_tensor_free(t);
  }
  { /* pad_across_processes: rank r has r+1 elements, padded to world with -1 first */
    float data[8] = {1, 1, 1, 1, 1, 1, 1, 1}, got[8];
    int64_t shape[1] = {rank + 1}, n = 0;
    accel_tensor *t = NULL, *padded = NULL;
    CHECK_OK(accel_tensor_from_buffer(data, sizeof(float) * (size_t)(rank + 1), ACCEL_FLOAT32, shape, 1, &t));
    CHECK_OK(accel_accelerator_pad_across_processes(acc, t, 0, -1.0, 1, &padded));
    CHECK_OK(accel_tensor_numel(padded, &n));
    CHECK(n == world);
    CHECK_OK(accel_tensor_copy_to(padded, got, sizeof(float) * (size_t)world));
    for (int i = 0; i < world; ++i) CHECK(got[i] == (i < world - rank - 1 ? -1.0f : 1.0f));
    accel_tensor_free(padded);
    accel_tensor_free(t);
  }
  { /* gather_object: rank r sends r+1 bytes 'a'+r */
    char mine[8], all[64];
    int64_t lengths[8];
    accel_tensor *bytes = NULL, *sizes = NULL;
    int64_t total = 0, offset = 0;
    memset(mine, 'a' + rank, sizeof mine);
    CHECK_OK(accel_accelerator_gather_object(acc, mine, (size_t)(rank + 1), &bytes, &sizes));
    CHECK_OK(accel_tensor_numel(bytes, &total));
    CHECK(total == world * (world + 1) / 2);
    CHECK_OK(accel_tensor_copy_to(bytes, all, (size_t)total));
    CHECK_OK(accel_tensor_copy_to(sizes, lengths, sizeof(int64_t) * (size_t)world));
    for (int r = 0; r < world; ++r) {
      CHECK(lengths[r] == r + 1);
      for (int i = 0; i < r + 1; ++i) CHECK(all[offset + i] == 'a' + r);
      offset += lengths[r];
    }
    accel_tensor_free(bytes);
    accel_tensor_free(sizes);
  }
  { /* split_between_processes: 7 rows; with padding every share has ceil(7/world) rows */
    int64_t rows[7] = {0, 1, 2, 3, 4, 5, 6}, shape[1] = {7}, n = 0, got[8];
    int64_t per = 7 / world, extras = 7 % world;
    int64_t start = rank * per + (rank < extras ? rank : extras);
    accel_tensor *t = NULL, *share = NULL, *padded = NULL;
    CHECK_OK(accel_tensor_from_buffer(rows, sizeof rows, ACCEL_INT64, shape, 1, &t));
    CHECK_OK(accel_accelerator_split_between_processes(acc, t, 0, &share));
    CHECK_OK(accel_tensor_numel(share, &n));
    CHECK(n == per + (rank < extras ? 1 : 0));
    CHECK_OK(accel_tensor_copy_to(share, got, sizeof(int64_t) * (size_t)n));
    for (int64_t i = 0; i < n; ++i) CHECK(got[i] == start + i);
    CHECK_OK(accel_accelerator_split_between_processes(acc, t, 1, &padded));
    CHECK_OK(accel_tensor_numel(padded, &n));
    CHECK(n == per + (extras > 0 ? 1 : 0));
    accel_tensor_free(padded);
    accel_tensor_free(share);
    accel_tensor_free(t);
  }
  { /* triggers: only the last rank raises one; everybody sees it once */
    int fired = -1;
    CHECK_OK(accel_accelerator_check_trigger(acc, &fired));
    CHECK(fired == 0);
    if (rank == world - 1) CHECK_OK(accel_accelerator_set_trigger(acc));
    CHECK_OK(accel_accelerator_check_trigger(acc, &fired));
    CHECK(fired == 1);
    CHECK_OK(accel_accelerator_check_trigger(acc, &fired));
    CHECK(fired == 0);
  }
  { /* main_process_first: the main process finishes its part before the others start */
    accel_tensor *flag = NULL, *seen = NULL;
    float done = 0;
    int64_t shape[1] = {1};
    CHECK_OK(accel_accelerator_main_process_first_begin(acc));
    done = 1; /* "the work" */
    CHECK_OK(accel_accelerator_main_process_first_end(acc));
    CHECK_OK(accel_tensor_from_buffer(&done, sizeof done, ACCEL_FLOAT32, shape, 1, &flag));
    CHECK_OK(accel_accelerator_reduce(acc, flag, ACCEL_REDUCE_SUM, &seen));
    CHECK(item(seen) == world);
    accel_tensor_free(seen);
    accel_tensor_free(flag);
  }
  CHECK_OK(accel_accelerator_free_memory(acc));
  printf("rank %d: process control ok\n", rank);
  accel_accelerator_free(acc);
  return 0;
}
