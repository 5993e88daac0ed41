/* set_seed_ext's device_specific across processes through the C ABI: rank r
   draws what seed + r draws (so ranks differ), and without it every rank
   draws the same. A fresh model's first weight is the draw. */
#include "dist_check.h"

static const char* kSpec = "[{\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 2}]";

static float first_weight(accel_accelerator* acc) {
  accel_model* model = NULL;
  accel_tensor* tensors[2] = {NULL, NULL};
  size_t count = 0;
  float weights[6] = {0};
  CHECK_OK(accel_model_from_json(kSpec, &model));
  CHECK_OK(accel_accelerator_get_state_dict(acc, model, NULL, tensors, 2, &count));
  CHECK_OK(accel_tensor_copy_to(tensors[0], weights, sizeof weights));
  accel_tensor_free(tensors[0]);
  accel_tensor_free(tensors[1]);
  accel_model_free(model);
  return weights[0];
}

/* Every rank's value, in rank order (world <= 8). */
static void gather(accel_accelerator* acc, float mine, float* all, int world) {
  int64_t shape[1] = {1};
  accel_tensor *t = NULL, *got = NULL;
  CHECK_OK(accel_tensor_from_buffer(&mine, sizeof mine, ACCEL_FLOAT32, shape, 1, &t));
  CHECK_OK(accel_accelerator_gather(acc, t, &got));
  CHECK_OK(accel_tensor_copy_to(got, all, sizeof(float) * (size_t)world));
  accel_tensor_free(got);
  accel_tensor_free(t);
}

int main(void) {
  accel_accelerator* acc = NULL;
  int rank = 0, world = 0;
  float own, specific, all[8];
  CHECK_OK(accel_accelerator_create(NULL, &acc));
  CHECK_OK(accel_accelerator_process_index(acc, &rank));
  CHECK_OK(accel_accelerator_num_processes(acc, &world));
  dist_check_rank = rank;
  CHECK(world >= 2 && world <= 8);

  CHECK_OK(accel_accelerator_set_seed(acc, 7 + (uint64_t)rank));
  own = first_weight(acc);
  CHECK_OK(accel_accelerator_set_seed_ext(acc, 7, 1, 0));
  specific = first_weight(acc);
  CHECK(specific == own);
  gather(acc, specific, all, world);
  for (int r = 1; r < world; ++r) CHECK(all[r] != all[0]);

  CHECK_OK(accel_accelerator_set_seed_ext(acc, 7, 0, 0));
  gather(acc, first_weight(acc), all, world);
  for (int r = 1; r < world; ++r) CHECK(all[r] == all[0]);

  accel_accelerator_free(acc);
  if (rank == 0) printf("dist_seed ok %d\n", world);
  return 0;
}
