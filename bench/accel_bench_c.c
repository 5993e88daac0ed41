/* Contestant (b): libaccel through the C ABI from a C program, the same loop
   as accel_bench.cpp. Threads come from OMP_NUM_THREADS (the C ABI has no
   thread setter); the result line reports what LibTorch was told.
     OMP_NUM_THREADS=2 build/bin/accel_bench_c --workload tiny --steps 2000 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "accel/accel.h"

#define CHECK(call)                                                          \
  do {                                                                       \
    if ((call) != ACCEL_OK) {                                                \
      fprintf(stderr, "accel_bench_c: %s: %s\n", #call, accel_last_error()); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

struct workload {
  const char* name;
  int64_t batch;
  int64_t shape[4]; /* batch first, filled in main */
  size_t ndim;
  size_t sample; /* floats per sample */
  const char* json;
};

static const struct workload kWorkloads[] = {
    {"tiny",
     32,
     {0, 784},
     2,
     784,
     "[{\"type\":\"Linear\",\"in_features\":784,\"out_features\":128},{\"type\":\"ReLU\"},"
     "{\"type\":\"Linear\",\"in_features\":128,\"out_features\":10}]"},
    {"mlp",
     64,
     {0, 784},
     2,
     784,
     "[{\"type\":\"Linear\",\"in_features\":784,\"out_features\":1024},{\"type\":\"ReLU\"},"
     "{\"type\":\"Linear\",\"in_features\":1024,\"out_features\":1024},{\"type\":\"ReLU\"},"
     "{\"type\":\"Linear\",\"in_features\":1024,\"out_features\":10}]"},
    {"cnn",
     32,
     {0, 1, 28, 28},
     4,
     784,
     "[{\"type\":\"Conv2d\",\"in_channels\":1,\"out_channels\":512,\"kernel_size\":3},"
     "{\"type\":\"MaxPool2d\",\"kernel_size\":2,\"stride\":2},"
     "{\"type\":\"Conv2d\",\"in_channels\":512,\"out_channels\":256,\"kernel_size\":5},"
     "{\"type\":\"MaxPool2d\",\"kernel_size\":2,\"stride\":2},{\"type\":\"Dropout2d\",\"p\":0.1},"
     "{\"type\":\"AdaptiveMaxPool2d\",\"output_size\":[1,1]},{\"type\":\"Flatten\"},"
     "{\"type\":\"Linear\",\"in_features\":256,\"out_features\":128},{\"type\":\"ReLU\"},"
     "{\"type\":\"Linear\",\"in_features\":128,\"out_features\":10}]"},
    {"sync",
     8,
     {0, 4096},
     2,
     4096,
     "[{\"type\":\"Linear\",\"in_features\":4096,\"out_features\":4096},{\"type\":\"ReLU\"},"
     "{\"type\":\"Linear\",\"in_features\":4096,\"out_features\":4096},{\"type\":\"ReLU\"},"
     "{\"type\":\"Linear\",\"in_features\":4096,\"out_features\":4096},{\"type\":\"ReLU\"},"
     "{\"type\":\"Linear\",\"in_features\":4096,\"out_features\":4096},{\"type\":\"ReLU\"},"
     "{\"type\":\"Linear\",\"in_features\":4096,\"out_features\":10}]"},
};

enum { kBatches = 4 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Box-Muller normal samples from a fixed-seed rand(). */
static float normal(void) {
  double u = ((double)rand() + 1.0) / ((double)RAND_MAX + 2.0), v = (double)rand() / ((double)RAND_MAX + 1.0);
  double r = -2.0 * log(u);
  return (float)(sqrt(r) * cos(6.283185307179586 * v));
}

int main(int argc, char** argv) {
  const char* name = "tiny";
  long long steps = 100, warmup = 5;
  const struct workload* w = NULL;
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  accel_tensor *x[kBatches], *y[kBatches];
  int rank = 0, world = 1, i;
  long long s;
  double start, seconds, sps;
  struct rusage usage;
  const char* threads = getenv("OMP_NUM_THREADS");

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--workload") == 0 && i + 1 < argc)
      name = argv[++i];
    else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      steps = atoll(argv[++i]);
    else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
      warmup = atoll(argv[++i]);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      ++i; /* set through OMP_NUM_THREADS */
    else {
      fprintf(stderr, "accel_bench_c: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  for (i = 0; i < (int)(sizeof kWorkloads / sizeof kWorkloads[0]); ++i)
    if (strcmp(kWorkloads[i].name, name) == 0) w = &kWorkloads[i];
  if (w == NULL) {
    fprintf(stderr, "accel_bench_c: unknown workload '%s'\n", name);
    return 2;
  }

  CHECK(accel_accelerator_create(NULL, &acc));
  CHECK(accel_accelerator_process_index(acc, &rank));
  CHECK(accel_accelerator_num_processes(acc, &world));
  CHECK(accel_model_from_json(w->json, &model));
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_ADAMW);
  oopts.lr = 1e-3;
  oopts.weight_decay = 0.01;
  CHECK(accel_optimizer_create(model, &oopts, &opt));
  CHECK(accel_accelerator_prepare_model(acc, model));
  CHECK(accel_accelerator_prepare_optimizer(acc, opt));

  srand(1234u + (unsigned)rank);
  {
    size_t n = (size_t)w->batch * w->sample, k;
    float* xs = malloc(n * sizeof *xs);
    int64_t* ys = malloc((size_t)w->batch * sizeof *ys);
    int64_t shape[4], yshape[1];
    memcpy(shape, w->shape, sizeof shape);
    shape[0] = w->batch;
    yshape[0] = w->batch;
    for (i = 0; i < kBatches; ++i) {
      for (k = 0; k < n; ++k) xs[k] = normal();
      for (k = 0; k < (size_t)w->batch; ++k) ys[k] = rand() % 10;
      CHECK(accel_tensor_from_buffer(xs, n * sizeof *xs, ACCEL_FLOAT32, shape, w->ndim, &x[i]));
      CHECK(accel_tensor_from_buffer(ys, (size_t)w->batch * sizeof *ys, ACCEL_INT64, yshape, 1, &y[i]));
    }
    free(xs);
    free(ys);
  }

  start = 0;
  for (s = -warmup; s < steps; ++s) {
    accel_tensor *logits = NULL, *loss = NULL;
    int b = (int)((s + warmup) % kBatches);
    if (s == 0) {
      CHECK(accel_accelerator_wait_for_everyone(acc));
      start = now();
    }
    CHECK(accel_optimizer_zero_grad(opt));
    CHECK(accel_model_forward(model, x[b], &logits));
    CHECK(accel_loss(ACCEL_LOSS_CROSS_ENTROPY, logits, y[b], &loss));
    CHECK(accel_accelerator_backward(acc, loss));
    CHECK(accel_optimizer_step(opt));
    accel_tensor_free(loss);
    accel_tensor_free(logits);
  }
  seconds = now() - start;
  sps = (double)steps / seconds;
  getrusage(RUSAGE_SELF, &usage);
  printf(
      "BENCH_RESULT {\"contestant\":\"accel_c\",\"workload\":\"%s\",\"rank\":%d,\"nproc\":%d,\"threads\":%d,"
      "\"steps\":%lld,\"seconds\":%.4f,\"steps_per_s\":%.3f,\"samples_per_s\":%.1f,\"peak_rss_mb\":%.1f}\n",
      w->name, rank, world, threads ? atoi(threads) : 0, steps, seconds, sps, sps * (double)w->batch * world,
      (double)usage.ru_maxrss / 1024.0);
  fflush(stdout);
  for (i = 0; i < kBatches; ++i) {
    accel_tensor_free(x[i]);
    accel_tensor_free(y[i]);
  }
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_accelerator_free(acc);
  return 0;
}
