/* The named forward through the C ABI on tests/model/files fixtures
   (make_torchscript_fixture.py): accel_tensor_map in and out, output names
   given at load, named parameters and buffers of a tied model. */
#include <stdint.h>
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

int main(void) {
  plain_tuple_outputs_take_the_load_time_names();
  tied_parameters_are_listed_once();
  return capi_report("test_named_api");
}
