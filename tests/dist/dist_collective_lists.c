/* Accelerate parity of the collectives through the C ABI, with 2-4 processes:
   split_between_processes (empty slices for surplus processes, apply_padding,
   the shared split_range rule, lists), lists of tensors for gather, reduce
   (sum/mean/none, scale), broadcast and pad_across_processes,
   broadcast_object. With the argument "debug" (run under `accel launch
   --debug`) it also checks that debug mode is on and that mismatched shapes
   and tensor counts are an error naming them on every process. */
#include <math.h>
#include <string.h>

#include "dist_check.h"

static accel_tensor* make(const float* data, int64_t rows, int64_t cols) {
  /* cols 0: a vector of rows elements */
  int64_t shape[2] = {rows, cols};
  accel_tensor* t = NULL;
  CHECK_OK(accel_tensor_from_buffer(data, sizeof(float) * (size_t)(cols > 0 ? rows * cols : rows), ACCEL_FLOAT32, shape,
                                    cols > 0 ? 2 : 1, &t));
  return t;
}

static int64_t rows_of(const accel_tensor* t) {
  int64_t shape[4] = {0, 0, 0, 0};
  CHECK_OK(accel_tensor_shape(t, shape, 4));
  return shape[0];
}

static void free_all(accel_tensor** ts, int n) {
  for (int i = 0; i < n; ++i) accel_tensor_free(ts[i]);
}

int main(int argc, char** argv) {
  const int debug = argc > 1 && strcmp(argv[1], "debug") == 0;
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  int rank = 0, world = 0, debug_on = -1;
  accel_accelerator_options_init(&opts);
  opts.timeout_ms = 30000;
  CHECK_OK(accel_accelerator_create(&opts, &acc));
  CHECK_OK(accel_accelerator_process_index(acc, &rank));
  CHECK_OK(accel_accelerator_num_processes(acc, &world));
  dist_check_rank = rank;
  CHECK(world >= 2 && world <= 8);
  CHECK_OK(accel_accelerator_debug_mode(acc, &debug_on));
  CHECK(debug_on == debug);

  { /* split_range: fewer items than processes leaves the last one empty. */
    int64_t start = -1, end = -1, padded = -1;
    CHECK_OK(accel_accelerator_split_range(acc, world - 1, 0, &start, &end, &padded));
    if (rank < world - 1)
      CHECK(start == rank && end == rank + 1 && padded == 1);
    else
      CHECK(start == world - 1 && end == world - 1 && padded == 0);
    CHECK_OK(accel_accelerator_split_range(acc, world - 1, 1, &start, &end, &padded));
    CHECK(padded == 1); /* the surplus process gets a copy of the last item */
    /* Accelerate's test_split_between_processes_list: 3P-1 items padded, 3 each. */
    CHECK_OK(accel_accelerator_split_range(acc, 3 * world - 1, 1, &start, &end, &padded));
    CHECK(padded == 3 && end - start == (rank < world - 1 ? 3 : 2));
    CHECK_OK(accel_accelerator_split_range(acc, 2 * world, 0, &start, &end, &padded));
    CHECK(start == 2 * rank && end == 2 * rank + 2 && padded == 2);
    CHECK_OK(accel_accelerator_split_range(acc, 0, 1, &start, &end, &padded));
    CHECK(start == 0 && end == 0 && padded == 0);
  }

  { /* split_between_processes of world-1 rows: the last process gets an empty slice. */
    float data[16];
    accel_tensor *t = NULL, *share = NULL, *padded = NULL;
    float got[2] = {0, 0};
    for (int i = 0; i < 16; ++i) data[i] = (float)i;
    t = make(data, world - 1, 2);
    CHECK_OK(accel_accelerator_split_between_processes(acc, t, 0, &share));
    CHECK(rows_of(share) == (rank < world - 1 ? 1 : 0));
    CHECK_OK(accel_accelerator_split_between_processes(acc, t, 1, &padded));
    CHECK(rows_of(padded) == 1);
    CHECK_OK(accel_tensor_copy_to(padded, got, sizeof got));
    if (rank == world - 1) CHECK(got[0] == (float)(2 * (world - 2)) && got[1] == (float)(2 * (world - 2) + 1));
    accel_tensor_free(padded);
    accel_tensor_free(share);

    /* Lists: the same rows of each (Accelerate's dict of tensors). */
    {
      float labels[8];
      const accel_tensor* in[2];
      accel_tensor* out[2] = {NULL, NULL};
      accel_tensor* l = NULL;
      for (int i = 0; i < 8; ++i) labels[i] = (float)(10 * i);
      l = make(labels, world - 1, 0);
      in[0] = t;
      in[1] = l;
      CHECK_OK(accel_accelerator_split_between_processes_tensors(acc, in, 2, 1, out));
      CHECK(rows_of(out[0]) == 1 && rows_of(out[1]) == 1);
      CHECK_OK(accel_tensor_copy_to(out[1], got, sizeof(float)));
      CHECK(got[0] == (float)(10 * (rank < world - 1 ? rank : world - 2)));
      free_all(out, 2);
      accel_tensor_free(l);
    }
    accel_tensor_free(t);
  }

  { /* gather, reduce, broadcast and pad over a list of tensors */
    float rows[16], vec[3] = {(float)rank, 1.0f, 2.0f * (float)rank}, got[64];
    accel_tensor *a = NULL, *b = NULL;
    const accel_tensor* in[2];
    accel_tensor* out[2] = {NULL, NULL};
    const float total = (float)(world * (world - 1) / 2);
    for (int i = 0; i < 16; ++i) rows[i] = 100.0f * (float)rank + (float)i;
    a = make(rows, rank + 1, 2);
    b = make(vec, 3, 0);
    in[0] = a;
    in[1] = b;

    CHECK_OK(accel_accelerator_gather_tensors(acc, in, 2, out));
    CHECK(rows_of(out[0]) == world * (world + 1) / 2 && rows_of(out[1]) == 3 * world);
    CHECK_OK(accel_tensor_copy_to(out[1], got, sizeof(float) * (size_t)(3 * world)));
    for (int r = 0; r < world; ++r) CHECK(got[3 * r] == (float)r && got[3 * r + 1] == 1.0f);
    free_all(out, 2);

    CHECK_OK(accel_accelerator_gather_for_metrics_tensors(acc, in, 2, out)); /* no loader: all of it */
    CHECK(rows_of(out[0]) == world * (world + 1) / 2);
    free_all(out, 2);

    in[0] = b; /* reduce needs equal shapes: b twice */
    CHECK_OK(accel_accelerator_reduce_tensors(acc, in, 2, ACCEL_REDUCE_SUM, 2.0, out));
    CHECK_OK(accel_tensor_copy_to(out[1], got, sizeof(float) * 3));
    CHECK(got[0] == 2.0f * total && got[1] == 2.0f * (float)world && got[2] == 4.0f * total);
    free_all(out, 2);
    CHECK_OK(accel_accelerator_reduce_tensors(acc, in, 2, ACCEL_REDUCE_NONE, 1.0, out));
    CHECK_OK(accel_tensor_copy_to(out[0], got, sizeof(float) * 3));
    CHECK(got[0] == total && got[1] == (float)world); /* "none": summed, not averaged (Accelerate) */
    free_all(out, 2);
    CHECK_OK(accel_accelerator_reduce_tensors(acc, in, 2, ACCEL_REDUCE_MEAN, 0.5, out));
    CHECK_OK(accel_tensor_copy_to(out[1], got, sizeof(float) * 3));
    CHECK(fabsf(got[0] - 0.5f * total / (float)world) < 1e-6f && fabsf(got[1] - 0.5f) < 1e-6f);
    free_all(out, 2);

    CHECK_OK(accel_accelerator_broadcast_tensors(acc, in, 2, world - 1, out));
    CHECK_OK(accel_tensor_copy_to(out[0], got, sizeof(float) * 3));
    CHECK(got[0] == (float)(world - 1) && got[2] == 2.0f * (float)(world - 1));
    free_all(out, 2);

    in[0] = a; /* pad: a's rows to world, b (no dim 1) unchanged */
    CHECK_OK(accel_accelerator_pad_across_processes_tensors(acc, in, 2, 0, -1.0, 0, out));
    CHECK(rows_of(out[0]) == world && rows_of(out[1]) == 3);
    CHECK_OK(accel_tensor_copy_to(out[0], got, sizeof(float) * (size_t)(2 * world)));
    CHECK(got[0] == 100.0f * (float)rank && got[2 * world - 1] == (rank == world - 1 ? rows[2 * world - 1] : -1.0f));
    free_all(out, 2);
    CHECK_OK(accel_accelerator_pad_across_processes_tensors(acc, in, 2, 1, 0.0, 0, out));
    CHECK(rows_of(out[0]) == rank + 1 && rows_of(out[1]) == 3); /* dim 1 is already equal */
    free_all(out, 2);
    accel_tensor_free(a);
    accel_tensor_free(b);
  }

  { /* broadcast_object from the last process; the others pass nothing */
    char text[32], got[32];
    accel_tensor* bytes = NULL;
    int64_t n = 0;
    snprintf(text, sizeof text, "hello from %d", world - 1);
    if (rank == world - 1)
      CHECK_OK(accel_accelerator_broadcast_object(acc, text, strlen(text), world - 1, &bytes));
    else
      CHECK_OK(accel_accelerator_broadcast_object(acc, NULL, 0, world - 1, &bytes));
    CHECK_OK(accel_tensor_numel(bytes, &n));
    CHECK(n == (int64_t)strlen(text));
    CHECK_OK(accel_tensor_copy_to(bytes, got, (size_t)n));
    CHECK(memcmp(got, text, (size_t)n) == 0);
    accel_tensor_free(bytes);
  }

  if (debug) { /* mismatches are errors naming the shapes on every process */
    float data[8] = {0};
    accel_tensor* mine = make(data, 1 + (rank == 1), 2);
    accel_tensor* out = NULL;
    const accel_tensor* in[2];
    accel_tensor* outs[2] = {NULL, NULL};
    CHECK(accel_accelerator_reduce(acc, mine, ACCEL_REDUCE_SUM, &out) == ACCEL_ERR_INVALID_ARGUMENT);
    CHECK(out == NULL);
    CHECK(strstr(accel_last_error(), "rank 1 passed Float[2, 2] but rank 0 passed Float[1, 2]") != NULL);
    CHECK(accel_accelerator_broadcast(acc, mine, 0, &out) == ACCEL_ERR_INVALID_ARGUMENT);
    CHECK(strstr(accel_last_error(), "Float[2, 2]") != NULL);
    in[0] = mine;
    in[1] = mine;
    CHECK(accel_accelerator_reduce_tensors(acc, in, rank == 0 ? 2 : 1, ACCEL_REDUCE_SUM, 1.0, outs) ==
          ACCEL_ERR_INVALID_ARGUMENT);
    CHECK(strstr(accel_last_error(), "tensors but rank") != NULL);
    CHECK(outs[0] == NULL && outs[1] == NULL);
    accel_tensor_free(mine);
  }

  CHECK_OK(accel_accelerator_wait_for_everyone(acc));
  printf("rank %d of %d: collective lists ok%s\n", rank, world, debug ? " (debug mode)" : "");
  accel_accelerator_free(acc);
  return 0;
}
