/* A small training run through the C ABI for the scheduler tests
 * (run_under_mpirun.sh, run_under_slurm.sh): started by accel launch, by
 * mpirun or by srun, it trains the same model on the same data and writes the
 * trained parameters to OUT_DIR/model.safetensors, which must then be equal
 * bitwise whoever started the ranks. It prints where its rank came from.
 * Usage: dist_scheduler_training OUT_DIR */
#include <stdio.h>
#include <stdlib.h>

#include "accel/accel.h"
#include "accel/accel_checkpoint.h"

static const char* kSpec =
    "[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 16},"
    " {\"type\": \"ReLU\"},"
    " {\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 3}]";

#define CHECK(call)                                                                             \
  do {                                                                                          \
    if ((call) != ACCEL_OK) {                                                                   \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, accel_last_error()); \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

/* 96 points in 3 clusters, the same in every process. */
static accel_dataset* make_dataset(void) {
  enum { N = 96 };
  static float x[N * 4];
  static int64_t y[N];
  int64_t xshape[2] = {N, 4}, yshape[1] = {N};
  accel_tensor *inputs = NULL, *targets = NULL;
  accel_dataset* dataset = NULL;
  unsigned state = 3;
  for (int i = 0; i < N; ++i) {
    y[i] = i % 3;
    for (int j = 0; j < 4; ++j) {
      state = state * 1103515245u + 12345u;
      x[i * 4 + j] = (float)(y[i] == j % 3 ? 2.0 : -1.0) + (float)((state >> 16) % 100) / 200.0f;
    }
  }
  CHECK(accel_tensor_from_buffer(x, sizeof x, ACCEL_FLOAT32, xshape, 2, &inputs));
  CHECK(accel_tensor_from_buffer(y, sizeof y, ACCEL_INT64, yshape, 1, &targets));
  CHECK(accel_dataset_from_tensors(inputs, targets, &dataset));
  accel_tensor_free(inputs);
  accel_tensor_free(targets);
  return dataset;
}

int main(int argc, char** argv) {
  accel_accelerator_options aopts;
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  accel_dataloader_options lopts = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_dataloader* loader = NULL;
  accel_dataset* dataset = NULL;
  int rank = 0, world = 0;
  double last = 0;
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  accel_accelerator_options_init(&aopts);
  aopts.timeout_ms = 60000;
  CHECK(accel_accelerator_create(&aopts, &acc));
  CHECK(accel_accelerator_process_index(acc, &rank));
  CHECK(accel_accelerator_num_processes(acc, &world));
  printf("rank %d of %d\n", rank, world);
  fflush(stdout);
  CHECK(accel_accelerator_set_seed(acc, 0));

  CHECK(accel_model_from_json(kSpec, &model));
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_ADAM);
  oopts.lr = 0.01;
  CHECK(accel_optimizer_create(model, &oopts, &opt));
  dataset = make_dataset();
  lopts.batch_size = 8;
  lopts.shuffle = 1;
  lopts.seed = 5;
  CHECK(accel_dataloader_create(dataset, &lopts, &loader));
  accel_dataset_free(dataset);
  CHECK(accel_accelerator_prepare_model(acc, model));
  CHECK(accel_accelerator_prepare_optimizer(acc, opt));
  CHECK(accel_accelerator_prepare_dataloader(acc, loader));

  for (int epoch = 0; epoch < 3; ++epoch) {
    for (;;) {
      accel_tensor *x = NULL, *y = NULL, *logits = NULL, *loss = NULL;
      CHECK(accel_dataloader_next(loader, &x, &y));
      if (x == NULL) break;
      CHECK(accel_optimizer_zero_grad(opt));
      CHECK(accel_model_forward(model, x, &logits));
      CHECK(accel_loss(ACCEL_LOSS_CROSS_ENTROPY, logits, y, &loss));
      CHECK(accel_accelerator_backward(acc, loss));
      CHECK(accel_optimizer_step(opt));
      CHECK(accel_tensor_item(loss, &last));
      accel_tensor_free(loss);
      accel_tensor_free(logits);
      accel_tensor_free(x);
      accel_tensor_free(y);
    }
  }
  printf("rank %d: final loss %.6f\n", rank, last);
  CHECK(accel_accelerator_save_model(acc, model, argv[1], NULL, 1));

  accel_dataloader_free(loader);
  accel_optimizer_free(opt);
  accel_accelerator_free(acc);
  accel_model_free(model);
  return 0;
}
