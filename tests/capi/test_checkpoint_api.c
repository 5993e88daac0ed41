/* The checkpoint part of the C ABI: save_state/load_state with a registered
   object and hooks, save_model and load_checkpoint_in_model, save_tensors, and
   the errors bad input and broken checkpoints get. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test.h"

typedef struct counter {
  int64_t value;
  int released;
  int fail_load;
} counter;

static accel_status counter_save(void* user, accel_bytes_writer* writer) {
  return accel_bytes_write(writer, &((counter*)user)->value, sizeof(int64_t));
}

static accel_status counter_load(void* user, const void* data, size_t size) {
  counter* c = (counter*)user;
  if (c->fail_load) {
    accel_set_error("the counter refuses");
    return ACCEL_ERR_STATE;
  }
  if (size != sizeof(int64_t)) return ACCEL_ERR_IO;
  memcpy(&c->value, data, sizeof(int64_t));
  return ACCEL_OK;
}

static void counter_release(void* user) { ((counter*)user)->released += 1; }

static int hook_calls = 0;
static accel_status count_hook(void* user, const char* dir) {
  (void)user;
  hook_calls += strstr(dir, "ckpt_c") != NULL;
  return ACCEL_OK;
}

static const char* kSpec = "[{\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 2}]";

int main(void) {
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_model* other = NULL;
  accel_tensor* t = NULL;
  counter c = {41, 0, 0};
  accel_checkpoint_callbacks cb;
  int64_t hook = 0, iteration = -1, missing = -1, unexpected = -1;
  float ones[3] = {1, 1, 1};
  int64_t shape[1] = {3};
  const char* names[1] = {"ones"};
  const accel_tensor* tensors[1];

  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));

  accel_checkpoint_callbacks_init(&cb);
  cb.save = counter_save;
  EXPECT_ERROR(accel_accelerator_register_for_checkpointing(acc, &cb, &c), ACCEL_ERR_INVALID_ARGUMENT,
               "callbacks->load is NULL");
  cb.load = counter_load;
  cb.release = counter_release;
  EXPECT_OK(accel_accelerator_register_for_checkpointing(acc, &cb, &c));
  EXPECT_OK(accel_accelerator_register_save_state_pre_hook(acc, count_hook, NULL, NULL, &hook));

  EXPECT_ERROR(accel_accelerator_save_state(acc, NULL), ACCEL_ERR_STATE, "automatic_checkpoint_naming is off");
  EXPECT(system("rm -rf ckpt_c ckpt_c_bin ckpt_c_model ckpt_c_model_bin") == 0);
  EXPECT_OK(accel_accelerator_save_state(acc, "ckpt_c"));
  EXPECT(hook_calls == 1);
  EXPECT_OK(accel_accelerator_remove_hook(acc, hook));
  EXPECT_ERROR(accel_accelerator_remove_hook(acc, hook), ACCEL_ERR_INVALID_ARGUMENT, "no hook has id");

  c.value = 7;
  EXPECT_OK(accel_accelerator_load_state(acc, "ckpt_c"));
  EXPECT(c.value == 41);
  c.fail_load = 1;
  EXPECT_ERROR(accel_accelerator_load_state(acc, "ckpt_c"), ACCEL_ERR_STATE,
               "checkpoint object load callback failed: the counter refuses");
  c.fail_load = 0;
  /* safe_serialization = 0: the model as pytorch_model.bin, which load_state reads back. */
  EXPECT_OK(accel_accelerator_save_state_ext(acc, "ckpt_c_bin", 0));
  EXPECT(system("test -f ckpt_c_bin/pytorch_model.bin && test ! -e ckpt_c_bin/model.safetensors") == 0);
  EXPECT_OK(accel_accelerator_load_state(acc, "ckpt_c_bin"));
  EXPECT_ERROR(accel_accelerator_load_state(acc, "no_such_ckpt"), ACCEL_ERR_IO,
               "no_such_ckpt/manifest.json is missing");
  EXPECT_OK(accel_accelerator_save_iteration(acc, &iteration));
  EXPECT(iteration == 0);

  /* Model files. */
  EXPECT_OK(accel_accelerator_save_model(acc, model, "ckpt_c_model", NULL, 1));
  EXPECT_ERROR(accel_accelerator_save_model(acc, model, "ckpt_c_model", "12XB", 1), ACCEL_ERR_INVALID_ARGUMENT,
               "unknown unit \"XB\"");
  /* safe_serialization = 0: Hugging Face's pytorch_model.bin, read back by load_checkpoint_in_model. */
  EXPECT_OK(accel_accelerator_save_model(acc, model, "ckpt_c_model_bin", NULL, 0));
  EXPECT_OK(accel_accelerator_load_checkpoint_in_model(acc, model, "ckpt_c_model_bin/pytorch_model.bin", 1, &missing,
                                                       &unexpected));
  EXPECT(missing == 0 && unexpected == 0);
  EXPECT_OK(
      accel_model_from_json("[{\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 2}, {\"type\": \"ReLU\"},"
                            " {\"type\": \"Linear\", \"in_features\": 2, \"out_features\": 2}]",
                            &other));
  EXPECT_OK(accel_accelerator_load_checkpoint_in_model(acc, other, "ckpt_c_model/model.safetensors", 0, &missing,
                                                       &unexpected));
  EXPECT(missing == 2 && unexpected == 0);
  EXPECT_ERROR(accel_accelerator_load_checkpoint_in_model(acc, other, "ckpt_c_model/model.safetensors", 1, NULL, NULL),
               ACCEL_ERR_INVALID_ARGUMENT, "missing 2.weight, 2.bias");
  EXPECT_ERROR(
      accel_accelerator_load_checkpoint_in_model(acc, other, "ckpt_c_model/nothing.safetensors", 0, NULL, NULL),
      ACCEL_ERR_IO, "nothing.safetensors");

  EXPECT_OK(accel_tensor_from_buffer(ones, sizeof ones, ACCEL_FLOAT32, shape, 1, &t));
  tensors[0] = t;
  EXPECT_OK(accel_accelerator_save_tensors(acc, names, tensors, 1, "ckpt_c_model/ones.safetensors"));
  EXPECT_ERROR(accel_accelerator_save_tensors(acc, NULL, tensors, 1, "x.safetensors"), ACCEL_ERR_INVALID_ARGUMENT,
               "names or tensors is NULL");

  accel_tensor_free(t);
  accel_model_free(other);
  accel_model_free(model);
  EXPECT(c.released == 0);
  accel_accelerator_free(acc);
  EXPECT(c.released == 1);
  EXPECT(system("rm -rf ckpt_c ckpt_c_bin ckpt_c_model ckpt_c_model_bin") == 0);
  return capi_report("test_checkpoint_api");
}
