/* libaccel's contestant of bench/lm_bench.sh, in C over the ABI: trains the
   TorchScript GPT-2 that lm_model.py exports with the named forward, AdamW and
   the prepare/backward loop, on random ids (8 x 128 tokens per process per step).

     lm_bench_c MODEL_PT --steps N --warmup N [--threads N] [--gpu 1] [--mixed-precision no|bf16|fp16]

   Threads come from OMP_NUM_THREADS, as for every contestant. --gpu 1 trains
   on the process's GPU (bench/lm_gpu.sh), batches moved there before timing.
   Prints one BENCH_RESULT line per process (tokens/s over all processes, peak RSS). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c99 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "accel/accel.h"

#define CHECK(call)                                                                             \
  do {                                                                                          \
    if ((call) != ACCEL_OK) {                                                                   \
      fprintf(stderr, "lm_bench_c.c:%d: %s failed: %s\n", __LINE__, #call, accel_last_error()); \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

enum { kBatch = 8, kLength = 128, kVocab = 256, kBatches = 4 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A batch of random ids (a per-rank LCG), full attention, labels = ids; built
   before timing, as the Python contestants build theirs. */
static accel_tensor_map* make_batch(uint64_t seed) {
  static int64_t ids[kBatch * kLength], mask[kBatch * kLength];
  for (int i = 0; i < kBatch * kLength; ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    ids[i] = (int64_t)((seed >> 33) % kVocab);
    mask[i] = 1;
  }
  int64_t shape[2] = {kBatch, kLength};
  const char* names[3] = {"input_ids", "attention_mask", "labels"};
  const int64_t* values[3] = {ids, mask, ids};
  accel_tensor_map* map;
  CHECK(accel_tensor_map_create(&map));
  for (int f = 0; f < 3; ++f) {
    accel_tensor* t;
    CHECK(accel_tensor_from_buffer(values[f], sizeof ids, ACCEL_INT64, shape, 2, &t));
    CHECK(accel_tensor_map_set(map, names[f], t));
    accel_tensor_free(t);
  }
  return map;
}

int main(int argc, char** argv) {
  long long steps = 20, warmup = 3;
  int gpu = 0;
  const char* precision = "no";
  if (argc < 2) {
    fprintf(stderr, "usage: lm_bench_c MODEL_PT --steps N --warmup N\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--steps") == 0)
      steps = atoll(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0)
      warmup = atoll(argv[i + 1]);
    else if (strcmp(argv[i], "--gpu") == 0)
      gpu = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--mixed-precision") == 0)
      precision = argv[i + 1];
    /* --threads: set through OMP_NUM_THREADS */
  }
  accel_accelerator_options options;
  accel_accelerator_options_init(&options);
  options.cpu = gpu ? 0 : 1;
  options.mixed_precision = strcmp(precision, "bf16") == 0   ? ACCEL_PRECISION_BF16
                            : strcmp(precision, "fp16") == 0 ? ACCEL_PRECISION_FP16
                                                             : ACCEL_PRECISION_NO;
  accel_accelerator* acc;
  accel_model* model;
  accel_optimizer* optimizer;
  int rank, world;
  CHECK(accel_accelerator_create(&options, &acc));
  CHECK(accel_accelerator_process_index(acc, &rank));
  CHECK(accel_accelerator_num_processes(acc, &world));
  CHECK(accel_model_from_torchscript(argv[1], &model));
  accel_optimizer_options adamw;
  accel_optimizer_options_init(&adamw, ACCEL_OPTIM_ADAMW);
  adamw.lr = 1e-4;
  adamw.weight_decay = 0.01;
  CHECK(accel_optimizer_create(model, &adamw, &optimizer));
  CHECK(accel_accelerator_prepare_model(acc, model));
  CHECK(accel_accelerator_prepare_optimizer(acc, optimizer));
  accel_tensor_map* batches[kBatches];
  for (int b = 0; b < kBatches; ++b) {
    batches[b] = make_batch(1000u * (uint64_t)rank + (uint64_t)b + 1);
    accel_tensor_map* on_device;
    CHECK(accel_accelerator_send_map_to_device(acc, batches[b], &on_device));
    accel_tensor_map_free(batches[b]);
    batches[b] = on_device;
  }

  double start = 0, loss_value = 0;
  for (long long i = 0; i < warmup + steps; ++i) {
    if (i == warmup) start = now();
    accel_tensor_map* outputs;
    accel_tensor* loss;
    CHECK(accel_model_forward_named(model, batches[i % kBatches], &outputs));
    CHECK(accel_tensor_map_get(outputs, "loss", &loss));
    CHECK(accel_accelerator_backward(acc, loss));
    CHECK(accel_optimizer_step(optimizer));
    CHECK(accel_optimizer_zero_grad(optimizer));
    /* After the step: on a GPU, reading the loss waits for everything queued. */
    if (i + 1 == warmup + steps) CHECK(accel_tensor_item(loss, &loss_value));
    accel_tensor_free(loss);
    accel_tensor_map_free(outputs);
  }
  const double seconds = now() - start;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  const char* threads = getenv("OMP_NUM_THREADS");
  printf(
      "BENCH_RESULT "
      "{\"contestant\":\"accel_c\",\"device\":\"%s\",\"precision\":\"%s\",\"rank\":%d,\"nproc\":%d,\"threads\":%d,"
      "\"steps\":%lld,"
      "\"seconds\":%.3f,\"tokens_per_s\":%.1f,\"peak_rss_mb\":%.1f,\"loss\":%.4f}\n",
      gpu ? "cuda" : "cpu", precision, rank, world, threads ? atoi(threads) : 0, steps, seconds,
      (double)(steps * kBatch * kLength * world) / seconds, (double)usage.ru_maxrss / 1024.0, loss_value);
  for (int b = 0; b < kBatches; ++b) accel_tensor_map_free(batches[b]);
  accel_optimizer_free(optimizer);
  accel_model_free(model);
  accel_accelerator_free(acc);
  return 0;
}
