/* Tensor parallelism from C (docs/parallelism.md): run under `accel launch
   --nproc_per_node 2`, the accelerator's options ask for tp_size 2
   (parallelism_tp_size), the JSON GPT's transformer layers are split over the
   two processes, a training step runs, and the split model's loss on a probe
   batch is the loss of the whole model, gathered by get_state_dict and loaded
   into a model that was never prepared. With the argument "sp", the same with
   sequence parallelism in the spec's tp_plan. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_checkpoint.h"
#include "dist_check.h"

#define BLOCK                                                                                       \
  "\"type\": \"TransformerEncoderLayer\", \"d_model\": 16, \"nhead\": 2, \"dim_feedforward\": 32, " \
  "\"dropout\": 0.0, \"activation\": \"gelu\", \"batch_first\": true, \"norm_first\": true, \"causal\": true"

static const char* kGpt =
    "{\"inputs\": [\"input_ids\", {\"name\": \"labels\", \"optional\": true}], \"nodes\": ["
    "{\"name\": \"wte\", \"type\": \"Embedding\", \"num_embeddings\": 32, \"embedding_dim\": 16},"
    "{\"name\": \"wpe\", \"type\": \"PositionalEmbedding\", \"num_positions\": 8, \"embedding_dim\": 16,"
    " \"batch_first\": true},"
    "{\"name\": \"h0\", " BLOCK "}, {\"name\": \"h1\", " BLOCK
    "},"
    "{\"name\": \"ln_f\", \"type\": \"LayerNorm\", \"normalized_shape\": 16},"
    "{\"name\": \"logits\", \"type\": \"Linear\", \"in_features\": 16, \"out_features\": 32,"
    " \"weight\": \"wte.weight\"},"
    "{\"name\": \"loss\", \"type\": \"CausalLMLoss\", \"input\": [\"logits\", \"labels\"]}],"
    " \"outputs\": [\"loss\"]}";

/* The loss of model on ids as inputs and labels; a new handle in *loss when loss is not NULL. */
static double loss_of(accel_model* model, const accel_tensor* ids, accel_tensor** loss) {
  accel_tensor_map* inputs = NULL;
  accel_tensor_map* outputs = NULL;
  accel_tensor* value = NULL;
  double out = 0;
  CHECK_OK(accel_tensor_map_create(&inputs));
  CHECK_OK(accel_tensor_map_set(inputs, "input_ids", ids));
  CHECK_OK(accel_tensor_map_set(inputs, "labels", ids));
  CHECK_OK(accel_model_forward_named(model, inputs, &outputs));
  CHECK_OK(accel_tensor_map_get(outputs, "loss", &value));
  CHECK_OK(accel_tensor_item(value, &out));
  if (loss) {
    *loss = value;
  } else {
    accel_tensor_free(value);
  }
  accel_tensor_map_free(outputs);
  accel_tensor_map_free(inputs);
  return out;
}

static int64_t rows_of(const accel_tensor_map* map, const char* name) {
  accel_tensor* t = NULL;
  int64_t dims[2] = {0, 0};
  CHECK_OK(accel_tensor_map_get(map, name, &t));
  CHECK_OK(accel_tensor_shape(t, dims, 2));
  accel_tensor_free(t);
  return dims[0];
}

/* With "sp": the plan adds sequence parallelism (docs/parallelism.md). */
static const char* kSequencePlan =
    ", \"tp_plan\": {\"*.self_attn\": \"colwise\", \"*.self_attn.out_proj\": \"rowwise\", "
    "\"*.linear1\": \"colwise\", \"*.linear2\": \"rowwise\", \"*.norm1\": \"sequence_parallel\", "
    "\"*.norm2\": \"sequence_parallel\", \"ln_f\": \"sequence_parallel\"}}";

int main(int argc, char** argv) {
  const int sequence_parallel = argc > 1 && strcmp(argv[1], "sp") == 0;
  char spec[4096];
  const size_t gpt_length = strlen(kGpt) - 1; /* kGpt without its closing brace */
  CHECK(gpt_length + strlen(kSequencePlan) < sizeof spec);
  memcpy(spec, kGpt, gpt_length);
  strcpy(spec + gpt_length, sequence_parallel ? kSequencePlan : "}");
  accel_accelerator_options options;
  accel_accelerator_options_init(&options);
  options.cpu = 1;
  options.parallelism_tp_size = 2;
  accel_accelerator* acc = NULL;
  CHECK_OK(accel_accelerator_create(&options, &acc));
  int rank = 0;
  CHECK_OK(accel_accelerator_process_index(acc, &rank));
  dist_check_rank = rank;
  int64_t replicate = 0, shard = 0, tp = 0, cp = 0;
  CHECK_OK(accel_accelerator_parallelism_config(acc, &replicate, &shard, &tp, &cp));
  CHECK(replicate == 1 && shard == 1 && tp == 2 && cp == 1);
  {
    /* tp innermost: the two ranks are one tensor-parallel group, ranks 0 and 1 in it. */
    int64_t replicate_rank = -1, shard_rank = -1, tp_rank = -1, cp_rank = -1;
    CHECK_OK(accel_accelerator_parallelism_ranks(acc, &replicate_rank, &shard_rank, &tp_rank, &cp_rank));
    CHECK(replicate_rank == 0 && shard_rank == 0 && tp_rank == rank && cp_rank == 0);
  }
  CHECK_OK(accel_accelerator_set_seed(acc, 0));

  accel_model* model = NULL;
  accel_optimizer* optimizer = NULL;
  accel_optimizer_options adamw;
  CHECK_OK(accel_model_from_json(spec, &model));
  accel_optimizer_options_init(&adamw, ACCEL_OPTIM_ADAMW);
  adamw.lr = 1e-3;
  CHECK_OK(accel_optimizer_create(model, &adamw, &optimizer));
  CHECK_OK(accel_accelerator_prepare_model(acc, model));
  CHECK_OK(accel_accelerator_prepare_optimizer(acc, optimizer));
  accel_tensor_map* params = NULL;
  CHECK_OK(accel_model_named_parameters(model, &params));
  CHECK(rows_of(params, "h0.linear1.weight") == 16);           /* 32 rows split in two */
  CHECK(rows_of(params, "h0.self_attn.in_proj_weight") == 24); /* one of two heads of q, k, v */
  CHECK(rows_of(params, "ln_f.weight") == 16);                 /* whole */
  accel_tensor_map_free(params);

  int64_t ids[32];
  for (int i = 0; i < 32; ++i) ids[i] = (i * 7 + 3) % 32;
  const int64_t shape[2] = {4, 8};
  accel_tensor* batch = NULL;
  CHECK_OK(accel_tensor_from_buffer(ids, sizeof ids, ACCEL_INT64, shape, 2, &batch));
  accel_tensor* loss = NULL;
  loss_of(model, batch, &loss);
  CHECK_OK(accel_accelerator_backward(acc, loss));
  CHECK_OK(accel_optimizer_step(optimizer));
  CHECK_OK(accel_optimizer_zero_grad(optimizer));
  accel_tensor_free(loss);

  /* Collective under tensor parallelism: every rank gathers the slices. */
  size_t count = 0;
  CHECK_OK(accel_accelerator_get_state_dict(acc, model, NULL, NULL, 0, &count));
  const char* names[64];
  accel_tensor* tensors[64];
  CHECK(count <= 64);
  CHECK_OK(accel_accelerator_get_state_dict(acc, model, names, tensors, 64, &count));
  accel_tensor_map* whole = NULL;
  CHECK_OK(accel_tensor_map_create(&whole));
  for (size_t i = 0; i < count; ++i) CHECK_OK(accel_tensor_map_set(whole, names[i], tensors[i]));
  CHECK(rows_of(whole, "h0.linear1.weight") == 32);
  accel_model* reference = NULL;
  CHECK_OK(accel_model_from_json(kGpt, &reference));
  CHECK_OK(accel_model_load_state_dict(reference, whole, 1));
  const double split = loss_of(model, batch, NULL), full = loss_of(reference, batch, NULL);
  /* The same function with sums reassociated: the mean of 28 token losses of
     about 3.5 moves by at most 28 * 6e-8 * 3.5 = 5.9e-6 (float32's unit
     roundoff); the products inside add 16 or 32 terms, less again. */
  CHECK(fabs(split - full) <= 1e-5);
  if (rank == 0) printf("ok tp 2%s: loss %.6f\n", sequence_parallel ? " with sequence parallelism" : "", split);

  for (size_t i = 0; i < count; ++i) accel_tensor_free(tensors[i]);
  accel_tensor_map_free(whole);
  accel_tensor_free(batch);
  accel_model_free(reference);
  accel_optimizer_free(optimizer);
  accel_model_free(model);
  accel_accelerator_free(acc);
  return 0;
}
