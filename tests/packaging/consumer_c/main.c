/* An out-of-tree C program built against an installed libaccel with
   `pkg-config --cflags --libs accel` (tests/packaging/consumer_c.sh). */
#include <accel/accel.h>

#include <stdio.h>

static int check(accel_status status, const char* what) {
  if (status != ACCEL_OK) {
    fprintf(stderr, "%s failed: %s\n", what, accel_last_error());
    return 1;
  }
  return 0;
}

int main(void) {
  if (accel_abi_version() != ACCEL_ABI_VERSION) {
    fprintf(stderr, "header ABI %d, library ABI %d\n", ACCEL_ABI_VERSION, accel_abi_version());
    return 1;
  }
  accel_accelerator* acc = NULL;
  if (check(accel_accelerator_create(NULL, &acc), "accel_accelerator_create")) return 1;
  int processes = 0;
  if (check(accel_accelerator_num_processes(acc, &processes), "accel_accelerator_num_processes")) return 1;

  const float values[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  accel_tensor* tensor = NULL;
  accel_tensor* sum = NULL;
  double total = 0;
  if (check(accel_tensor_from_buffer(values, sizeof values, ACCEL_FLOAT32, shape, 2, &tensor),
            "accel_tensor_from_buffer") ||
      check(accel_tensor_sum(tensor, &sum), "accel_tensor_sum") ||
      check(accel_tensor_item(sum, &total), "accel_tensor_item"))
    return 1;

  printf("libaccel %s, %d process(es), sum %g\n", accel_version(), processes, total);
  accel_tensor_free(sum);
  accel_tensor_free(tensor);
  accel_accelerator_free(acc);
  return 0;
}
