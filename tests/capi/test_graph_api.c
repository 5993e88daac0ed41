/* A JSON graph spec (a one-block GPT with a tied head) through the one-tensor
   C ABI: build, forward token ids, and the errors that name the node and value. */
#include "capi_test.h"

static const char* kGpt =
    "{\"inputs\": [\"input_ids\", {\"name\": \"labels\", \"optional\": true}],"
    " \"nodes\": ["
    "  {\"name\": \"wte\", \"type\": \"Embedding\", \"num_embeddings\": 32, \"embedding_dim\": 16},"
    "  {\"name\": \"wpe\", \"type\": \"PositionalEmbedding\", \"num_positions\": 8, \"embedding_dim\": 16,"
    "   \"batch_first\": true},"
    "  {\"name\": \"h\", \"type\": \"Sequential\", \"layers\": [{\"type\": \"TransformerEncoderLayer\","
    "   \"d_model\": 16, \"nhead\": 2, \"dim_feedforward\": 64, \"batch_first\": true, \"norm_first\": true,"
    "   \"causal\": true}]},"
    "  {\"name\": \"ln_f\", \"type\": \"LayerNorm\", \"normalized_shape\": 16},"
    "  {\"name\": \"logits\", \"type\": \"Linear\", \"in_features\": 16, \"out_features\": 32, \"bias\": false,"
    "   \"weight\": \"wte.weight\"},"
    "  {\"name\": \"loss\", \"type\": \"CausalLMLoss\", \"input\": [\"logits\", \"labels\"]}],"
    " \"outputs\": [\"logits\", \"loss\"]}";

static accel_tensor* ids(int64_t length, accel_dtype dtype) {
  static int64_t data[16];
  static float fdata[16];
  int64_t shape[2] = {2, 0};
  accel_tensor* t = NULL;
  shape[1] = length / 2;
  for (int i = 0; i < 16; ++i) {
    data[i] = (i * 7) % 32;
    fdata[i] = (float)data[i];
  }
  if (dtype == ACCEL_INT64) {
    EXPECT_OK(accel_tensor_from_buffer(data, (size_t)length * sizeof data[0], dtype, shape, 2, &t));
  } else {
    EXPECT_OK(accel_tensor_from_buffer(fdata, (size_t)length * sizeof fdata[0], dtype, shape, 2, &t));
  }
  return t;
}

int main(void) {
  accel_model* model = NULL;
  accel_tensor *input = NULL, *logits = NULL;
  int64_t count = 0, dims[3] = {0, 0, 0};

  EXPECT_OK(accel_model_from_json(kGpt, &model));
  /* wte 512 + wpe 128 + block 3280 + ln_f 32; the tied head adds nothing. */
  EXPECT_OK(accel_model_num_parameters(model, 0, &count));
  EXPECT(count == 3952);

  input = ids(12, ACCEL_INT64);
  EXPECT_OK(accel_model_forward(model, input, &logits));
  EXPECT_OK(accel_tensor_shape(logits, dims, 3));
  EXPECT(dims[0] == 2 && dims[1] == 6 && dims[2] == 32);
  accel_tensor_free(logits);
  accel_tensor_free(input);

  /* 9 positions for a table of 8. */
  {
    static int64_t long_ids[9] = {0};
    int64_t shape[2] = {1, 9};
    logits = NULL;
    EXPECT_OK(accel_tensor_from_buffer(long_ids, sizeof long_ids, ACCEL_INT64, shape, 2, &input));
    EXPECT_ERROR(accel_model_forward(model, input, &logits), ACCEL_ERR_INVALID_ARGUMENT, "sequence length 9");
    EXPECT(strstr(accel_last_error(), "num_positions 8") != NULL);
    EXPECT(strstr(accel_last_error(), "node \"wpe\"") != NULL);
    EXPECT(logits == NULL);
    accel_tensor_free(input);
  }
  input = ids(12, ACCEL_FLOAT32);
  EXPECT_ERROR(accel_model_forward(model, input, &logits), ACCEL_ERR_INVALID_ARGUMENT, "must hold integer ids");
  accel_tensor_free(input);
  accel_model_free(model);

  model = NULL;
  EXPECT_ERROR(accel_model_from_json("{\"inputs\": [\"x\"], \"nodes\": [{\"name\": \"a\", \"type\": \"ReLU\","
                                     " \"input\": \"y\"}], \"outputs\": [\"a\"]}",
                                     &model),
               ACCEL_ERR_INVALID_ARGUMENT, "input \"y\" names no graph input");
  EXPECT(model == NULL);
  EXPECT_ERROR(accel_model_from_json("{\"inputs\": [\"x\"], \"nodes\": [{\"name\": \"a\", \"type\": \"ReLU\"}],"
                                     " \"outputs\": [\"b\"]}",
                                     &model),
               ACCEL_ERR_INVALID_ARGUMENT, "output \"b\" names no node");
  return capi_report("test_graph_api");
}
