/* Schedulers, accumulation and clipping through the C ABI, with their error paths. */
#include <math.h>

#include "capi_test.h"

static const char* kSpec = "[{\"type\": \"Linear\", \"in_features\": 2, \"out_features\": 1}]";

static void test_scheduler(void) {
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  accel_scheduler* sched = NULL;
  accel_scheduler_options sopts;
  int64_t milestones[2] = {2, 4}, epoch = 0;
  double lr = 0;

  EXPECT_OK(accel_model_from_json(kSpec, &model));
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_SGD);
  oopts.lr = 1.0;
  EXPECT_OK(accel_optimizer_create(model, &oopts, &opt));
  accel_scheduler_options_init(&sopts, ACCEL_SCHED_MULTI_STEP);
  sopts.milestones = milestones;
  sopts.num_milestones = 2;
  sopts.gamma = 0.5;
  EXPECT_OK(accel_scheduler_create(opt, &sopts, &sched));
  accel_optimizer_free(opt); /* the scheduler keeps the optimizer alive */
  for (int i = 0; i < 5; ++i) EXPECT_OK(accel_scheduler_step(sched));
  EXPECT_OK(accel_scheduler_get_last_lr(sched, &lr));
  EXPECT(fabs(lr - 0.25) < 1e-12);
  EXPECT_OK(accel_scheduler_last_epoch(sched, &epoch));
  EXPECT(epoch == 5);
  EXPECT_ERROR(accel_scheduler_step_metric(sched, 1.0), ACCEL_ERR_INVALID_ARGUMENT, "ReduceOnPlateau");
  accel_scheduler_free(sched);
  sched = NULL;

  EXPECT_OK(accel_optimizer_create(model, &oopts, &opt));
  accel_scheduler_options_init(&sopts, ACCEL_SCHED_STEP);
  sopts.step_size = 0;
  EXPECT_ERROR(accel_scheduler_create(opt, &sopts, &sched), ACCEL_ERR_INVALID_ARGUMENT, "step_size");
  accel_scheduler_options_init(&sopts, (accel_scheduler_kind)99);
  EXPECT_ERROR(accel_scheduler_create(opt, &sopts, &sched), ACCEL_ERR_INVALID_ARGUMENT, "kind 99");
  accel_scheduler_options_init(&sopts, ACCEL_SCHED_MULTI_STEP);
  sopts.num_milestones = 3;
  EXPECT_ERROR(accel_scheduler_create(opt, &sopts, &sched), ACCEL_ERR_INVALID_ARGUMENT, "milestones is NULL");
  EXPECT(sched == NULL);
  accel_optimizer_free(opt);
  accel_model_free(model);
}

static void test_accumulation(void) {
  accel_accelerator_options aopts;
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  int64_t steps = 0, counted[4];
  int pattern[4], sync = 0, skipped = 1;
  double norm = -1, scale = 0;
  float x[2] = {1, 2}, y[1] = {3};
  int64_t xshape[2] = {1, 2}, yshape[2] = {1, 1};
  accel_tensor *xt = NULL, *yt = NULL;

  accel_accelerator_options_init(&aopts);
  aopts.gradient_accumulation_steps = 2;
  EXPECT_OK(accel_accelerator_create(&aopts, &acc));
  EXPECT_OK(accel_accelerator_gradient_accumulation_steps(acc, &steps));
  EXPECT(steps == 2);
  EXPECT_OK(accel_accelerator_loss_scale(acc, &scale));
  EXPECT(scale == 1.0);
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_SGD);
  EXPECT_OK(accel_optimizer_create(model, &oopts, &opt));
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  EXPECT_OK(accel_accelerator_prepare_optimizer(acc, opt));
  EXPECT_OK(accel_tensor_from_buffer(x, sizeof x, ACCEL_FLOAT32, xshape, 2, &xt));
  EXPECT_OK(accel_tensor_from_buffer(y, sizeof y, ACCEL_FLOAT32, yshape, 2, &yt));
  for (int i = 0; i < 4; ++i) {
    accel_tensor *out = NULL, *loss = NULL;
    EXPECT_OK(accel_accelerator_accumulate_begin(acc, model));
    EXPECT_OK(accel_accelerator_sync_gradients(acc, &pattern[i]));
    EXPECT_OK(accel_accelerator_accumulation_step(acc, &counted[i]));
    EXPECT_OK(accel_model_forward(model, xt, &out));
    EXPECT_OK(accel_loss(ACCEL_LOSS_MSE, out, yt, &loss));
    EXPECT_OK(accel_accelerator_backward(acc, loss));
    EXPECT_OK(accel_accelerator_clip_grad_norm(acc, model, 1.0, 2.0, &norm));
    EXPECT(pattern[i] ? norm > 0 : norm == 0);
    EXPECT_OK(accel_optimizer_step(opt));
    EXPECT_OK(accel_optimizer_zero_grad(opt));
    EXPECT_OK(accel_accelerator_accumulate_end(acc, model));
    accel_tensor_free(loss);
    accel_tensor_free(out);
  }
  EXPECT(pattern[0] == 0 && pattern[1] == 1 && pattern[2] == 0 && pattern[3] == 1);
  /* Accelerate's accelerator.step counts the micro-steps; a window ends at each multiple of 2. */
  EXPECT(counted[0] == 1 && counted[1] == 2 && counted[2] == 3 && counted[3] == 4);
  EXPECT_OK(accel_optimizer_step_was_skipped(opt, &skipped));
  EXPECT(skipped == 0);
  EXPECT_OK(accel_accelerator_no_sync_begin(acc, model));
  EXPECT_OK(accel_accelerator_trigger_sync_in_backward(acc, model));
  EXPECT_OK(accel_accelerator_no_sync_end(acc, model));
  EXPECT_OK(accel_accelerator_unscale_gradients(acc, opt));
  EXPECT_ERROR(accel_accelerator_clip_grad_norm(acc, model, -1.0, 2.0, &norm), ACCEL_ERR_INVALID_ARGUMENT, "max_norm");
  EXPECT_ERROR(accel_accelerator_clip_grad_value(acc, model, 0.0), ACCEL_ERR_INVALID_ARGUMENT, "clip_value");
  EXPECT_ERROR(accel_accelerator_accumulate_begin(acc, NULL), ACCEL_ERR_INVALID_ARGUMENT, "model is NULL");
  EXPECT_OK(accel_accelerator_sync_gradients(acc, &sync));
  accel_tensor_free(xt);
  accel_tensor_free(yt);
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_accelerator_free(acc);

  accel_accelerator_options_init(&aopts);
  aopts.gradient_accumulation_steps = -3;
  EXPECT_ERROR(accel_accelerator_create(&aopts, &acc), ACCEL_ERR_INVALID_ARGUMENT, "-3");
}

/* Accelerate's step_scheduler_with_optimizer: by default a prepared scheduler
   steps only when the optimizer did (every second call with 2 accumulation
   steps); with 0 every call steps it, as an unprepared scheduler. */
static int64_t scheduler_steps_in_four_micro_steps(int step_scheduler_with_optimizer) {
  accel_accelerator_options aopts;
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  accel_scheduler* sched = NULL;
  accel_scheduler_options sopts;
  int64_t epoch = -1;

  accel_accelerator_options_init(&aopts);
  aopts.gradient_accumulation_steps = 2;
  aopts.step_scheduler_with_optimizer = step_scheduler_with_optimizer;
  EXPECT_OK(accel_accelerator_create(&aopts, &acc));
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_SGD);
  EXPECT_OK(accel_optimizer_create(model, &oopts, &opt));
  accel_scheduler_options_init(&sopts, ACCEL_SCHED_EXPONENTIAL);
  sopts.gamma = 0.5;
  EXPECT_OK(accel_scheduler_create(opt, &sopts, &sched));
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  EXPECT_OK(accel_accelerator_prepare_optimizer(acc, opt));
  EXPECT_OK(accel_accelerator_prepare_scheduler(acc, sched));
  for (int i = 0; i < 4; ++i) {
    EXPECT_OK(accel_accelerator_accumulate_begin(acc, model));
    EXPECT_OK(accel_optimizer_step(opt));
    EXPECT_OK(accel_scheduler_step(sched));
    EXPECT_OK(accel_accelerator_accumulate_end(acc, model));
  }
  EXPECT_OK(accel_scheduler_last_epoch(sched, &epoch));
  accel_scheduler_free(sched);
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_accelerator_free(acc);
  return epoch;
}

static void test_step_scheduler_with_optimizer(void) {
  EXPECT(scheduler_steps_in_four_micro_steps(1) == 2);
  EXPECT(scheduler_steps_in_four_micro_steps(0) == 4);
}

int main(void) {
  test_scheduler();
  test_accumulation();
  test_step_scheduler_with_optimizer();
  return capi_report("test_schedule_api");
}
