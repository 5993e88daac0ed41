/* Trains a Hugging Face model exported by export_hf_models.py with the named
   forward, from C, on every process of `accel launch`:

     hf_train DATA_DIR OUT_DIR STEPS

   Each step, process r takes rows (2 * step * world + 2 r) .. +2 (mod N) of the
   batches in DATA_DIR. Fails (exit 1) unless the loss over all rows falls and
   every process ends with the same parameters. Process 0 then writes
   OUT_DIR/model.safetensors (save_model, collective), OUT_DIR/logits.bin (the
   float32 logits of libaccel's eval forward over all rows) and OUT_DIR/losses.txt. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_checkpoint.h"

#define CHECK(call)                                                                           \
  do {                                                                                        \
    if ((call) != ACCEL_OK) {                                                                 \
      fprintf(stderr, "hf_train.c:%d: %s failed: %s\n", __LINE__, #call, accel_last_error()); \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

static const char* const kFields[3] = {"input_ids", "attention_mask", "labels"};
static int64_t* field_data[3];
static int64_t field_width[3]; /* values per row: the sequence length, or 1 for class labels */
static int64_t rows;

static void read_field(const char* dir, int f) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.bin", dir, kFields[f]);
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(file, 0, SEEK_END);
  long bytes = ftell(file);
  fseek(file, 0, SEEK_SET);
  field_data[f] = malloc((size_t)bytes);
  if (fread(field_data[f], 1, (size_t)bytes, file) != (size_t)bytes) exit(1);
  fclose(file);
  field_width[f] = (int64_t)(bytes / 8) / rows;
}

/* The batch of count rows from first (wrapping), as a new map. */
static accel_tensor_map* batch(int64_t first, int64_t count) {
  accel_tensor_map* map;
  CHECK(accel_tensor_map_create(&map));
  for (int f = 0; f < 3; ++f) {
    int64_t width = field_width[f];
    int64_t* values = malloc((size_t)(count * width) * sizeof(int64_t));
    for (int64_t r = 0; r < count; ++r) {
      memcpy(values + r * width, field_data[f] + ((first + r) % rows) * width, (size_t)width * sizeof(int64_t));
    }
    int64_t shape[2] = {count, width};
    accel_tensor* tensor;
    /* class labels are [N], token fields [N, T] */
    CHECK(accel_tensor_from_buffer(values, (size_t)(count * width) * sizeof(int64_t), ACCEL_INT64, shape,
                                   f == 2 && width == 1 ? 1 : 2, &tensor));
    CHECK(accel_tensor_map_set(map, kFields[f], tensor)); /* the map keeps its own reference */
    accel_tensor_free(tensor);
    free(values);
  }
  return map;
}

static double scalar(const accel_tensor_map* outputs, const char* name) {
  accel_tensor* t;
  double value;
  CHECK(accel_tensor_map_get(outputs, name, &t));
  CHECK(accel_tensor_item(t, &value));
  accel_tensor_free(t);
  return value;
}

/* The eval loss over every row; with logits_path, the logits are written there. */
static double eval_loss(accel_model* model, const char* logits_path) {
  accel_tensor_map *inputs = batch(0, rows), *outputs;
  CHECK(accel_model_train(model, 0));
  CHECK(accel_model_forward_named(model, inputs, &outputs));
  CHECK(accel_model_train(model, 1));
  double loss = scalar(outputs, "loss");
  if (logits_path != NULL) {
    accel_tensor* logits;
    int64_t numel;
    CHECK(accel_tensor_map_get(outputs, "logits", &logits));
    CHECK(accel_tensor_numel(logits, &numel));
    float* values = malloc((size_t)numel * sizeof(float));
    CHECK(accel_tensor_copy_to(logits, values, (size_t)numel * sizeof(float)));
    FILE* file = fopen(logits_path, "wb");
    if (file == NULL || fwrite(values, sizeof(float), (size_t)numel, file) != (size_t)numel) exit(1);
    fclose(file);
    free(values);
    accel_tensor_free(logits);
  }
  accel_tensor_map_free(outputs);
  accel_tensor_map_free(inputs);
  return loss;
}

/* The sum of every tensor of get_state_dict, as a replica checksum (whole
   tensors under FULL_SHARD too; collective there). */
static double checksum(accel_accelerator* acc, const accel_model* model) {
  size_t count;
  double total = 0;
  CHECK(accel_accelerator_get_state_dict(acc, model, NULL, NULL, 0, &count));
  accel_tensor** tensors = calloc(count, sizeof *tensors);
  if (tensors == NULL && count > 0) exit(1);
  CHECK(accel_accelerator_get_state_dict(acc, model, NULL, tensors, count, &count));
  for (size_t i = 0; i < count; ++i) {
    accel_tensor* sum;
    double value;
    CHECK(accel_tensor_sum(tensors[i], &sum));
    CHECK(accel_tensor_item(sum, &value));
    total += value;
    accel_tensor_free(sum);
    accel_tensor_free(tensors[i]);
  }
  free(tensors);
  return total;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: hf_train DATA_DIR OUT_DIR STEPS\n");
    return 2;
  }
  const char *data_dir = argv[1], *out_dir = argv[2];
  const int steps = atoi(argv[3]);
  char path[4096];
  { /* rows: from input_ids, N x 16 int64 as export_hf_models.py writes */
    snprintf(path, sizeof path, "%s/input_ids.bin", data_dir);
    FILE* file = fopen(path, "rb");
    if (file == NULL) return 1;
    fseek(file, 0, SEEK_END);
    rows = ftell(file) / 8 / 16;
    fclose(file);
  }
  for (int f = 0; f < 3; ++f) read_field(data_dir, f);

  accel_accelerator_options options;
  accel_accelerator_options_init(&options);
  options.cpu = 1;
  options.project_dir = out_dir;
  accel_accelerator* acc;
  accel_model* model;
  accel_optimizer* optimizer;
  int rank, world;
  CHECK(accel_accelerator_create(&options, &acc));
  CHECK(accel_accelerator_process_index(acc, &rank));
  CHECK(accel_accelerator_num_processes(acc, &world));
  snprintf(path, sizeof path, "%s/model.pt", data_dir);
  CHECK(accel_model_from_torchscript(path, &model));
  accel_optimizer_options adamw;
  accel_optimizer_options_init(&adamw, ACCEL_OPTIM_ADAMW);
  adamw.lr = 3e-3;
  CHECK(accel_optimizer_create(model, &adamw, &optimizer));
  CHECK(accel_accelerator_prepare_model(acc, model));
  CHECK(accel_accelerator_prepare_optimizer(acc, optimizer));

  /* Under tensor parallelism (an Accelerate config's parallelism_config) the
     tp consecutive ranks of a group train on the same rows: the rows are
     dealt to the groups, the data-parallel ranks. */
  int64_t tp_size;
  CHECK(accel_accelerator_parallelism_config(acc, NULL, NULL, &tp_size, NULL));
  const int64_t data_rank = rank / tp_size, data_world = world / tp_size;
  const double first = eval_loss(model, NULL);
  for (int step = 0; step < steps; ++step) {
    accel_tensor_map *inputs = batch(2 * ((int64_t)step * data_world + data_rank), 2), *outputs;
    accel_tensor* loss;
    CHECK(accel_model_forward_named(model, inputs, &outputs));
    CHECK(accel_tensor_map_get(outputs, "loss", &loss));
    CHECK(accel_accelerator_backward(acc, loss));
    CHECK(accel_optimizer_step(optimizer));
    CHECK(accel_optimizer_zero_grad(optimizer));
    accel_tensor_free(loss);
    accel_tensor_map_free(outputs);
    accel_tensor_map_free(inputs);
  }
  snprintf(path, sizeof path, "%s/logits.bin", out_dir);
  const double last = eval_loss(model, rank == 0 ? path : NULL);

  /* Replicas: every process's checksum, gathered, must be identical. */
  double mine = checksum(acc, model), all[16];
  int64_t one = 1;
  accel_tensor *local, *gathered;
  CHECK(accel_tensor_from_buffer(&mine, sizeof mine, ACCEL_FLOAT64, &one, 1, &local));
  CHECK(accel_accelerator_gather(acc, local, &gathered));
  CHECK(accel_tensor_copy_to(gathered, all, sizeof(double) * (size_t)world));
  int failed = !(last < first * 0.8);
  for (int r = 1; r < world; ++r) failed |= all[r] != all[0];
  /* What this process holds (halved under FULL_SHARD, from the launcher's config). */
  accel_sharding_strategy strategy;
  int64_t held_parameters, held_gradients, held_state;
  CHECK(accel_accelerator_sharding_strategy(acc, &strategy));
  int offload;
  CHECK(accel_accelerator_held_bytes(acc, model, optimizer, &held_parameters, &held_gradients, &held_state));
  CHECK(accel_accelerator_cpu_offload(acc, &offload));
  printf(
      "rank %d: eval loss %.5f -> %.5f, parameter checksum %.9g (rank 0: %.9g); sharding strategy %d holds "
      "%lld + %lld + %lld bytes; cpu offload %d\n",
      rank, first, last, mine, all[0], (int)strategy, (long long)held_parameters, (long long)held_gradients,
      (long long)held_state, offload);

  snprintf(path, sizeof path, "%s/saved", out_dir);
  CHECK(accel_accelerator_save_model(acc, model, path, "10GB", 1));
  if (rank == 0) {
    snprintf(path, sizeof path, "%s/losses.txt", out_dir);
    FILE* file = fopen(path, "w");
    if (file == NULL) return 1;
    fprintf(file, "%.6f %.6f\n", first, last);
    fclose(file);
  }
  accel_tensor_free(gathered);
  accel_tensor_free(local);
  accel_optimizer_free(optimizer);
  accel_model_free(model);
  accel_accelerator_free(acc);
  for (int f = 0; f < 3; ++f) free(field_data[f]);
  if (failed) fprintf(stderr, "rank %d: the loss did not fall by 20%% or the replicas differ\n", rank);
  return failed;
}
