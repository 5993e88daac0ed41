/* Accelerate's names through the C ABI: set_seed with device_specific and
   deterministic (and the free accel_set_seed), get_state_dict, and optimizer options that do not apply to
   the chosen optimizer (momentum for AdamW) refused, naming the option. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

static const char* kSpec = "[{\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 2}]";

/* A fresh model's first weight: it depends only on LibTorch's generator. */
static float first_weight(accel_accelerator* acc) {
  accel_model* model = NULL;
  const char* names[2] = {NULL, NULL};
  accel_tensor* tensors[2] = {NULL, NULL};
  size_t count = 0;
  float weights[6] = {0};
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  EXPECT_OK(accel_accelerator_get_state_dict(acc, model, names, tensors, 2, &count));
  EXPECT_OK(accel_tensor_copy_to(tensors[0], weights, sizeof weights));
  accel_tensor_free(tensors[0]);
  accel_tensor_free(tensors[1]);
  accel_model_free(model);
  return weights[0];
}

static void seeding(accel_accelerator* acc) {
  float a, b;
  EXPECT_OK(accel_accelerator_set_seed_ext(acc, 42, 0, 0));
  a = first_weight(acc);
  EXPECT_OK(accel_accelerator_set_seed(acc, 42));
  EXPECT(first_weight(acc) == a);
  EXPECT_OK(accel_accelerator_set_seed_ext(acc, 43, 0, 0));
  b = first_weight(acc);
  EXPECT(b != a);
  /* One process: device_specific adds process index 0. */
  EXPECT_OK(accel_accelerator_set_seed_ext(acc, 42, 1, 0));
  EXPECT(first_weight(acc) == a);
  /* accelerate.utils.set_seed without the accelerator seeds the same generators. */
  EXPECT_OK(accel_set_seed(42, 0));
  EXPECT(first_weight(acc) == a);
  EXPECT_OK(accel_set_seed(43, 0));
  EXPECT(first_weight(acc) == b);
  /* Deterministic algorithms: CPU training still works under them. */
  EXPECT_OK(accel_accelerator_set_seed_ext(acc, 42, 0, 1));
  EXPECT(first_weight(acc) == a);
}

static void state_dict(accel_accelerator* acc) {
  accel_model* model = NULL;
  const char* names[3] = {NULL, NULL, NULL};
  accel_tensor* tensors[3] = {NULL, NULL, NULL};
  size_t count = 0, ndim = 0;
  int64_t dims[2] = {0, 0};
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  EXPECT_OK(accel_accelerator_get_state_dict(acc, model, NULL, NULL, 0, &count));
  EXPECT(count == 2);
  count = 99;
  EXPECT_ERROR(accel_accelerator_get_state_dict(acc, model, names, tensors, 1, &count), ACCEL_ERR_INVALID_ARGUMENT,
               "capacity 1 is below the 2 entries");
  EXPECT(count == 99 && names[0] == NULL && tensors[0] == NULL);
  EXPECT_OK(accel_accelerator_get_state_dict(acc, model, names, NULL, 3, &count));
  EXPECT(count == 2 && strcmp(names[0], "0.weight") == 0 && strcmp(names[1], "0.bias") == 0 && tensors[0] == NULL);
  EXPECT_OK(accel_accelerator_get_state_dict(acc, model, NULL, tensors, 3, &count));
  EXPECT_OK(accel_tensor_ndim(tensors[0], &ndim));
  EXPECT_OK(accel_tensor_shape(tensors[0], dims, 2));
  EXPECT(ndim == 2 && dims[0] == 2 && dims[1] == 3 && tensors[2] == NULL);
  accel_tensor_free(tensors[0]);
  accel_tensor_free(tensors[1]);
  accel_model_free(model);
}

#define REFUSED(kind, field, value, needle)                                                     \
  do {                                                                                          \
    accel_optimizer* opt_ = NULL;                                                               \
    accel_optimizer_options_init(&o, kind);                                                     \
    o.field = value;                                                                            \
    EXPECT_ERROR(accel_optimizer_create(model, &o, &opt_), ACCEL_ERR_INVALID_ARGUMENT, needle); \
    EXPECT(opt_ == NULL);                                                                       \
  } while (0)

static void optimizer_options(void) {
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options o;
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  REFUSED(ACCEL_OPTIM_ADAMW, momentum, 0.9, "AdamW has no option momentum (got 0.9");
  REFUSED(ACCEL_OPTIM_ADAM, nesterov, 1, "Adam has no option nesterov");
  REFUSED(ACCEL_OPTIM_SGD, beta1, 0.5, "SGD has no option betas");
  REFUSED(ACCEL_OPTIM_SGD, amsgrad, 1, "SGD has no option amsgrad");
  REFUSED(ACCEL_OPTIM_RMSPROP, lr_decay, 0.1, "RMSprop has no option lr_decay");
  REFUSED(ACCEL_OPTIM_ADAGRAD, alpha, 0.5, "Adagrad has no option alpha");
  /* The options each kind has are accepted. */
  accel_optimizer_options_init(&o, ACCEL_OPTIM_SGD);
  o.momentum = 0.9;
  o.nesterov = 1;
  EXPECT_OK(accel_optimizer_create(model, &o, &opt));
  accel_optimizer_free(opt);
  accel_optimizer_options_init(&o, ACCEL_OPTIM_RMSPROP);
  o.momentum = 0.5;
  o.centered = 1;
  EXPECT_OK(accel_optimizer_create(model, &o, &opt));
  accel_optimizer_free(opt);
  accel_model_free(model);
}

int main(void) {
  accel_accelerator* acc = NULL;
  accel_accelerator_options ao;
  accel_accelerator_options_init(&ao);
  ao.cpu = 1;
  EXPECT_OK(accel_accelerator_create(&ao, &acc));
  state_dict(acc);
  optimizer_options();
  seeding(acc); /* last: deterministic algorithms stay on in this process */
  accel_accelerator_free(acc);
  return capi_report("test_accelerate_names_api");
}
