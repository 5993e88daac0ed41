/* Big-model tools through the C ABI: an empty GPT (meta parameters), its
   sizes, Accelerate's device map for a cpu budget, and a user map checked. */
#include <string.h>

#include "capi_test.h"

static const char* kGpt =
    "{\"inputs\": [\"input_ids\"], \"nodes\": ["
    "  {\"name\": \"wte\", \"type\": \"Embedding\", \"num_embeddings\": 256, \"embedding_dim\": 64},"
    "  {\"name\": \"h\", \"type\": \"Sequential\", \"layers\": ["
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, \"batch_first\": true},"
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, \"batch_first\": true},"
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, \"batch_first\": true},"
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, \"batch_first\": true}]},"
    "  {\"name\": \"ln_f\", \"type\": \"LayerNorm\", \"normalized_shape\": 64},"
    "  {\"name\": \"logits\", \"type\": \"Linear\", \"in_features\": 64, \"out_features\": 256, \"bias\": false}],"
    " \"outputs\": [\"logits\"]}";

int main(void) {
  accel_model* model = NULL;
  char* sizes = NULL;
  char* map = NULL;
  const char* no_split[1] = {"TransformerEncoderLayer"};
  int64_t count = 0;
  EXPECT_OK(accel_model_from_json_empty(kGpt, &model));
  EXPECT_OK(accel_model_num_parameters(model, 0, &count));
  EXPECT(count == 232832); /* 931328 bytes of float32, as compute_module_sizes of the torch twin */
  EXPECT_OK(accel_model_module_sizes(model, NULL, &sizes));
  EXPECT(sizes != NULL && strstr(sizes, "\"\":931328") != NULL && strstr(sizes, "\"h.0\":199936") != NULL);
  accel_string_free(sizes);
  /* Accelerate 0.22: infer_auto_device_map(m, {"cpu": 500000}, ["TransformerEncoderLayer"]). */
  EXPECT_OK(accel_infer_auto_device_map(model, "{\"cpu\": 500000}", no_split, 1, NULL, &map));
  EXPECT(map != NULL && strcmp(map, "{\"wte\":\"cpu\",\"h.0\":\"cpu\",\"h.1\":\"disk\",\"h.2\":\"disk\",\"h.3\":\"disk\","
                                    "\"ln_f\":\"disk\",\"logits\":\"disk\"}") == 0);
  EXPECT_OK(accel_verify_device_map(model, map));
  accel_string_free(map);
  map = NULL;
  EXPECT_ERROR(accel_infer_auto_device_map(model, "{\"cpu\": 100000}", no_split, 1, NULL, &map),
               ACCEL_ERR_INVALID_ARGUMENT, "\"h.0\" (199936 bytes)");
  EXPECT(map == NULL);
  EXPECT_ERROR(accel_verify_device_map(model, "{\"wte\": \"cpu\", \"h\": \"disk\", \"lm_head\": \"cpu\"}"),
               ACCEL_ERR_INVALID_ARGUMENT, "\"lm_head\" names no module");
  EXPECT_ERROR(accel_verify_device_map(model, "{\"wte\": \"cpu\", \"h\": \"disk\", \"ln_f\": \"cpu\"}"),
               ACCEL_ERR_INVALID_ARGUMENT, "\"logits.weight\" is not placed");
  accel_model_free(model);
  return capi_report("test_big_model_api");
}
