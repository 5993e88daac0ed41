/* Big-model tools through the C ABI: an empty GPT (meta parameters), its
   sizes, Accelerate's device map for a cpu budget, and a user map checked;
   then the GPT dispatched over cpu and disk gives the loaded model's logits. */
#include <string.h>

#include "capi_test.h"

static const char* kGpt =
    "{\"inputs\": [\"input_ids\"], \"nodes\": ["
    "  {\"name\": \"wte\", \"type\": \"Embedding\", \"num_embeddings\": 256, \"embedding_dim\": 64},"
    "  {\"name\": \"h\", \"type\": \"Sequential\", \"layers\": ["
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, "
    "\"batch_first\": true},"
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, "
    "\"batch_first\": true},"
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, "
    "\"batch_first\": true},"
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, "
    "\"batch_first\": true}]},"
    "  {\"name\": \"ln_f\", \"type\": \"LayerNorm\", \"normalized_shape\": 64},"
    "  {\"name\": \"logits\", \"type\": \"Linear\", \"in_features\": 64, \"out_features\": 256, \"bias\": false}],"
    " \"outputs\": [\"logits\"]}";

/* Logits of ids 0..7 (eval mode), copied out. */
static void logits_of(accel_model* model, float* out, size_t count) {
  int64_t ids[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t shape[2] = {1, 8};
  accel_tensor* input = NULL;
  accel_tensor* logits = NULL;
  EXPECT_OK(accel_model_train(model, 0));
  EXPECT_OK(accel_tensor_from_buffer(ids, sizeof ids, ACCEL_INT64, shape, 2, &input));
  EXPECT_OK(accel_model_forward(model, input, &logits));
  EXPECT_OK(accel_tensor_copy_to(logits, out, count * sizeof out[0]));
  accel_tensor_free(logits);
  accel_tensor_free(input);
}

/* The GPT saved, loaded empty and dispatched: "h" (the four blocks) and the
   head stay on disk and are read from the checkpoint around their forward. */
/* transformers' hf_device_map as the C ABI gives it: compact JSON in the map's order. */
static void expect_hf_device_map(const accel_model* model, const char* want) {
  char* text = NULL;
  EXPECT_OK(accel_model_hf_device_map(model, &text));
  EXPECT(text != NULL && strcmp(text, want) == 0);
  if (text != NULL && strcmp(text, want) != 0) fprintf(stderr, "hf_device_map %s, want %s\n", text, want);
  accel_string_free(text);
}

static void dispatched(void) {
  static float want[8 * 256], got[8 * 256];
  accel_accelerator* acc = NULL;
  accel_model* full = NULL;
  accel_model* empty = NULL;
  FILE* index = NULL;
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_model_from_json(kGpt, &full));
  EXPECT_OK(accel_accelerator_save_model(acc, full, "big_model_c_ckpt", NULL, 1));
  logits_of(full, want, 8 * 256);
  EXPECT_OK(accel_model_from_json_empty(kGpt, &empty));
  EXPECT_ERROR(accel_load_checkpoint_and_dispatch(empty, "big_model_c_ckpt", "{\"\": \"disk\"}", NULL, NULL),
               ACCEL_ERR_INVALID_ARGUMENT, "no offload folder");
  expect_hf_device_map(empty, "{}"); /* the refusal recorded no map */
  EXPECT_OK(accel_load_checkpoint_and_dispatch(
      empty, "big_model_c_ckpt", "{\"wte\": \"cpu\", \"h\": \"disk\", \"ln_f\": \"cpu\", \"logits\": \"disk\"}",
      "big_model_c_offload", NULL));
  expect_hf_device_map(empty, "{\"wte\":\"cpu\",\"h\":\"disk\",\"ln_f\":\"cpu\",\"logits\":\"disk\"}");
  index = fopen("big_model_c_offload/offload_index.json", "r");
  EXPECT(index != NULL);
  if (index != NULL) fclose(index);
  logits_of(empty, got, 8 * 256);
  EXPECT(memcmp(want, got, sizeof want) == 0);
  accel_model_free(empty);

  /* Accelerate's device_map strings: the free memory of every GPU, then the RAM
     available (balanced over the GPUs but for "sequential"); this small model fits
     the first device, whichever it is. Other strategies are named. */
  {
    static const char* const kStrategies[] = {"\"auto\"", "\"balanced\"", "\"balanced_low_0\"", "\"sequential\""};
    for (size_t i = 0; i < sizeof kStrategies / sizeof kStrategies[0]; ++i) {
      EXPECT_OK(accel_model_from_json_empty(kGpt, &empty));
      EXPECT_OK(accel_load_checkpoint_and_dispatch(empty, "big_model_c_ckpt", kStrategies[i], NULL, NULL));
      {
        char* placed_map = NULL; /* the computed map, not the strategy's name */
        EXPECT_OK(accel_model_hf_device_map(empty, &placed_map));
        EXPECT(placed_map != NULL && strchr(placed_map, ':') != NULL && strstr(placed_map, "auto") == NULL);
        accel_string_free(placed_map);
      }
      memset(got, 0, sizeof got);
      logits_of(empty, got, 8 * 256);
      EXPECT(memcmp(want, got, sizeof want) == 0);
      accel_model_free(empty);
    }
  }
  EXPECT_OK(accel_model_from_json_empty(kGpt, &empty));
  EXPECT_ERROR(accel_load_checkpoint_and_dispatch(empty, "big_model_c_ckpt", "\"balanced_low_1\"", NULL, NULL),
               ACCEL_ERR_INVALID_ARGUMENT, "\"balanced_low_1\"");
  /* An empty model has nothing to offload. */
  EXPECT_ERROR(accel_disk_offload(empty, "big_model_c_disk"), ACCEL_ERR_INVALID_ARGUMENT, "has no data");
  accel_model_free(empty);

  /* Accelerate's dispatch_model of a loaded model over cpu and disk: the weights go to the
     folder, the disk nodes to meta, and the logits stay. A map with disk but no folder, and
     an unknown device, are refused before anything moves. */
  {
    accel_model* placed = NULL;
    const char* map = "{\"wte\": \"cpu\", \"h\": \"disk\", \"ln_f\": \"cpu\", \"logits\": \"disk\"}";
    EXPECT_OK(accel_model_from_json_empty(kGpt, &placed));
    EXPECT_OK(accel_model_materialize(placed, "big_model_c_ckpt", NULL));
    EXPECT_ERROR(accel_dispatch_model(placed, map, NULL), ACCEL_ERR_INVALID_ARGUMENT, "no offload folder");
    EXPECT_ERROR(accel_dispatch_model(placed, "{\"\": \"tpu\"}", NULL), ACCEL_ERR_INVALID_ARGUMENT, "\"tpu\"");
    memset(got, 0, sizeof got);
    logits_of(placed, got, 8 * 256);
    EXPECT(memcmp(want, got, sizeof want) == 0); /* untouched by the refusals */
    expect_hf_device_map(placed, "{}");          /* materialize places by no map */
    EXPECT_OK(accel_dispatch_model(placed, map, "big_model_c_dispatch"));
    expect_hf_device_map(placed, "{\"wte\":\"cpu\",\"h\":\"disk\",\"ln_f\":\"cpu\",\"logits\":\"disk\"}");
    index = fopen("big_model_c_dispatch/offload_index.json", "r");
    EXPECT(index != NULL);
    if (index != NULL) fclose(index);
    memset(got, 0, sizeof got);
    logits_of(placed, got, 8 * 256);
    EXPECT(memcmp(want, got, sizeof want) == 0);
    EXPECT_ERROR(accel_dispatch_model(placed, "{\"\": \"cpu\"}", NULL), ACCEL_ERR_INVALID_ARGUMENT, "has no data");
    accel_model_free(placed);
  }

  /* Accelerate's cpu_offload: an unknown device, or a GPU the machine lacks, is named
     before anything moves; onto the CPU the model computes the same logits (onto a
     GPU: the CudaDispatch tests). */
  EXPECT_ERROR(accel_cpu_offload(full, "tpu:0", 0), ACCEL_ERR_INVALID_ARGUMENT, "\"tpu:0\"");
  EXPECT_ERROR(accel_cpu_offload(full, "cuda:64", 0), ACCEL_ERR_INVALID_ARGUMENT, "\"cuda:64\" but this machine");
  EXPECT_OK(accel_cpu_offload(full, NULL, 1));
  memset(got, 0, sizeof got);
  logits_of(full, got, 8 * 256);
  EXPECT(memcmp(want, got, sizeof want) == 0);

  /* Accelerate's disk_offload of the loaded model: its weights go to the folder and to
     meta, and it computes the same logits. A list (not a graph) model is refused. */
  {
    accel_model* list = NULL;
    memset(got, 0, sizeof got);
    EXPECT_ERROR(accel_disk_offload_on_device(full, "big_model_c_disk", "tpu"), ACCEL_ERR_INVALID_ARGUMENT, "\"tpu\"");
    EXPECT_ERROR(accel_disk_offload_on_device(full, "big_model_c_disk", "cuda:64"), ACCEL_ERR_INVALID_ARGUMENT,
                 "\"cuda:64\" but this machine");
    EXPECT_OK(accel_disk_offload_on_device(full, "big_model_c_disk", "cpu"));
    index = fopen("big_model_c_disk/offload_index.json", "r");
    EXPECT(index != NULL);
    if (index != NULL) fclose(index);
    logits_of(full, got, 8 * 256);
    EXPECT(memcmp(want, got, sizeof want) == 0);
    EXPECT_OK(accel_model_from_json("[{\"type\": \"Linear\", \"in_features\": 2, \"out_features\": 2}]", &list));
    EXPECT_ERROR(accel_disk_offload(list, "big_model_c_disk_list"), ACCEL_ERR_UNSUPPORTED, "JSON graph");
    EXPECT_ERROR(accel_cpu_offload(list, "cpu", 0), ACCEL_ERR_UNSUPPORTED, "JSON graph");
    accel_model_free(list);
  }
  accel_model_free(full);
  accel_accelerator_free(acc);
}

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
  EXPECT(map != NULL && strcmp(map,
                               "{\"wte\":\"cpu\",\"h.0\":\"cpu\",\"h.1\":\"disk\",\"h.2\":\"disk\",\"h.3\":\"disk\","
                               "\"ln_f\":\"disk\",\"logits\":\"disk\"}") == 0);
  EXPECT_OK(accel_verify_device_map(model, map));
  accel_string_free(map);
  map = NULL;
  EXPECT_ERROR(accel_infer_auto_device_map(model, "{\"cpu\": 100000}", no_split, 1, NULL, &map),
               ACCEL_ERR_INVALID_ARGUMENT, "\"h.0\" (199936 bytes)");
  EXPECT(map == NULL);
  /* max_memory NULL: Accelerate's get_max_memory(), here the RAM available (far more than the model). */
  char* budgets = NULL;
  EXPECT_OK(accel_available_memory(&budgets));
  EXPECT(budgets != NULL && strstr(budgets, "\"cpu\":") != NULL);
  accel_string_free(budgets);
  EXPECT_OK(accel_infer_auto_device_map(model, NULL, no_split, 1, NULL, &map));
  EXPECT(map != NULL && strcmp(map, "{\"\":\"cpu\"}") == 0);
  accel_string_free(map);
  map = NULL;
  /* Accelerate 1.15: get_balanced_memory(m, {0: 600000, 1: 600000, 2: 600000, "cpu": 10**9},
     ["TransformerEncoderLayer"], low_zero=False/True); budgets are numbers, no GPU is needed. */
  EXPECT_OK(accel_balanced_memory(model, "{\"0\": 600000, \"1\": 600000, \"2\": 600000, \"cpu\": 1000000000}", no_split,
                                  1, NULL, 0, &budgets));
  EXPECT(budgets != NULL &&
         strcmp(budgets, "{\"cuda:0\":560362,\"cuda:1\":560362,\"cuda:2\":600000,\"cpu\":1000000000}") == 0);
  accel_string_free(budgets);
  EXPECT_OK(accel_balanced_memory(model, "{\"0\": 600000, \"1\": 600000, \"2\": 600000, \"cpu\": 1000000000}", no_split,
                                  1, NULL, 1, &budgets));
  EXPECT(budgets != NULL &&
         strcmp(budgets, "{\"cuda:0\":0,\"cuda:1\":600000,\"cuda:2\":600000,\"cpu\":1000000000}") == 0);
  /* ... and infer_auto_device_map over it leaves the emptied GPU 0 out. */
  EXPECT_OK(accel_infer_auto_device_map(model, budgets, no_split, 1, NULL, &map));
  EXPECT(map != NULL && strcmp(map,
                               "{\"wte\":\"cuda:1\",\"h.0\":\"cuda:1\",\"h.1\":\"cuda:1\",\"h.2\":\"cuda:2\","
                               "\"h.3\":\"cuda:2\",\"ln_f\":\"cuda:2\",\"logits\":\"cuda:2\"}") == 0);
  accel_string_free(budgets);
  accel_string_free(map);
  map = NULL;
  EXPECT_ERROR(accel_verify_device_map(model, "{\"wte\": \"cpu\", \"h\": \"disk\", \"lm_head\": \"cpu\"}"),
               ACCEL_ERR_INVALID_ARGUMENT, "\"lm_head\" names no module");
  EXPECT_ERROR(accel_verify_device_map(model, "{\"wte\": \"cpu\", \"h\": \"disk\", \"ln_f\": \"cpu\"}"),
               ACCEL_ERR_INVALID_ARGUMENT, "\"logits.weight\" is not placed");
  accel_model_free(model);
  dispatched();
  return capi_report("test_big_model_api");
}
