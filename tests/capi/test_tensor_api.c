/* Tensors, versions and the error conventions of the C ABI. */
#include "capi_test.h"

static void test_version(void) {
  char expected[32];
  snprintf(expected, sizeof expected, "%d.%d.%d", ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
  EXPECT(strcmp(accel_version(), expected) == 0);
  EXPECT(accel_version_number() == ACCEL_VERSION_NUMBER);
  EXPECT(accel_abi_version() == ACCEL_ABI_VERSION);
  EXPECT(accel_has_feature(ACCEL_FEATURE_GLOO) == 1);
  EXPECT(accel_has_feature((accel_feature)99) == 0);
  EXPECT(strcmp(accel_status_name(ACCEL_ERR_TIMEOUT), "ACCEL_ERR_TIMEOUT") == 0);
}

static void test_round_trip(void) {
  float data[6] = {1, 5, 2, 7, 0, 3}, back[6] = {0};
  int64_t shape[2] = {2, 3}, dims[2] = {0, 0};
  accel_tensor *t = NULL, *idx = NULL, *sum = NULL;
  size_t ndim = 0;
  int64_t numel = 0, argmax[2] = {0, 0};
  accel_dtype dtype = ACCEL_INT8;
  double value = 0;
  EXPECT_OK(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, shape, 2, &t));
  EXPECT_OK(accel_tensor_ndim(t, &ndim));
  EXPECT(ndim == 2);
  EXPECT_OK(accel_tensor_shape(t, dims, 2));
  EXPECT(dims[0] == 2 && dims[1] == 3);
  EXPECT_OK(accel_tensor_numel(t, &numel));
  EXPECT(numel == 6);
  EXPECT_OK(accel_tensor_dtype(t, &dtype));
  EXPECT(dtype == ACCEL_FLOAT32);
  EXPECT_OK(accel_tensor_copy_to(t, back, sizeof back));
  EXPECT(memcmp(data, back, sizeof data) == 0);

  EXPECT_OK(accel_tensor_argmax(t, 1, &idx));
  EXPECT_OK(accel_tensor_copy_to(idx, argmax, sizeof argmax));
  EXPECT(argmax[0] == 1 && argmax[1] == 0);
  EXPECT_OK(accel_tensor_sum(t, &sum));
  EXPECT_OK(accel_tensor_item(sum, &value));
  EXPECT(value == 18.0);
  {
    int64_t labels[2] = {1, 2}, label_shape[1] = {2};
    accel_tensor *target = NULL, *eq = NULL, *count = NULL;
    EXPECT_OK(accel_tensor_from_buffer(labels, sizeof labels, ACCEL_INT64, label_shape, 1, &target));
    EXPECT_OK(accel_tensor_eq(idx, target, &eq));
    EXPECT_OK(accel_tensor_sum(eq, &count));
    EXPECT_OK(accel_tensor_item(count, &value));
    EXPECT(value == 1.0);
    accel_tensor_free(count);
    accel_tensor_free(eq);
    accel_tensor_free(target);
  }
  accel_tensor_free(sum);
  accel_tensor_free(idx);
  accel_tensor_free(t);
}

static void test_bad_input(void) {
  float data[4] = {0};
  int64_t shape[2] = {2, 2}, bad_shape[2] = {2, -1};
  accel_tensor *t = NULL, *out = NULL, *freed = NULL;
  double value = 0;

  EXPECT_ERROR(accel_tensor_from_buffer(data, 12, ACCEL_FLOAT32, shape, 2, &t), ACCEL_ERR_INVALID_ARGUMENT,
               "nbytes is 12");
  EXPECT(t == NULL);
  EXPECT_ERROR(accel_tensor_from_buffer(data, sizeof data, (accel_dtype)42, shape, 2, &t), ACCEL_ERR_INVALID_ARGUMENT,
               "accel_dtype 42");
  EXPECT_ERROR(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, bad_shape, 2, &t), ACCEL_ERR_INVALID_ARGUMENT,
               "shape[1] is negative");
  EXPECT_ERROR(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, shape, 2, NULL), ACCEL_ERR_INVALID_ARGUMENT,
               "out");
  EXPECT_ERROR(accel_tensor_numel(NULL, NULL), ACCEL_ERR_INVALID_ARGUMENT, "tensor is NULL");

  EXPECT_OK(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, shape, 2, &t));
  EXPECT_ERROR(accel_tensor_copy_to(t, data, 8), ACCEL_ERR_INVALID_ARGUMENT, "nbytes is 8");
  EXPECT_ERROR(accel_tensor_item(t, &value), ACCEL_ERR_INVALID_ARGUMENT, "4 elements");
  EXPECT_ERROR(accel_tensor_argmax(t, 5, &out), ACCEL_ERR_INVALID_ARGUMENT, "dim 5");
  {
    float three[3] = {0};
    int64_t three_shape[1] = {3};
    accel_tensor* other = NULL;
    EXPECT_OK(accel_tensor_from_buffer(three, sizeof three, ACCEL_FLOAT32, three_shape, 1, &other));
    EXPECT_ERROR(accel_tensor_eq(t, other, &out), ACCEL_ERR_INVALID_ARGUMENT, "do not broadcast");
    accel_tensor_free(other);
  }
  EXPECT(out == NULL);

  /* A freed handle is reported, never dereferenced. */
  EXPECT_OK(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, shape, 2, &freed));
  accel_tensor_free(freed);
  EXPECT_ERROR(accel_tensor_sum(freed, &out), ACCEL_ERR_INVALID_ARGUMENT, "not a live accel_tensor");
  accel_tensor_free(freed); /* double free: ignored */
  accel_tensor_free(NULL);
  /* A handle of another type is rejected too. */
  EXPECT_ERROR(accel_model_train((accel_model*)t, 1), ACCEL_ERR_INVALID_ARGUMENT, "not a live accel_model");
  accel_tensor_free(t);
}

int main(void) {
  test_version();
  test_round_trip();
  test_bad_input();
  return capi_report("test_tensor_api");
}
