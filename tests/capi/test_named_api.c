/* The named forward through the C ABI on tests/model/files fixtures
   (make_torchscript_fixture.py): accel_tensor_map in and out, output names
   given at load, named parameters and buffers of a tied model. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test.h"

static char path[4096];
static const char* fixture(const char* name) {
  snprintf(path, sizeof path, "%s/model/files/%s", ACCEL_TEST_FILES, name);
  return path;
}

static accel_tensor* floats(float value, int64_t rows, int64_t cols) {
  float data[64];
  int64_t shape[2] = {rows, cols};
  accel_tensor* out = NULL;
  for (int i = 0; i < 64; ++i) data[i] = value;
  EXPECT_OK(accel_tensor_from_buffer(data, (size_t)(rows * cols) * sizeof(float), ACCEL_FLOAT32, shape, 2, &out));
  return out;
}

static void plain_tuple_outputs_take_the_load_time_names(void) {
  const char* names[2] = {"loss", "logits"};
  accel_model* model = NULL;
  accel_tensor_map *in = NULL, *out = NULL;
  accel_tensor *x = floats(1, 3, 4), *mask = floats(1, 3, 2), *zero = floats(0, 3, 2), *loss = NULL;
  const char* name = NULL;
  size_t count = 0;
  EXPECT_OK(accel_model_from_torchscript_outputs(fixture("plain_tuple.pt"), names, 2, &model));
  EXPECT_OK(accel_tensor_map_create(&in));
  EXPECT_OK(accel_tensor_map_set(in, "mask", zero));
  EXPECT_OK(accel_tensor_map_set(in, "x", x));
  EXPECT_OK(accel_tensor_map_name_at(in, 0, &name));
  EXPECT_OK(accel_tensor_map_set(in, "mask", mask)); /* replaced in place: the name keeps its slot and address */
  EXPECT_OK(accel_tensor_map_count(in, &count));
  EXPECT(count == 2 && strcmp(name, "mask") == 0);
  EXPECT_OK(accel_model_forward_named(model, in, &out));
  EXPECT_OK(accel_tensor_map_name_at(out, 0, &name));
  EXPECT(strcmp(name, "loss") == 0);
  EXPECT_OK(accel_tensor_map_get(out, "loss", &loss));
  double value = 0;
  EXPECT_OK(accel_tensor_item(loss, &value));
  EXPECT(value != 0); /* the mask of ones, not the replaced zeros */
  EXPECT_ERROR(accel_tensor_map_get(out, "logit", &loss), ACCEL_ERR_INVALID_ARGUMENT, "(the map holds loss, logits)");
  accel_tensor_free(loss);
  accel_tensor_map_free(out);
  /* A forward without mask names the missing input and the expected ones. */
  accel_tensor_map_free(in);
  EXPECT_OK(accel_tensor_map_create(&in));
  EXPECT_OK(accel_tensor_map_set(in, "x", x));
  out = NULL;
  EXPECT_ERROR(accel_model_forward_named(model, in, &out), ACCEL_ERR_INVALID_ARGUMENT,
               "missing input \"mask\" (no default): the model's forward takes (x, mask), given (x)");
  EXPECT(out == NULL);
  accel_tensor_map_free(in);
  accel_tensor_free(x);
  accel_tensor_free(mask);
  accel_tensor_free(zero);
  accel_model_free(model);
}

static void tied_parameters_are_listed_once(void) {
  accel_model* model = NULL;
  accel_tensor_map *params = NULL, *buffers = NULL;
  size_t count = 0;
  const char* name = NULL;
  int64_t total = 0;
  EXPECT_OK(accel_model_from_torchscript(fixture("tied_lm.pt"), &model));
  EXPECT_OK(accel_model_named_parameters(model, &params));
  EXPECT_OK(accel_tensor_map_count(params, &count));
  EXPECT(count == 1);
  EXPECT_OK(accel_tensor_map_name_at(params, 0, &name));
  EXPECT(strcmp(name, "wte.weight") == 0);
  EXPECT_OK(accel_model_num_parameters(model, 0, &total));
  EXPECT(total == 40);
  EXPECT_OK(accel_model_named_buffers(model, &buffers));
  EXPECT_OK(accel_tensor_map_count(buffers, &count));
  EXPECT(count == 2);
  accel_tensor_map_free(buffers);
  accel_tensor_map_free(params);
  accel_model_free(model);
}

/* tied_lm.pt's logits [2, 3, 10] for fixed ids and labels. */
static void tied_lm_logits(accel_model* model, float* logits) {
  static const int64_t ids[6] = {1, 4, 7, 2, 9, 0}, labels[6] = {4, 7, 2, 9, 0, 3};
  const int64_t shape[2] = {2, 3};
  accel_tensor *input_ids = NULL, *targets = NULL, *out_logits = NULL;
  accel_tensor_map *in = NULL, *out = NULL;
  EXPECT_OK(accel_tensor_from_buffer(ids, sizeof ids, ACCEL_INT64, shape, 2, &input_ids));
  EXPECT_OK(accel_tensor_from_buffer(labels, sizeof labels, ACCEL_INT64, shape, 2, &targets));
  EXPECT_OK(accel_tensor_map_create(&in));
  EXPECT_OK(accel_tensor_map_set(in, "input_ids", input_ids));
  EXPECT_OK(accel_tensor_map_set(in, "labels", targets));
  EXPECT_OK(accel_model_forward_named(model, in, &out));
  EXPECT_OK(accel_tensor_map_get(out, "logits", &out_logits));
  EXPECT_OK(accel_tensor_copy_to(out_logits, logits, 60 * sizeof(float)));
  accel_tensor_free(out_logits);
  accel_tensor_map_free(out);
  accel_tensor_map_free(in);
  accel_tensor_free(targets);
  accel_tensor_free(input_ids);
}

/* accel_disk_offload of a TorchScript model: the submodules' weights go to the
   folder and come back around each call; the logits stay. A model that ran a
   forward is refused (the graph executor fixed its plan), nothing written. */
static void a_torchscript_model_offloads_to_disk(void) {
  static float want[60], got[60];
  accel_model *reference = NULL, *model = NULL;
  FILE* weights = NULL;
  EXPECT_OK(accel_model_from_torchscript(fixture("tied_lm.pt"), &reference));
  tied_lm_logits(reference, want);
  EXPECT_ERROR(accel_disk_offload(reference, "named_api_offload_ran"), ACCEL_ERR_UNSUPPORTED, "load it again");
  EXPECT(fopen("named_api_offload_ran/model.safetensors", "r") == NULL);
  EXPECT_OK(accel_model_from_torchscript(fixture("tied_lm.pt"), &model));
  EXPECT_OK(accel_disk_offload(model, "named_api_offload"));
  weights = fopen("named_api_offload/model.safetensors", "r");
  EXPECT(weights != NULL);
  if (weights != NULL) fclose(weights);
  tied_lm_logits(model, got);
  EXPECT(memcmp(want, got, sizeof want) == 0);
  accel_model_free(model);
  accel_model_free(reference);
}

/* Accelerate's init_empty_weights + load_checkpoint_and_dispatch for a
   TorchScript model: loaded empty (no weight read), it cannot run; filled from
   what save_model wrote (the non-persistent mask left out, the tied weight
   once) in memory or streamed from disk, it computes the loaded model's
   logits. A GPU in the map is refused, the model left empty. */
static void an_empty_torchscript_model_loads_from_a_checkpoint(void) {
  static float want[60], got[60];
  accel_accelerator* acc = NULL;
  accel_model *reference = NULL, *empty = NULL;
  accel_tensor_map* out = NULL;
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_model_from_torchscript(fixture("tied_lm.pt"), &reference));
  EXPECT_OK(accel_accelerator_save_model(acc, reference, "named_api_empty_ckpt", NULL, 1));
  tied_lm_logits(reference, want);
  EXPECT_OK(accel_model_from_torchscript_empty(fixture("tied_lm.pt"), NULL, 0, &empty));
  {
    accel_tensor_map* in = NULL;
    EXPECT_OK(accel_tensor_map_create(&in));
    EXPECT(accel_model_forward_named(empty, in, &out) != ACCEL_OK && out == NULL);
    accel_tensor_map_free(in);
  }
  EXPECT_ERROR(accel_load_checkpoint_and_dispatch(empty, "named_api_empty_ckpt", "{\"\": \"cuda:0\"}", NULL, NULL),
               ACCEL_ERR_UNSUPPORTED, "\"cuda:0\"");
  EXPECT_OK(accel_load_checkpoint_and_dispatch(empty, "named_api_empty_ckpt", "{\"\": \"disk\"}", NULL, NULL));
  tied_lm_logits(empty, got);
  EXPECT(memcmp(want, got, sizeof want) == 0);
  accel_model_free(empty);
  EXPECT_OK(accel_model_from_torchscript_empty(fixture("tied_lm.pt"), NULL, 0, &empty));
  EXPECT_OK(accel_model_materialize(empty, "named_api_empty_ckpt", NULL));
  memset(got, 0, sizeof got);
  tied_lm_logits(empty, got);
  EXPECT(memcmp(want, got, sizeof want) == 0);
  accel_model_free(empty);
  accel_model_free(reference);
  accel_accelerator_free(acc);
}

int main(void) {
  plain_tuple_outputs_take_the_load_time_names();
  tied_parameters_are_listed_once();
  a_torchscript_model_offloads_to_disk();
  an_empty_torchscript_model_loads_from_a_checkpoint();
  return capi_report("test_named_api");
}
