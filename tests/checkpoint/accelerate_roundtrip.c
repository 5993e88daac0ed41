/* libaccel's side of the checkpoint round trip with Python Accelerate 0.22
   through the C ABI (issue 20), run by `accel launch` on every process
   (test_accelerate_roundtrip.py drives it):

     resume: load_state(OUT/checkpoint), which Accelerate saved after STEPS
             micro-steps, then micro-steps STEPS .. 2*STEPS-1;
     save:   micro-steps 0 .. STEPS-1, save_state(OUT/checkpoint) with
             safe_serialization = 0 (pytorch_model.bin, what Accelerate 0.22
             reads), then micro-steps STEPS .. 2*STEPS-1.

   Either way the final weights go to OUT/c_final/model.safetensors. The model,
   data, hyperparameters and schedules are those of
   bindings/python/tests/programs/accelerate_trainer.py: the JSON spec of its
   nn.Sequential, batch i of rank r is global batch i * world + r (what
   Accelerate's prepared DataLoader gives rank r without shuffling), and the
   data are a formula both sides compute exactly.

   usage: accelerate_roundtrip resume|save sgd|adamw none|warmup|onecycle ACCUM STEPS OUT */
#include <stdio.h>
#include <string.h>

#include "../dist/dist_check.h"
#include "accel/accel_checkpoint.h"

enum { kBatch = 4, kIn = 4, kOut = 2, kTotalSteps = 1000 };

static const char* kSpec =
    "[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 8}, {\"type\": \"Tanh\"},"
    " {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 2}]";

/* Global batch b: sample k = kBatch * b + i, feature j; the trainer's data(). */
static void batch(int64_t b, float* x, float* y) {
  for (int i = 0; i < kBatch; ++i) {
    const int64_t k = kBatch * b + i;
    for (int j = 0; j < kIn; ++j) x[i * kIn + j] = (float)((double)((k * 7 + j * 13) % 29) / 14.0 - 1.0);
    for (int j = 0; j < kOut; ++j) y[i * kOut + j] = (float)((double)((k * 5 + j * 11) % 23) / 11.0 - 1.0);
  }
}

static void train(accel_accelerator* acc, accel_model* model, accel_optimizer* opt, accel_scheduler* sched,
                  int64_t first, int64_t last, int rank, int world) {
  const int64_t x_shape[2] = {kBatch, kIn}, y_shape[2] = {kBatch, kOut};
  float x[kBatch * kIn], y[kBatch * kOut];
  for (int64_t step = first; step < last; ++step) {
    accel_tensor *input = NULL, *target = NULL, *output = NULL, *loss = NULL;
    batch(step * world + rank, x, y);
    CHECK_OK(accel_tensor_from_buffer(x, sizeof x, ACCEL_FLOAT32, x_shape, 2, &input));
    CHECK_OK(accel_tensor_from_buffer(y, sizeof y, ACCEL_FLOAT32, y_shape, 2, &target));
    CHECK_OK(accel_accelerator_accumulate_begin(acc, model));
    CHECK_OK(accel_model_forward(model, input, &output));
    CHECK_OK(accel_loss(ACCEL_LOSS_MSE, output, target, &loss));
    CHECK_OK(accel_accelerator_backward(acc, loss));
    CHECK_OK(accel_optimizer_step(opt));
    if (sched) CHECK_OK(accel_scheduler_step(sched));
    CHECK_OK(accel_optimizer_zero_grad(opt));
    CHECK_OK(accel_accelerator_accumulate_end(acc, model));
    accel_tensor_free(loss);
    accel_tensor_free(output);
    accel_tensor_free(target);
    accel_tensor_free(input);
  }
}

int main(int argc, char** argv) {
  CHECK(argc == 7);
  const int resume = strcmp(argv[1], "resume") == 0, sgd = strcmp(argv[2], "sgd") == 0;
  const char* schedule = argv[3];
  const int64_t accumulation = atoll(argv[4]), steps = atoll(argv[5]);
  char checkpoint[4096], final_dir[4096];
  snprintf(checkpoint, sizeof checkpoint, "%s/checkpoint", argv[6]);
  snprintf(final_dir, sizeof final_dir, "%s/c_final", argv[6]);
  CHECK((resume || strcmp(argv[1], "save") == 0) && accumulation >= 1 && steps >= 1);

  accel_accelerator_options options;
  accel_accelerator_options_init(&options);
  options.cpu = 1;
  options.gradient_accumulation_steps = accumulation;
  accel_accelerator* acc = NULL;
  int rank = 0, world = 0;
  CHECK_OK(accel_accelerator_create(&options, &acc));
  CHECK_OK(accel_accelerator_process_index(acc, &rank));
  CHECK_OK(accel_accelerator_num_processes(acc, &world));
  dist_check_rank = rank;
  CHECK_OK(accel_accelerator_set_seed(acc, 0));

  accel_model* model = NULL;
  CHECK_OK(accel_model_from_json(kSpec, &model));
  accel_optimizer_options opt_options;
  accel_optimizer_options_init(&opt_options, sgd ? ACCEL_OPTIM_SGD : ACCEL_OPTIM_ADAMW);
  opt_options.lr = sgd ? 0.05 : 0.01;
  if (sgd) opt_options.momentum = 0.9;
  accel_optimizer* opt = NULL;
  CHECK_OK(accel_optimizer_create(model, &opt_options, &opt));
  accel_scheduler* sched = NULL;
  if (strcmp(schedule, "none") != 0) {
    const int warmup = strcmp(schedule, "warmup") == 0;
    CHECK(warmup || strcmp(schedule, "onecycle") == 0);
    accel_scheduler_options s;
    accel_scheduler_options_init(&s, warmup ? ACCEL_SCHED_LINEAR_WARMUP : ACCEL_SCHED_ONE_CYCLE);
    if (warmup) { /* transformers' get_linear_schedule_with_warmup(opt, 10, kTotalSteps) */
      s.num_warmup_steps = 10;
      s.num_training_steps = kTotalSteps;
    } else { /* OneCycleLR(opt, max_lr=2 * lr, total_steps=kTotalSteps, cycle_momentum=False) */
      s.max_lr = 2 * opt_options.lr;
      s.total_steps = kTotalSteps;
    }
    CHECK_OK(accel_scheduler_create(opt, &s, &sched));
  }
  CHECK_OK(accel_accelerator_prepare_model(acc, model));
  CHECK_OK(accel_accelerator_prepare_optimizer(acc, opt));
  if (sched) CHECK_OK(accel_accelerator_prepare_scheduler(acc, sched));

  if (resume) {
    CHECK_OK(accel_accelerator_load_state(acc, checkpoint));
  } else {
    train(acc, model, opt, sched, 0, steps, rank, world);
    CHECK_OK(accel_accelerator_save_state_ext(acc, checkpoint, 0));
  }
  train(acc, model, opt, sched, steps, 2 * steps, rank, world);
  CHECK_OK(accel_accelerator_save_model(acc, model, final_dir, NULL, 1));

  accel_scheduler_free(sched);
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_accelerator_free(acc);
  if (rank == 0) printf("accelerate_roundtrip %s ok %d\n", argv[1], world);
  return 0;
}
