/* Accelerate's configuration objects through the C ABI: the options that
   carry its kwargs handlers (AutocastKwargs, GradScalerKwargs,
   InitProcessGroupKwargs), DataLoaderConfiguration read back, and the
   setters Accelerate has (gradient_accumulation_steps, sync_gradients,
   even_batches). One process; tests/dist and the bindings' tests run the
   multi-process parts (rng_types, init_method). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

static const char* kSpec = "[{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 4}]";

static accel_accelerator* make(const accel_accelerator_options* o) {
  accel_accelerator* acc = NULL;
  EXPECT_OK(accel_accelerator_create(o, &acc));
  return acc;
}

static void defaults(void) {
  accel_accelerator_options o, macro = ACCEL_ACCELERATOR_OPTIONS_INIT;
  accel_accelerator_options_init(&o);
  EXPECT(o.autocast_enabled == 1 && o.autocast_cache_enabled == -1 && o.scaler_enabled == 1);
  EXPECT(o.backend == NULL && o.init_method == NULL && o.rng_types == NULL);
  EXPECT(o.non_blocking == 0 && o.use_stateful_dataloader == 0);
  EXPECT(macro.autocast_enabled == 1 && macro.autocast_cache_enabled == -1 && macro.scaler_enabled == 1);
  EXPECT(macro.backend == NULL && macro.init_method == NULL && macro.rng_types == NULL);
  EXPECT(macro.non_blocking == 0 && macro.use_stateful_dataloader == 0);
}

static void dataloader_configuration(void) {
  accel_accelerator_options o;
  accel_accelerator* acc;
  int v = -5;
  int64_t seed = -5;
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  acc = make(&o);
  /* Accelerate's DataLoaderConfiguration() defaults. */
  EXPECT_OK(accel_accelerator_split_batches(acc, &v));
  EXPECT(v == 0);
  EXPECT_OK(accel_accelerator_even_batches(acc, &v));
  EXPECT(v == 1);
  EXPECT_OK(accel_accelerator_dispatch_batches(acc, &v));
  EXPECT(v == -1);
  EXPECT_OK(accel_accelerator_use_seedable_sampler(acc, &v));
  EXPECT(v == 0);
  EXPECT_OK(accel_accelerator_data_seed(acc, &seed));
  EXPECT(seed == -1);
  EXPECT_OK(accel_accelerator_non_blocking(acc, &v));
  EXPECT(v == 0);
  EXPECT_OK(accel_accelerator_use_stateful_dataloader(acc, &v));
  EXPECT(v == 0);
  accel_accelerator_free(acc);

  o.split_batches = 1;
  o.even_batches = 0;
  o.dispatch_batches = 1;
  o.use_seedable_sampler = 1;
  o.data_seed = 7;
  o.non_blocking = 1;
  o.use_stateful_dataloader = 1;
  acc = make(&o);
  EXPECT_OK(accel_accelerator_split_batches(acc, &v));
  EXPECT(v == 1);
  EXPECT_OK(accel_accelerator_even_batches(acc, &v));
  EXPECT(v == 0);
  EXPECT_OK(accel_accelerator_set_even_batches(acc, 1));
  EXPECT_OK(accel_accelerator_even_batches(acc, &v));
  EXPECT(v == 1);
  EXPECT_OK(accel_accelerator_dispatch_batches(acc, &v));
  EXPECT(v == 1);
  EXPECT_OK(accel_accelerator_use_seedable_sampler(acc, &v));
  EXPECT(v == 1);
  EXPECT_OK(accel_accelerator_data_seed(acc, &seed));
  EXPECT(seed == 7);
  EXPECT_OK(accel_accelerator_non_blocking(acc, &v));
  EXPECT(v == 1);
  EXPECT_OK(accel_accelerator_use_stateful_dataloader(acc, &v));
  EXPECT(v == 1);
  accel_accelerator_free(acc);
}

/* sync_gradients over `n` accumulation micro-steps, as a string of 0 and 1. */
static void windows(accel_accelerator* acc, accel_model* model, int n, char* out) {
  int i, sync = 0;
  for (i = 0; i < n; ++i) {
    EXPECT_OK(accel_accelerator_accumulate_begin(acc, model));
    EXPECT_OK(accel_accelerator_sync_gradients(acc, &sync));
    out[i] = sync ? '1' : '0';
    EXPECT_OK(accel_accelerator_accumulate_end(acc, model));
  }
  out[n] = '\0';
}

static float first_weight(accel_accelerator* acc, accel_model* model) {
  const char* names[2] = {NULL, NULL};
  accel_tensor* tensors[2] = {NULL, NULL};
  size_t count = 0;
  float weights[256];
  EXPECT_OK(accel_accelerator_get_state_dict(acc, model, names, tensors, 2, &count));
  EXPECT_OK(accel_tensor_copy_to(tensors[0], weights, sizeof weights));
  accel_tensor_free(tensors[0]);
  accel_tensor_free(tensors[1]);
  return weights[0];
}

/* One micro-step's forward, backward and optimizer step; returns whether the weights moved. */
static int step_moves_weights(accel_accelerator* acc, accel_model* model, accel_optimizer* opt, int force_sync) {
  float input[64], target[4] = {1, -1, 2, -2}, before;
  int64_t in_shape[2] = {1, 64}, out_shape[2] = {1, 4};
  accel_tensor *x = NULL, *y = NULL, *out = NULL, *loss = NULL;
  int i, moved;
  for (i = 0; i < 64; ++i) input[i] = (float)(i % 7) - 3.0f;
  EXPECT_OK(accel_tensor_from_buffer(input, sizeof input, ACCEL_FLOAT32, in_shape, 2, &x));
  EXPECT_OK(accel_tensor_from_buffer(target, sizeof target, ACCEL_FLOAT32, out_shape, 2, &y));
  before = first_weight(acc, model);
  EXPECT_OK(accel_accelerator_accumulate_begin(acc, model));
  EXPECT_OK(accel_model_forward(model, x, &out));
  EXPECT_OK(accel_loss(ACCEL_LOSS_MSE, out, y, &loss));
  EXPECT_OK(accel_accelerator_backward(acc, loss));
  if (force_sync) EXPECT_OK(accel_accelerator_set_sync_gradients(acc, 1));
  EXPECT_OK(accel_optimizer_step(opt));
  EXPECT_OK(accel_optimizer_zero_grad(opt));
  EXPECT_OK(accel_accelerator_accumulate_end(acc, model));
  moved = first_weight(acc, model) != before;
  accel_tensor_free(loss);
  accel_tensor_free(out);
  accel_tensor_free(y);
  accel_tensor_free(x);
  return moved;
}

static void setters(void) {
  accel_accelerator_options o;
  accel_optimizer_options oo;
  accel_accelerator* acc;
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  char seen[16];
  int64_t steps = 0;
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.gradient_accumulation_steps = 2;
  acc = make(&o);
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  /* Accelerate's _do_sync: step += 1, sync when step % num_steps == 0; the
     counter runs on across the change (micro-steps 1-4, then 5-9). */
  windows(acc, model, 4, seen);
  EXPECT(strcmp(seen, "0101") == 0);
  EXPECT_OK(accel_accelerator_set_gradient_accumulation_steps(acc, 3));
  EXPECT_OK(accel_accelerator_gradient_accumulation_steps(acc, &steps));
  EXPECT(steps == 3);
  windows(acc, model, 5, seen);
  EXPECT(strcmp(seen, "01001") == 0);
  EXPECT_ERROR(accel_accelerator_set_gradient_accumulation_steps(acc, 0), ACCEL_ERR_INVALID_ARGUMENT,
               "gradient_accumulation_steps must be >= 1, got 0");
  EXPECT_OK(accel_accelerator_gradient_accumulation_steps(acc, &steps));
  EXPECT(steps == 3); /* the refused value changed nothing */

  /* sync_gradients = True on a micro-step that does not end its window: the
     optimizer steps, as Accelerate's AcceleratedOptimizer does. Micro-step 10
     (10 % 3 != 0) is left alone, micro-step 11 forced. */
  accel_optimizer_options_init(&oo, ACCEL_OPTIM_SGD);
  oo.lr = 0.1;
  EXPECT_OK(accel_optimizer_create(model, &oo, &opt));
  EXPECT_OK(accel_accelerator_prepare_optimizer(acc, opt));
  EXPECT(!step_moves_weights(acc, model, opt, 0));
  EXPECT(step_moves_weights(acc, model, opt, 1));
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_accelerator_free(acc);
}

/* The prepared model's output for a fixed input under the given options. */
static void forward(const accel_accelerator_options* o, float* out4) {
  float input[64];
  int64_t shape[2] = {1, 64};
  accel_accelerator* acc = make(o);
  accel_model* model = NULL;
  accel_tensor *x = NULL, *out = NULL;
  int i;
  for (i = 0; i < 64; ++i) input[i] = 0.37f * (float)i - 11.1f;
  EXPECT_OK(accel_accelerator_set_seed(acc, 3));
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  EXPECT_OK(accel_tensor_from_buffer(input, sizeof input, ACCEL_FLOAT32, shape, 2, &x));
  EXPECT_OK(accel_model_forward(model, x, &out));
  EXPECT_OK(accel_tensor_copy_to(out, out4, 4 * sizeof(float)));
  accel_tensor_free(out);
  accel_tensor_free(x);
  accel_model_free(model);
  accel_accelerator_free(acc);
}

static void autocast_kwargs(void) {
  accel_accelerator_options o;
  float fp32[4], bf16[4], off[4];
  int i, differs = 0;
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.mixed_precision = ACCEL_PRECISION_NO;
  forward(&o, fp32);
  o.mixed_precision = ACCEL_PRECISION_BF16;
  forward(&o, bf16);
  o.autocast_enabled = 0; /* AutocastKwargs(enabled=False) */
  forward(&o, off);
  /* Autocast off: the same float32 kernels on the same inputs, bit for bit.
     On: bfloat16 keeps 8 bits of mantissa, so 64-term dot products of values
     up to 10 differ from float32 in low bits (|error| ~ 2^-8 * sum|x w|);
     every element matching exactly would mean autocast did not run. */
  for (i = 0; i < 4; ++i) {
    EXPECT(off[i] == fp32[i]);
    differs += bf16[i] != fp32[i];
  }
  EXPECT(differs > 0);
  o.autocast_cache_enabled = 0;
  o.autocast_enabled = 1;
  forward(&o, off);
  for (i = 0; i < 4; ++i) EXPECT(off[i] == bf16[i]); /* the cache changes speed, not values */
}

static void process_group_kwargs(void) {
  accel_accelerator_options o;
  accel_accelerator* acc;
  int64_t timeout = 0;
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.backend = "gloo";
  o.init_method = "tcp://127.0.0.1:29555"; /* one process: no store is started */
  o.timeout_ms = 800000;                   /* InitProcessGroupKwargs(timeout=timedelta(seconds=800)) */
  o.rng_types = "torch,cuda,generator";
  o.scaler_enabled = 0;
  acc = make(&o);
  EXPECT_OK(accel_accelerator_timeout_ms(acc, &timeout));
  EXPECT(timeout == 800000);
  EXPECT_OK(accel_accelerator_synchronize_rng_states(acc, "torch,cuda,generator")); /* alone: nothing to take */
  EXPECT_OK(accel_accelerator_synchronize_rng_states(acc, ""));
  accel_accelerator_free(acc);
  o.init_method = "env://";
  o.rng_types = "";
  acc = make(&o);
  accel_accelerator_free(acc);
}

int main(void) {
  defaults();
  dataloader_configuration();
  setters();
  autocast_kwargs();
  process_group_kwargs();
  return capi_report("test_kwargs_api");
}
