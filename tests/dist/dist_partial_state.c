/* Accelerate's PartialState through the C ABI, on 2 or 3 processes: a partial
   state before any accelerator, two accelerators alive beside it sharing its
   process group (each one's collectives and the state's barrier interleaved),
   main-process-first ordering seen through a file, split_range, and a second
   state that would need another group refused with STATE. Run by
   `accel launch --nproc_per_node N dist_partial_state FILE` (FILE: a scratch path). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist_check.h"

static double reduce_sum(accel_accelerator* acc, double value) {
  accel_tensor *mine = NULL, *sum = NULL;
  double out = 0;
  CHECK_OK(accel_tensor_from_buffer(&value, sizeof value, ACCEL_FLOAT64, NULL, 0, &mine));
  CHECK_OK(accel_accelerator_reduce(acc, mine, ACCEL_REDUCE_SUM, &sum));
  CHECK_OK(accel_tensor_copy_to(sum, &out, sizeof out));
  accel_tensor_free(sum);
  accel_tensor_free(mine);
  return out;
}

int main(int argc, char** argv) {
  accel_partial_state_options opts;
  accel_partial_state* state = NULL;
  int rank = -1, local = -1, world = 0;
  CHECK(argc == 2);
  if (strcmp(getenv("RANK"), "0") == 0) unlink(argv[1]); /* no file from an earlier run */
  accel_partial_state_options_init(&opts);
  opts.cpu = 1;
  opts.timeout_ms = 30000;
  CHECK_OK(accel_partial_state_create(&opts, &state));
  CHECK_OK(accel_partial_state_process_index(state, &rank));
  CHECK_OK(accel_partial_state_local_process_index(state, &local));
  CHECK_OK(accel_partial_state_num_processes(state, &world));
  dist_check_rank = rank;
  CHECK(world >= 2 && rank == atoi(getenv("RANK")) && local == rank);
  {
    accel_distributed_type type;
    const char* device = NULL;
    CHECK_OK(accel_partial_state_distributed_type(state, &type));
    CHECK(type == ACCEL_DISTRIBUTED_MULTI_CPU);
    CHECK_OK(accel_partial_state_device(state, &device));
    CHECK(strcmp(device, "cpu") == 0);
  }

  /* main_process_first by hand: the main process writes, the others wait, then read. */
  {
    const char* path = argv[1];
    if (rank != 0) CHECK_OK(accel_partial_state_wait_for_everyone(state));
    if (rank == 0) {
      FILE* f = fopen(path, "w");
      CHECK(f != NULL);
      usleep(200000); /* the others would see no file if they did not wait */
      fputs("ready", f);
      fclose(f);
    } else {
      char text[16] = {0};
      FILE* f = fopen(path, "r");
      CHECK(f != NULL && fgets(text, sizeof text, f) != NULL && strcmp(text, "ready") == 0);
      fclose(f);
    }
    if (rank == 0) CHECK_OK(accel_partial_state_wait_for_everyone(state));
  }

  /* split_range: the first n % world processes take one more. */
  {
    int64_t start = -1, end = -1, padded = -1;
    const int64_t n = 7, per = n / world, extras = n % world;
    CHECK_OK(accel_partial_state_split_range(state, n, 1, &start, &end, &padded));
    CHECK(start == rank * per + (rank < extras ? rank : extras));
    CHECK(end - start == per + (rank < extras ? 1 : 0));
    CHECK(padded == per + (extras > 0 ? 1 : 0));
  }

  /* Two accelerators beside the state, on its group: without sharing, the second
     TCPStore on MASTER_PORT could not even start. */
  {
    accel_accelerator_options aopts;
    accel_accelerator *first = NULL, *second = NULL;
    int64_t timeout_ms = 0;
    accel_accelerator_options_init(&aopts);
    aopts.cpu = 1;
    aopts.timeout_ms = 5000; /* the group keeps the state's 30 s */
    CHECK_OK(accel_accelerator_create(&aopts, &first));
    CHECK_OK(accel_accelerator_timeout_ms(first, &timeout_ms));
    CHECK(timeout_ms == 30000);
    CHECK_OK(accel_accelerator_create(&aopts, &second));
    CHECK(reduce_sum(first, rank + 1.0) == world * (world + 1) / 2.0);
    CHECK_OK(accel_partial_state_wait_for_everyone(state));
    CHECK(reduce_sum(second, 10.0 * rank) == 10.0 * world * (world - 1) / 2.0);
    CHECK_OK(accel_accelerator_wait_for_everyone(first));
    accel_accelerator_free(first);
    CHECK(reduce_sum(second, 1.0) == world);
    accel_accelerator_free(second);
  }

  /* While this group lives, a state for another store is refused, naming both. */
  {
    const char* port = getenv("MASTER_PORT");
    char saved[32];
    accel_partial_state* other = NULL;
    snprintf(saved, sizeof saved, "%s", port);
    setenv("MASTER_PORT", "1", 1);
    CHECK(accel_partial_state_create(&opts, &other) == ACCEL_ERR_STATE);
    CHECK(strstr(accel_last_error(), ":1 on cpu") != NULL);
    CHECK(other == NULL);
    setenv("MASTER_PORT", saved, 1);
    /* the same settings join the same group */
    CHECK_OK(accel_partial_state_create(&opts, &other));
    CHECK_OK(accel_partial_state_wait_for_everyone(other));
    accel_partial_state_free(other);
  }

  CHECK_OK(accel_partial_state_wait_for_everyone(state));
  accel_partial_state_free(state);
  return 0;
}
