/* Models, losses, optimizers, datasets and a single-process training loop
   through the C ABI, with the bad-input paths of each. */
#include <math.h>
#include <stdlib.h>

#include "capi_test.h"

static const char* kSpec =
    "[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 16},"
    " {\"type\": \"ReLU\"},"
    " {\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 3}]";

/* 96 points in 3 well separated clusters. */
static accel_dataset* make_dataset(void) {
  enum { N = 96 };
  static float x[N * 4];
  static int64_t y[N];
  int64_t xshape[2] = {N, 4}, yshape[1] = {N};
  accel_tensor *inputs = NULL, *targets = NULL;
  accel_dataset* dataset = NULL;
  srand(3);
  for (int i = 0; i < N; ++i) {
    y[i] = i % 3;
    for (int j = 0; j < 4; ++j) x[i * 4 + j] = (float)(y[i] == j % 3 ? 2.0 : -1.0) + (float)(rand() % 100) / 200.0f;
  }
  EXPECT_OK(accel_tensor_from_buffer(x, sizeof x, ACCEL_FLOAT32, xshape, 2, &inputs));
  EXPECT_OK(accel_tensor_from_buffer(y, sizeof y, ACCEL_INT64, yshape, 1, &targets));
  EXPECT_OK(accel_dataset_from_tensors(inputs, targets, &dataset));
  /* The dataset keeps its own reference: the caller's handles can go. */
  accel_tensor_free(inputs);
  accel_tensor_free(targets);
  return dataset;
}

static double train_epoch(accel_accelerator* acc, accel_model* model, accel_optimizer* opt, accel_dataloader* loader) {
  double total = 0;
  int batches = 0;
  for (;;) {
    accel_tensor *x = NULL, *y = NULL, *logits = NULL, *loss = NULL;
    double value = 0;
    EXPECT_OK(accel_dataloader_next(loader, &x, &y));
    if (x == NULL) break;
    EXPECT_OK(accel_optimizer_zero_grad(opt));
    EXPECT_OK(accel_model_forward(model, x, &logits));
    EXPECT_OK(accel_loss(ACCEL_LOSS_CROSS_ENTROPY, logits, y, &loss));
    EXPECT_OK(accel_accelerator_backward(acc, loss));
    EXPECT_OK(accel_optimizer_step(opt));
    EXPECT_OK(accel_tensor_item(loss, &value));
    total += value;
    ++batches;
    accel_tensor_free(loss);
    accel_tensor_free(logits);
    accel_tensor_free(x);
    accel_tensor_free(y);
  }
  return total / batches;
}

static void test_training_loop(void) {
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  accel_dataloader_options lopts = ACCEL_DATALOADER_OPTIONS_INIT;
  accel_dataset* dataset = make_dataset();
  accel_dataloader* loader = NULL;
  int64_t params = 0, batches = 0;
  int n = 0, main_process = 0;
  const char* device = NULL;
  double lr = 0, first, last = 0;

  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_accelerator_num_processes(acc, &n));
  EXPECT(n == 1);
  EXPECT_OK(accel_accelerator_is_main_process(acc, &main_process));
  EXPECT(main_process == 1);
  EXPECT_OK(accel_accelerator_device(acc, &device));
  EXPECT(device != NULL && strcmp(device, "cpu") == 0);
  EXPECT_OK(accel_accelerator_set_seed(acc, 0));
  EXPECT_OK(accel_accelerator_wait_for_everyone(acc)); /* no-op with one process */

  EXPECT_OK(accel_model_from_json(kSpec, &model));
  EXPECT_OK(accel_model_num_parameters(model, 1, &params));
  EXPECT(params == 4 * 16 + 16 + 16 * 3 + 3);
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_ADAM);
  oopts.lr = 0.01;
  EXPECT_OK(accel_optimizer_create(model, &oopts, &opt));
  EXPECT_ERROR(accel_accelerator_prepare_optimizer(acc, opt), ACCEL_ERR_STATE, "prepare the optimizer's model first");
  EXPECT_OK(accel_optimizer_get_lr(opt, &lr));
  EXPECT(lr == 0.01);

  lopts.batch_size = 16;
  lopts.shuffle = 1;
  lopts.seed = 5;
  EXPECT_OK(accel_dataloader_create(dataset, &lopts, &loader));
  accel_dataset_free(dataset); /* the loader keeps it alive */
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  EXPECT_ERROR(accel_accelerator_prepare_model(acc, model), ACCEL_ERR_STATE, "already prepared");
  EXPECT_OK(accel_accelerator_prepare_optimizer(acc, opt));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, loader));
  EXPECT_OK(accel_dataloader_num_batches(loader, &batches));
  EXPECT(batches == 6);

  first = train_epoch(acc, model, opt, loader);
  for (int epoch = 0; epoch < 5; ++epoch) last = train_epoch(acc, model, opt, loader);
  EXPECT(last < first * 0.5);
  printf("loss %.4f -> %.4f\n", first, last);

  EXPECT_OK(accel_optimizer_set_lr(opt, 0.5));
  EXPECT_OK(accel_optimizer_get_lr(opt, &lr));
  EXPECT(lr == 0.5);
  EXPECT_ERROR(accel_optimizer_set_lr(opt, -1.0), ACCEL_ERR_INVALID_ARGUMENT, "lr must be");

  /* Bad inputs to forward and the loss are errors, not crashes. */
  {
    float wrong[10] = {0};
    int64_t shape[2] = {2, 5};
    int64_t yshape[1] = {2};
    float fy[2] = {0, 1};
    accel_tensor *x = NULL, *out = NULL, *yf = NULL;
    EXPECT_OK(accel_tensor_from_buffer(wrong, sizeof wrong, ACCEL_FLOAT32, shape, 2, &x));
    EXPECT_ERROR(accel_model_forward(model, x, &out), ACCEL_ERR_INVALID_ARGUMENT, "[2, 5]");
    EXPECT(out == NULL);
    EXPECT_OK(accel_tensor_from_buffer(fy, sizeof fy, ACCEL_FLOAT32, yshape, 1, &yf));
    EXPECT_ERROR(accel_loss(ACCEL_LOSS_CROSS_ENTROPY, x, yf, &out), ACCEL_ERR_INVALID_ARGUMENT, "int64");
    EXPECT_ERROR(accel_loss((accel_loss_kind)9, x, yf, &out), ACCEL_ERR_INVALID_ARGUMENT, "kind 9");
    EXPECT_ERROR(accel_loss(ACCEL_LOSS_MSE, x, yf, &out), ACCEL_ERR_INVALID_ARGUMENT, "differs");
    EXPECT_ERROR(accel_accelerator_backward(acc, x), ACCEL_ERR_INVALID_ARGUMENT, "one element");
    accel_tensor_free(yf);
    accel_tensor_free(x);
  }

  accel_dataloader_free(loader);
  accel_accelerator_free(acc); /* the prepared model keeps the accelerator's state */
  accel_optimizer_free(opt);
  accel_model_free(model);
}

static void test_bad_construction(void) {
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  accel_accelerator_options aopts;
  accel_accelerator* acc = NULL;
  accel_dataset* dataset = NULL;
  accel_dataloader* loader = NULL;
  accel_dataloader_options lopts;

  EXPECT_ERROR(accel_model_from_json("[{\"type\": \"Conv3x\"}]", &model), ACCEL_ERR_INVALID_ARGUMENT, "Conv3x");
  EXPECT_ERROR(accel_model_from_json("[{\"type\": \"Linear\", \"in_features\": 4}]", &model),
               ACCEL_ERR_INVALID_ARGUMENT, "out_features");
  EXPECT_ERROR(accel_model_from_json("not json", &model), ACCEL_ERR_INVALID_ARGUMENT, "");
  EXPECT_ERROR(accel_model_from_torchscript("/nonexistent/model.pt", &model), ACCEL_ERR_IO, "/nonexistent/model.pt");
  EXPECT(model == NULL);

  EXPECT_OK(accel_model_from_json(kSpec, &model));
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_SGD);
  oopts.lr = -0.1;
  EXPECT_ERROR(accel_optimizer_create(model, &oopts, &opt), ACCEL_ERR_INVALID_ARGUMENT, "lr must be");
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_SGD);
  oopts.nesterov = 1;
  EXPECT_ERROR(accel_optimizer_create(model, &oopts, &opt), ACCEL_ERR_INVALID_ARGUMENT, "nesterov");
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_ADAMW);
  oopts.beta1 = 1.5;
  EXPECT_ERROR(accel_optimizer_create(model, &oopts, &opt), ACCEL_ERR_INVALID_ARGUMENT, "beta1");
  accel_optimizer_options_init(&oopts, (accel_optimizer_kind)77);
  EXPECT_ERROR(accel_optimizer_create(model, &oopts, &opt), ACCEL_ERR_INVALID_ARGUMENT, "kind 77");
  oopts.struct_size = 0;
  EXPECT_ERROR(accel_optimizer_create(model, &oopts, &opt), ACCEL_ERR_INVALID_ARGUMENT, "struct_size is 0");
  EXPECT(opt == NULL);
  accel_model_free(model);

  accel_accelerator_options_init(&aopts);
  aopts.timeout_ms = -5;
  EXPECT_ERROR(accel_accelerator_create(&aopts, &acc), ACCEL_ERR_INVALID_ARGUMENT, "-5");
#if ACCEL_TEST_TORCH_MAJOR < 2
  /* fp16 on the CPU needs LibTorch 2.x's CPU autocast (test_fp16_on_cpu there). */
  accel_accelerator_options_init(&aopts);
  aopts.cpu = 1;
  aopts.mixed_precision = ACCEL_PRECISION_FP16;
  EXPECT_ERROR(accel_accelerator_create(&aopts, &acc), ACCEL_ERR_UNSUPPORTED, "needs LibTorch 2.x");
  EXPECT(acc == NULL);
#endif

  EXPECT_ERROR(accel_dataset_from_idx("/nonexistent/images.gz", "/nonexistent/labels.gz", 0, 1, &dataset), ACCEL_ERR_IO,
               "/nonexistent/images.gz");
  dataset = make_dataset();
  accel_dataloader_options_init(&lopts);
  lopts.batch_size = 0;
  EXPECT_ERROR(accel_dataloader_create(dataset, &lopts, &loader), ACCEL_ERR_INVALID_ARGUMENT, "batch_size");
  EXPECT(loader == NULL);
  accel_dataset_free(dataset);
}

#if ACCEL_TEST_TORCH_MAJOR >= 2
/* fp16 on the CPU, as Accelerate runs it with torch 2.x: the first step's half
   gradient overflows at the initial scale 65536 and is skipped, the scale halves,
   the next step is taken. x = 0, so the output is the bias b, |b| <= 1/sqrt(100);
   the MSE gradient 2 (b - 0.75) * scale is then >= 85196 at 65536 (above half's
   65504) and <= 55706 at 32768 (tests/precision/test_cpu_fp16.cpp derives it). */
static void test_fp16_on_cpu(void) {
  static const char* linear = "[{\"type\": \"Linear\", \"in_features\": 100, \"out_features\": 1}]";
  accel_accelerator_options aopts;
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  accel_mixed_precision precision = ACCEL_PRECISION_NO;
  float zeros[100] = {0}, target[1] = {0.75f};
  int64_t xshape[2] = {1, 100}, yshape[2] = {1, 1};
  double scale = 0;
  int skipped = -1;

  accel_accelerator_options_init(&aopts);
  aopts.cpu = 1;
  aopts.mixed_precision = ACCEL_PRECISION_FP16;
  EXPECT_OK(accel_accelerator_create(&aopts, &acc));
  EXPECT_OK(accel_accelerator_mixed_precision(acc, &precision));
  EXPECT(precision == ACCEL_PRECISION_FP16);
  EXPECT_OK(accel_model_from_json(linear, &model));
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_SGD);
  oopts.lr = 0.1;
  EXPECT_OK(accel_optimizer_create(model, &oopts, &opt));
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  EXPECT_OK(accel_accelerator_prepare_optimizer(acc, opt));
  EXPECT_OK(accel_accelerator_loss_scale(acc, &scale));
  EXPECT(scale == 65536.0);
  for (int step = 0; step < 2; ++step) {
    accel_tensor *x = NULL, *y = NULL, *out = NULL, *loss = NULL;
    EXPECT_OK(accel_tensor_from_buffer(zeros, sizeof zeros, ACCEL_FLOAT32, xshape, 2, &x));
    EXPECT_OK(accel_tensor_from_buffer(target, sizeof target, ACCEL_FLOAT32, yshape, 2, &y));
    EXPECT_OK(accel_optimizer_zero_grad(opt));
    EXPECT_OK(accel_model_forward(model, x, &out));
    EXPECT_OK(accel_loss(ACCEL_LOSS_MSE, out, y, &loss));
    EXPECT_OK(accel_accelerator_backward(acc, loss));
    EXPECT_OK(accel_optimizer_step(opt));
    EXPECT_OK(accel_optimizer_step_was_skipped(opt, &skipped));
    EXPECT(skipped == (step == 0));
    EXPECT_OK(accel_accelerator_loss_scale(acc, &scale));
    EXPECT(scale == 32768.0);
    accel_tensor_free(loss);
    accel_tensor_free(out);
    accel_tensor_free(y);
    accel_tensor_free(x);
  }
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_accelerator_free(acc);
}
#endif

int main(void) {
  test_training_loop();
  test_bad_construction();
#if ACCEL_TEST_TORCH_MAJOR >= 2
  test_fp16_on_cpu();
#endif
  return capi_report("test_training_api");
}
