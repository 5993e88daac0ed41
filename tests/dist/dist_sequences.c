/* Variable-length sequences across 2 real processes through the C ABI:
   - a prepared padded loader (one worker thread) gives each rank the batches
     Accelerate's BatchSamplerShard gives it, each padded to its own longest;
   - pad_across_processes then gather_for_metrics over an epoch counts every
     sample exactly once (the duplicate that completes the last round dropped);
   - save_state mid-epoch of a shuffled loader, load_state: the resumed pass
     yields the same remaining batches;
   - a prepared length-grouped loader gives rank r the global batches r, r + 2, ...
     of the unprepared one (the grouping is the same on every process). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <stdint.h>
#include <string.h>

#include "accel/accel_checkpoint.h"
#include "dist_check.h"

#define N 11

static int64_t length_of(int64_t i) { return i % 4 + 1; }

/* The batch's sample indices (first id - 1 of each row) and its padded width. */
static int next_batch(accel_dataloader* dl, int64_t* rows, int64_t* width, accel_tensor** ids_out) {
  accel_tensor* fields[3] = {NULL, NULL, NULL};
  int count = 0, f;
  int64_t shape[2] = {0, 0}, ids[64], mask[64], r, k;
  CHECK_OK(accel_dataloader_next_fields(dl, fields, 3, &count));
  if (count == 0) return 0;
  CHECK(count == 3);
  CHECK_OK(accel_tensor_shape(fields[0], shape, 2));
  CHECK(shape[0] * shape[1] <= 64);
  CHECK_OK(accel_tensor_copy_to(fields[0], ids, (size_t)(shape[0] * shape[1]) * sizeof(int64_t)));
  CHECK_OK(accel_tensor_copy_to(fields[1], mask, (size_t)(shape[0] * shape[1]) * sizeof(int64_t)));
  *width = shape[1];
  for (r = 0; r < shape[0]; ++r) {
    int64_t sum = 0;
    rows[r] = ids[r * shape[1]] - 1;
    for (k = 0; k < shape[1]; ++k) sum += mask[r * shape[1] + k];
    CHECK(sum == length_of(rows[r]));
  }
  for (f = 1; f < 3; ++f) accel_tensor_free(fields[f]);
  if (ids_out) {
    *ids_out = fields[0];
  } else {
    accel_tensor_free(fields[0]);
  }
  return (int)shape[0];
}

int main(void) {
  accel_accelerator* acc = NULL;
  accel_sequences* seqs = NULL;
  accel_dataset* ds = NULL;
  accel_dataloader *dl = NULL, *shuffled = NULL;
  accel_dataloader_options lo = ACCEL_DATALOADER_OPTIONS_INIT;
  int64_t ids[64], offsets[N + 1], total = 0, i, k;
  int rank = 0, world = 0, b, n;
  /* Accelerate's BatchSamplerShard for range(11), batch 2, 2 processes, even_batches. */
  const int64_t expected[2][3][2] = {{{0, 1}, {4, 5}, {8, 9}}, {{2, 3}, {6, 7}, {10, 0}}};
  int seen[N] = {0};
  int64_t rows[8], width = 0, rest[2][16], rest_count = 0;
  CHECK_OK(accel_accelerator_create(NULL, &acc));
  CHECK_OK(accel_accelerator_process_index(acc, &rank));
  CHECK_OK(accel_accelerator_num_processes(acc, &world));
  dist_check_rank = rank;
  CHECK(world == 2);

  offsets[0] = 0;
  for (i = 0; i < N; ++i) {
    for (k = 0; k < length_of(i); ++k) ids[total++] = i + 1;
    offsets[i + 1] = total;
  }
  CHECK_OK(accel_sequences_from_arrays(ids, (size_t)total, offsets, N + 1, NULL, 0, 0, &seqs));
  CHECK_OK(accel_dataset_from_sequences(seqs, NULL, &ds));
  lo.batch_size = 2;
  lo.num_workers = 1;
  CHECK_OK(accel_dataloader_create(ds, &lo, &dl));
  CHECK_OK(accel_accelerator_prepare_dataloader(acc, dl));

  for (b = 0;; ++b) {
    accel_tensor *local = NULL, *padded = NULL, *gathered = NULL;
    int64_t shape[2] = {0, 0}, all[64], longest = 0;
    n = next_batch(dl, rows, &width, &local);
    if (n == 0) break;
    CHECK(b < 3 && n == 2);
    for (k = 0; k < n; ++k) {
      CHECK(rows[k] == expected[rank][b][k]);
      if (length_of(rows[k]) > longest) longest = length_of(rows[k]);
    }
    CHECK(width == longest); /* padded to this rank's own longest */
    /* Variable-length outputs: pad to the longest across processes, then gather. */
    CHECK_OK(accel_accelerator_pad_across_processes(acc, local, 1, -1.0, 0, &padded));
    CHECK_OK(accel_accelerator_gather_for_metrics(acc, padded, &gathered));
    CHECK_OK(accel_tensor_shape(gathered, shape, 2));
    CHECK(shape[0] * shape[1] <= 64);
    CHECK_OK(accel_tensor_copy_to(gathered, all, (size_t)(shape[0] * shape[1]) * sizeof(int64_t)));
    for (k = 0; k < shape[0]; ++k) {
      int64_t sample = all[k * shape[1]] - 1, filled = 0, j;
      CHECK(sample >= 0 && sample < N);
      for (j = 0; j < shape[1]; ++j) filled += all[k * shape[1] + j] == sample + 1;
      CHECK(filled == length_of(sample));
      ++seen[sample];
    }
    accel_tensor_free(gathered);
    accel_tensor_free(padded);
    accel_tensor_free(local);
  }
  for (i = 0; i < N; ++i) CHECK(seen[i] == 1);

  /* Resume mid-epoch from a checkpoint. */
  {
    char dir[64] = "";
    int64_t name[64] = {0}, shape[1] = {64};
    accel_tensor *mine = NULL, *shared = NULL;
    if (rank == 0) {
      strcpy(dir, "/tmp/accel_dist_seq_XXXXXX");
      CHECK(mkdtemp(dir) != NULL);
      strcat(dir, "/ckpt");
      for (k = 0; k < 64; ++k) name[k] = dir[k];
    }
    CHECK_OK(accel_tensor_from_buffer(name, sizeof name, ACCEL_INT64, shape, 1, &mine));
    CHECK_OK(accel_accelerator_broadcast(acc, mine, 0, &shared));
    CHECK_OK(accel_tensor_copy_to(shared, name, sizeof name));
    for (k = 0; k < 64; ++k) dir[k] = (char)name[k];
    accel_tensor_free(shared);
    accel_tensor_free(mine);

    lo.shuffle = 1;
    lo.seed = 5;
    CHECK_OK(accel_dataloader_create(ds, &lo, &shuffled));
    CHECK_OK(accel_accelerator_prepare_dataloader(acc, shuffled));
    CHECK(next_batch(shuffled, rows, &width, NULL) == 2);
    CHECK_OK(accel_accelerator_save_state(acc, dir));
    while ((n = next_batch(shuffled, rows, &width, NULL)) > 0) {
      for (k = 0; k < n; ++k) rest[0][rest_count++] = rows[k];
    }
    CHECK(rest_count == 4);
    CHECK_OK(accel_accelerator_load_state(acc, dir));
    rest_count = 0;
    while ((n = next_batch(shuffled, rows, &width, NULL)) > 0) {
      for (k = 0; k < n; ++k) rest[1][rest_count++] = rows[k];
    }
    CHECK(rest_count == 4);
    CHECK(memcmp(rest[0], rest[1], 4 * sizeof(int64_t)) == 0);
  }

  /* Length-grouped batches of 12 sequences. */
  {
    accel_sequences* twelve = NULL;
    accel_dataset* grouped_ds = NULL;
    accel_dataloader *global = NULL, *local = NULL;
    accel_dataloader_options go = ACCEL_DATALOADER_OPTIONS_INIT;
    int64_t global_rows[6][2], local_rows[2];
    int64_t gids[64], goffsets[13], gtotal = 0;
    goffsets[0] = 0;
    for (i = 0; i < 12; ++i) {
      for (k = 0; k < length_of(i); ++k) gids[gtotal++] = i + 1;
      goffsets[i + 1] = gtotal;
    }
    CHECK_OK(accel_sequences_from_arrays(gids, (size_t)gtotal, goffsets, 13, NULL, 0, 0, &twelve));
    CHECK_OK(accel_dataset_from_sequences(twelve, NULL, &grouped_ds));
    go.batch_size = 2;
    go.seed = 17;
    CHECK_OK(accel_dataloader_create_length_grouped(grouped_ds, &go, &global));
    CHECK_OK(accel_dataloader_create_length_grouped(grouped_ds, &go, &local));
    CHECK_OK(accel_accelerator_prepare_dataloader(acc, local));
    for (b = 0; b < 6; ++b) CHECK(next_batch(global, global_rows[b], &width, NULL) == 2);
    CHECK(next_batch(global, rows, &width, NULL) == 0);
    for (b = 0; b < 3; ++b) {
      CHECK(next_batch(local, local_rows, &width, NULL) == 2);
      CHECK(local_rows[0] == global_rows[2 * b + rank][0] && local_rows[1] == global_rows[2 * b + rank][1]);
    }
    CHECK(next_batch(local, rows, &width, NULL) == 0);
    accel_dataloader_free(local);
    accel_dataloader_free(global);
    accel_dataset_free(grouped_ds);
    accel_sequences_free(twelve);
  }

  accel_dataloader_free(shuffled);
  accel_dataloader_free(dl);
  accel_dataset_free(ds);
  accel_sequences_free(seqs);
  accel_accelerator_free(acc);
  printf("rank %d: dist_sequences passed\n", rank);
  return 0;
}
