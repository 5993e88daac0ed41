/*
 * Train a small byte-level GPT on Debian's fortunes with libaccel's C ABI.
 *
 * The model is a JSON graph (docs/models.md): token and position embeddings,
 * causal pre-norm transformer blocks, a final norm and an lm head tied to the
 * token embedding, with the shifted language-model loss.
 *
 *   accel launch --nproc_per_node 2 ./train_gpt_fortunes --epochs 1
 *
 * Usage: train_gpt_fortunes [--data DIR] [--files a,b] [--epochs N] [--max-steps N]
 *                           [--seed S] [--check]
 * Prints "initial perplexity P" (held-out, before training), "step S: loss L"
 * every 10 steps, one line per epoch "epoch E: loss L, perplexity P" (the mean
 * training loss, and the exact perplexity of the held-out tenth of the
 * fortunes: exp of the summed token losses over the summed token count of
 * every process), then a greedy sample. Every process then prints a checksum
 * of the model's parameters (gathered whole); --check fails (exit 1) unless the
 * perplexity fell, the replicas agree and the lm head is still the token
 * embedding. The same program trains under a mesh, its transformer blocks split
 * by heads and feed-forward columns (docs/parallelism.md):
 *
 *   accel launch --nproc_per_node 2 --parallelism_config_tp_size 2 ./train_gpt_fortunes
 *
 * or with each process computing its half of every sequence (context
 * parallelism; both see the same batches, so it trains as one process does):
 *
 *   accel launch --nproc_per_node 2 --parallelism_config_cp_size 2 ./train_gpt_fortunes
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

#define TRY(call)                                                                                    \
  do {                                                                                               \
    accel_status status_ = (call);                                                                   \
    if (status_ != ACCEL_OK) {                                                                       \
      fprintf(stderr, "%s failed: %s: %s\n", #call, accel_status_name(status_), accel_last_error()); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

enum { kMaxLength = 128, kWidth = 64, kVocab = 256, kBatch = 8 };

/* A GPT: 2 causal pre-norm blocks of width 64, 4 heads, 128 positions, 256 byte
   ids, the head tied to wte. ln_f is an output too, so the tie can be checked. */
static const char* kModelSpec =
    "{\"inputs\": [\"input_ids\", {\"name\": \"attention_mask\", \"optional\": true},"
    "            {\"name\": \"labels\", \"optional\": true}],"
    " \"nodes\": ["
    "  {\"name\": \"wte\", \"type\": \"Embedding\", \"num_embeddings\": 256, \"embedding_dim\": 64},"
    "  {\"name\": \"wpe\", \"type\": \"PositionalEmbedding\", \"num_positions\": 128, \"embedding_dim\": 64,"
    "   \"batch_first\": true},"
    "  {\"name\": \"h\", \"type\": \"Sequential\", \"input\": [\"wpe\", \"attention_mask\"], \"layers\": ["
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256,"
    "     \"dropout\": 0.0, \"activation\": \"gelu\", \"batch_first\": true, \"norm_first\": true, \"causal\": true},"
    "    {\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256,"
    "     \"dropout\": 0.0, \"activation\": \"gelu\", \"batch_first\": true, \"norm_first\": true, \"causal\": true}]},"
    "  {\"name\": \"ln_f\", \"type\": \"LayerNorm\", \"normalized_shape\": 64},"
    "  {\"name\": \"logits\", \"type\": \"Linear\", \"in_features\": 64, \"out_features\": 256, \"bias\": false,"
    "   \"weight\": \"wte.weight\"},"
    "  {\"name\": \"loss\", \"type\": \"CausalLMLoss\", \"input\": [\"logits\", \"labels\"]}],"
    " \"outputs\": [\"logits\", \"loss\", \"ln_f\"]}";

struct settings {
  const char* data_dir;
  const char* files; /* comma-separated fortune files */
  int epochs;
  long max_steps; /* per epoch; 0 = the whole epoch */
  unsigned long long seed;
  int check;
};

static struct settings parse_args(int argc, char** argv) {
  struct settings s = {"/usr/share/games/fortunes", "linux,disclaimer", 10, 0, 42, 0};
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
      s.data_dir = argv[++i];
    } else if (strcmp(argv[i], "--files") == 0 && i + 1 < argc) {
      s.files = argv[++i];
    } else if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc) {
      s.epochs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--max-steps") == 0 && i + 1 < argc) {
      s.max_steps = atol(argv[++i]);
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      s.seed = strtoull(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--check") == 0) {
      s.check = 1;
    } else {
      fprintf(stderr, "usage: %s [--data DIR] [--files a,b] [--epochs N] [--max-steps N] [--seed S] [--check]\n",
              argv[0]);
      exit(2);
    }
  }
  return s;
}

/* Growable int64 arrays for the flat ids and offsets of one split. */
struct split {
  int64_t *ids, *offsets;
  size_t num_ids, num_offsets, ids_cap, offsets_cap;
};

static void push(int64_t** array, size_t* count, size_t* cap, int64_t value) {
  if (*count == *cap) {
    *cap = *cap ? *cap * 2 : 1024;
    *array = realloc(*array, *cap * sizeof(int64_t));
    if (*array == NULL) exit(1);
  }
  (*array)[(*count)++] = value;
}

/* Appends a fortune, cut into pieces of at most kMaxLength bytes (the
   position table's size) so that no byte is dropped. */
static void add_fortune(struct split* split, const int64_t* ids, int64_t length) {
  if (split->num_offsets == 0) push(&split->offsets, &split->num_offsets, &split->offsets_cap, 0);
  for (int64_t start = 0; start < length; start += kMaxLength) {
    int64_t end = start + kMaxLength < length ? start + kMaxLength : length;
    if (end - start < 2) continue; /* a piece of one byte predicts nothing */
    for (int64_t i = start; i < end; ++i) push(&split->ids, &split->num_ids, &split->ids_cap, ids[i]);
    push(&split->offsets, &split->num_offsets, &split->offsets_cap, (int64_t)split->num_ids);
  }
}

/* Reads every file of --files (fortunes separated by "%" lines); every tenth
   fortune goes to the held-out split. */
static void load_fortunes(const struct settings* s, accel_sequences** train, accel_sequences** eval) {
  struct split parts[2] = {{0}, {0}};
  char names[1024], path[2048];
  long fortune = 0;
  snprintf(names, sizeof names, "%s", s->files);
  for (char* name = strtok(names, ","); name != NULL; name = strtok(NULL, ",")) {
    accel_sequences* file = NULL;
    int64_t count = 0;
    snprintf(path, sizeof path, "%s/%s", s->data_dir, name);
    FILE* probe = fopen(path, "rb");
    if (probe == NULL) { /* a user's first run often lacks the data: say where it comes from */
      fprintf(stderr,
              "%s is not there: install the fortunes with `sudo apt install fortunes` (Debian, Ubuntu) "
              "or pass --data DIR and --files NAMES\n",
              path);
      exit(1);
    }
    fclose(probe);
    TRY(accel_sequences_from_text(path, ACCEL_TEXT_SEPARATOR, "%", 0, 0, &file));
    TRY(accel_sequences_count(file, &count));
    for (int64_t i = 0; i < count; ++i, ++fortune) {
      accel_tensor* ids = NULL;
      int64_t length = 0;
      TRY(accel_sequences_get(file, i, &ids, NULL));
      TRY(accel_tensor_numel(ids, &length));
      int64_t* values = malloc((size_t)(length > 0 ? length : 1) * sizeof(int64_t));
      TRY(accel_tensor_copy_to(ids, values, (size_t)length * sizeof(int64_t)));
      add_fortune(&parts[fortune % 10 == 9], values, length);
      free(values);
      accel_tensor_free(ids);
    }
    accel_sequences_free(file);
  }
  accel_sequences** out[2] = {train, eval};
  for (int p = 0; p < 2; ++p) {
    if (parts[p].num_offsets < 2) {
      fprintf(stderr, "too few fortunes in %s for a held-out split: add files with --files\n", s->files);
      exit(1);
    }
    TRY(accel_sequences_from_arrays(parts[p].ids, parts[p].num_ids, parts[p].offsets, parts[p].num_offsets, NULL, 0,
                                    kVocab, out[p]));
    free(parts[p].ids);
    free(parts[p].offsets);
  }
}

/* A loader over padded batches: input_ids, attention_mask and the causal LM
   labels (input_ids with the padding set to -100). */
static accel_dataloader* make_loader(const accel_sequences* sequences, int shuffle, unsigned long long seed) {
  accel_padding_options padding;
  accel_dataloader_options opts;
  accel_dataset* dataset = NULL;
  accel_dataloader* loader = NULL;
  accel_padding_options_init(&padding);
  TRY(accel_dataset_from_sequences(sequences, &padding, &dataset));
  accel_dataloader_options_init(&opts);
  opts.batch_size = kBatch;
  opts.shuffle = shuffle;
  opts.seed = seed;
  TRY(accel_dataloader_create(dataset, &opts, &loader));
  accel_dataset_free(dataset); /* the loader keeps it alive */
  return loader;
}

/* The next batch as a map of its named fields, or NULL at the end of the epoch. */
static accel_tensor_map* next_batch(accel_dataloader* loader) {
  accel_tensor* fields[3];
  const char* names[3];
  int count = 0, named = 0;
  accel_tensor_map* batch = NULL;
  TRY(accel_dataloader_next_fields(loader, fields, 3, &count));
  if (count == 0) return NULL;
  TRY(accel_dataloader_field_names(loader, names, 3, &named));
  TRY(accel_tensor_map_create(&batch));
  for (int f = 0; f < count; ++f) {
    TRY(accel_tensor_map_set(batch, names[f], fields[f]));
    accel_tensor_free(fields[f]);
  }
  return batch;
}

/* A float32 copy of a map's tensor (the caller frees it); dims gets its shape. */
static float* floats_of(const accel_tensor_map* map, const char* name, int64_t* dims, size_t ndim) {
  accel_tensor* tensor = NULL;
  int64_t numel = 0;
  TRY(accel_tensor_map_get(map, name, &tensor));
  TRY(accel_tensor_shape(tensor, dims, ndim));
  TRY(accel_tensor_numel(tensor, &numel));
  float* values = malloc((size_t)numel * sizeof(float));
  TRY(accel_tensor_copy_to(tensor, values, (size_t)numel * sizeof(float)));
  accel_tensor_free(tensor);
  return values;
}

/* Per sequence of the batch: its summed next-token loss and its number of
   predicted tokens, as float64 [B, 2]. Position t predicts label t + 1, as the
   model's CausalLMLoss does; labels -100 (padding) count for nothing. */
static accel_tensor* per_sequence_losses(const accel_tensor_map* batch, const accel_tensor_map* outputs) {
  int64_t dims[3], label_dims[2];
  float* logits = floats_of(outputs, "logits", dims, 3);
  accel_tensor* labels_tensor = NULL;
  accel_tensor* result = NULL;
  TRY(accel_tensor_map_get(batch, "labels", &labels_tensor));
  TRY(accel_tensor_shape(labels_tensor, label_dims, 2));
  int64_t* labels = malloc((size_t)(label_dims[0] * label_dims[1]) * sizeof(int64_t));
  TRY(accel_tensor_copy_to(labels_tensor, labels, (size_t)(label_dims[0] * label_dims[1]) * sizeof(int64_t)));
  const int64_t batch_size = dims[0], length = dims[1], vocab = dims[2];
  double* sums = calloc((size_t)batch_size * 2, sizeof(double));
  for (int64_t b = 0; b < batch_size; ++b) {
    for (int64_t t = 0; t + 1 < length; ++t) {
      const int64_t label = labels[b * length + t + 1];
      if (label == -100) continue;
      const float* row = logits + (b * length + t) * vocab;
      double max = row[0], total = 0;
      for (int64_t v = 1; v < vocab; ++v) max = row[v] > max ? row[v] : max;
      for (int64_t v = 0; v < vocab; ++v) total += exp(row[v] - max);
      sums[2 * b] += max + log(total) - row[label];
      sums[2 * b + 1] += 1;
    }
  }
  int64_t shape[2] = {batch_size, 2};
  TRY(accel_tensor_from_buffer(sums, (size_t)batch_size * 2 * sizeof(double), ACCEL_FLOAT64, shape, 2, &result));
  free(sums);
  free(labels);
  free(logits);
  accel_tensor_free(labels_tensor);
  return result;
}

/* Held-out perplexity over every process: per-sequence sums are gathered
   without the last round's repeated sequences, so each counts once. */
static double perplexity(accel_accelerator* acc, accel_model* model, accel_dataloader* loader) {
  double loss_sum = 0, tokens = 0;
  accel_tensor_map* batch;
  TRY(accel_model_train(model, 0));
  while ((batch = next_batch(loader)) != NULL) {
    accel_tensor_map* outputs = NULL;
    accel_tensor *local = NULL, *all = NULL;
    int64_t rows = 0;
    TRY(accel_model_forward_named(model, batch, &outputs));
    local = per_sequence_losses(batch, outputs);
    TRY(accel_accelerator_gather_for_metrics(acc, local, &all));
    TRY(accel_tensor_numel(all, &rows));
    double* values = malloc((size_t)rows * sizeof(double));
    TRY(accel_tensor_copy_to(all, values, (size_t)rows * sizeof(double)));
    for (int64_t i = 0; i < rows; i += 2) {
      loss_sum += values[i];
      tokens += values[i + 1];
    }
    free(values);
    accel_tensor_free(all);
    accel_tensor_free(local);
    accel_tensor_map_free(outputs);
    accel_tensor_map_free(batch);
  }
  TRY(accel_model_train(model, 1));
  return exp(loss_sum / tokens);
}

/* Greedy decoding: run the model on the growing sequence (no labels, so no
   loss) and append the argmax of the last position's logits. */
static void sample(accel_accelerator* acc, accel_model* model, const char* prompt, int new_bytes) {
  int64_t ids[kMaxLength];
  int64_t length = (int64_t)strlen(prompt);
  char line[4 * kMaxLength + 32];
  size_t used;
  for (int64_t i = 0; i < length; ++i) ids[i] = (unsigned char)prompt[i];
  TRY(accel_model_train(model, 0));
  for (int n = 0; n < new_bytes && length < kMaxLength; ++n) {
    accel_tensor_map *inputs = NULL, *outputs = NULL;
    accel_tensor *input_ids = NULL, *logits = NULL, *next = NULL;
    int64_t shape[2] = {1, length}, best[kMaxLength];
    TRY(accel_tensor_from_buffer(ids, (size_t)length * sizeof(int64_t), ACCEL_INT64, shape, 2, &input_ids));
    TRY(accel_tensor_map_create(&inputs));
    TRY(accel_tensor_map_set(inputs, "input_ids", input_ids));
    TRY(accel_model_forward_named(model, inputs, &outputs));
    TRY(accel_tensor_map_get(outputs, "logits", &logits));
    TRY(accel_tensor_argmax(logits, -1, &next)); /* [1, length] */
    TRY(accel_tensor_copy_to(next, best, (size_t)length * sizeof(int64_t)));
    const int64_t next_id = best[length - 1];
    ids[length++] = next_id;
    accel_tensor_free(next);
    accel_tensor_free(logits);
    accel_tensor_free(input_ids);
    accel_tensor_map_free(outputs);
    accel_tensor_map_free(inputs);
  }
  TRY(accel_model_train(model, 1));
  /* Bytes to printable text: newlines and other control bytes escaped. */
  used = (size_t)snprintf(line, sizeof line, "sample: \"");
  for (int64_t i = 0; i < length; ++i) {
    const int c = (int)ids[i];
    if (c == '\n')
      used += (size_t)snprintf(line + used, sizeof line - used, "\\n");
    else if (c == '"' || c == '\\')
      used += (size_t)snprintf(line + used, sizeof line - used, "\\%c", c);
    else if (c >= 32 && c < 127)
      line[used++] = (char)c;
    else
      used += (size_t)snprintf(line + used, sizeof line - used, "\\x%02x", c);
  }
  snprintf(line + used, sizeof line - used, "\"");
  TRY(accel_accelerator_print(acc, line));
}

/* The sum of every parameter of the whole model, a replica checksum.
   get_state_dict gathers what the ranks hold (the slices of a model split
   by tensor parallelism, the shards of FULL_SHARD): every process calls it. */
static double checksum(accel_accelerator* acc, const accel_model* model) {
  size_t count = 0;
  double total = 0;
  TRY(accel_accelerator_get_state_dict(acc, model, NULL, NULL, 0, &count));
  const char** names = malloc(count * sizeof(const char*));
  accel_tensor** tensors = malloc(count * sizeof(accel_tensor*));
  TRY(accel_accelerator_get_state_dict(acc, model, names, tensors, count, &count));
  for (size_t i = 0; i < count; ++i) {
    accel_tensor* sum = NULL;
    double value = 0;
    TRY(accel_tensor_sum(tensors[i], &sum));
    TRY(accel_tensor_item(sum, &value));
    total += value;
    accel_tensor_free(sum);
    accel_tensor_free(tensors[i]);
  }
  free(tensors);
  free(names);
  return total;
}

/* Whether the lm head still is the token embedding after training: the logits
   must equal ln_f's output times wte.weight transposed. A head that had been
   copied out of wte would have trained apart from it. Returns the largest
   difference. */
static double head_tie_error(accel_model* model) {
  accel_tensor_map *inputs = NULL, *outputs = NULL, *params = NULL;
  accel_tensor *input_ids = NULL, *wte_tensor = NULL;
  int64_t ids[16], shape[2] = {1, 16}, logit_dims[3], hidden_dims[3];
  float wte[kVocab * kWidth];
  double worst = 0;
  for (int i = 0; i < 16; ++i) ids[i] = "Tied heads stay!"[i];
  TRY(accel_tensor_from_buffer(ids, sizeof ids, ACCEL_INT64, shape, 2, &input_ids));
  TRY(accel_tensor_map_create(&inputs));
  TRY(accel_tensor_map_set(inputs, "input_ids", input_ids));
  TRY(accel_model_train(model, 0));
  TRY(accel_model_forward_named(model, inputs, &outputs));
  TRY(accel_model_train(model, 1));
  TRY(accel_model_named_parameters(model, &params));
  TRY(accel_tensor_map_get(params, "wte.weight", &wte_tensor));
  TRY(accel_tensor_copy_to(wte_tensor, wte, sizeof wte));
  float* logits = floats_of(outputs, "logits", logit_dims, 3);
  float* hidden = floats_of(outputs, "ln_f", hidden_dims, 3);
  for (int64_t t = 0; t < 16; ++t) {
    for (int64_t v = 0; v < kVocab; ++v) {
      double dot = 0;
      for (int64_t k = 0; k < kWidth; ++k) dot += (double)hidden[t * kWidth + k] * wte[v * kWidth + k];
      double diff = fabs(dot - logits[t * kVocab + v]);
      worst = diff > worst ? diff : worst;
    }
  }
  free(hidden);
  free(logits);
  accel_tensor_free(wte_tensor);
  accel_tensor_free(input_ids);
  accel_tensor_map_free(params);
  accel_tensor_map_free(outputs);
  accel_tensor_map_free(inputs);
  return worst;
}

int main(int argc, char** argv) {
  struct settings s = parse_args(argc, argv);
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_optimizer* optimizer = NULL;
  accel_scheduler* scheduler = NULL;
  accel_optimizer_options adamw;
  accel_scheduler_options warmup;
  accel_sequences *train_set = NULL, *eval_set = NULL;
  accel_dataloader *train_loader, *eval_loader;
  int64_t batches_per_epoch = 0;
  int rank = 0, world = 1;
  char line[256];

  TRY(accel_accelerator_create(NULL, &acc));
  TRY(accel_accelerator_process_index(acc, &rank));
  TRY(accel_accelerator_num_processes(acc, &world));
  TRY(accel_accelerator_set_seed(acc, s.seed));

  load_fortunes(&s, &train_set, &eval_set);
  train_loader = make_loader(train_set, 1, s.seed);
  eval_loader = make_loader(eval_set, 0, s.seed);

  TRY(accel_model_from_json(kModelSpec, &model));
  accel_optimizer_options_init(&adamw, ACCEL_OPTIM_ADAMW);
  /* Higher than GPT-2's usual 6e-4: the tied head starts from nn.Embedding's
     N(0, 1) rows (GPT-2 draws N(0, 0.02)), so the first logits are large and
     a small rate spends most of a short run shrinking them. */
  adamw.lr = 1e-2;
  TRY(accel_optimizer_create(model, &adamw, &optimizer));
  /* Counted in batches of the unprepared loader: a prepared scheduler steps
     once per process for every optimizer step, as in Accelerate. */
  TRY(accel_dataloader_num_batches(train_loader, &batches_per_epoch));
  if (s.max_steps > 0 && s.max_steps * world < batches_per_epoch) batches_per_epoch = s.max_steps * world;
  accel_scheduler_options_init(&warmup, ACCEL_SCHED_LINEAR_WARMUP);
  warmup.num_training_steps = batches_per_epoch * s.epochs;
  warmup.num_warmup_steps = warmup.num_training_steps / 10;
  TRY(accel_scheduler_create(optimizer, &warmup, &scheduler));

  TRY(accel_accelerator_prepare_model(acc, model));
  TRY(accel_accelerator_prepare_optimizer(acc, optimizer));
  TRY(accel_accelerator_prepare_scheduler(acc, scheduler));
  TRY(accel_accelerator_prepare_dataloader(acc, train_loader));
  TRY(accel_accelerator_prepare_dataloader(acc, eval_loader));

  const double initial = perplexity(acc, model, eval_loader);
  snprintf(line, sizeof line, "initial perplexity %.3f", initial);
  TRY(accel_accelerator_print(acc, line));
  double last = initial;
  long global_step = 0;
  for (int epoch = 1; epoch <= s.epochs; ++epoch) {
    double loss_sum = 0;
    long steps = 0;
    accel_tensor_map* batch;
    while ((batch = next_batch(train_loader)) != NULL) {
      if (s.max_steps > 0 && steps >= s.max_steps) { /* drain the epoch without training */
        accel_tensor_map_free(batch);
        continue;
      }
      accel_tensor_map* outputs = NULL;
      accel_tensor* loss = NULL;
      double value = 0;
      TRY(accel_model_forward_named(model, batch, &outputs));
      TRY(accel_tensor_map_get(outputs, "loss", &loss));
      TRY(accel_accelerator_backward(acc, loss));
      TRY(accel_optimizer_step(optimizer));
      TRY(accel_scheduler_step(scheduler));
      TRY(accel_optimizer_zero_grad(optimizer));
      TRY(accel_tensor_item(loss, &value));
      loss_sum += value;
      ++steps;
      if (++global_step % 10 == 0) {
        snprintf(line, sizeof line, "step %ld: loss %.4f", global_step, value);
        TRY(accel_accelerator_print(acc, line));
      }
      accel_tensor_free(loss);
      accel_tensor_map_free(outputs);
      accel_tensor_map_free(batch);
    }
    last = perplexity(acc, model, eval_loader);
    /* The mean of the processes' mean training losses. */
    double mean_loss = steps > 0 ? loss_sum / (double)steps : 0.0;
    accel_tensor *local = NULL, *mean = NULL;
    int64_t one = 1;
    TRY(accel_tensor_from_buffer(&mean_loss, sizeof mean_loss, ACCEL_FLOAT64, &one, 1, &local));
    TRY(accel_accelerator_reduce(acc, local, ACCEL_REDUCE_MEAN, &mean));
    TRY(accel_tensor_item(mean, &mean_loss));
    snprintf(line, sizeof line, "epoch %d: loss %.4f, perplexity %.3f", epoch, mean_loss, last);
    TRY(accel_accelerator_print(acc, line));
    accel_tensor_free(mean);
    accel_tensor_free(local);
  }
  sample(acc, model, "The ", 60);

  /* Replicas must agree: every process's checksum, gathered. */
  double mine = checksum(acc, model);
  double* all = malloc(sizeof(double) * (size_t)world);
  const double tie_error = head_tie_error(model);
  int64_t one = 1;
  accel_tensor *local = NULL, *gathered = NULL;
  TRY(accel_tensor_from_buffer(&mine, sizeof mine, ACCEL_FLOAT64, &one, 1, &local));
  TRY(accel_accelerator_gather(acc, local, &gathered));
  TRY(accel_tensor_copy_to(gathered, all, sizeof(double) * (size_t)world));
  int replicas_agree = 1;
  for (int r = 1; r < world; ++r) replicas_agree &= all[r] == all[0];
  free(all);
  printf("rank %d: parameter checksum %.9g, tied head error %.2g\n", rank, mine, tie_error);
  fflush(stdout);
  const char* problem = NULL;
  if (!(last < initial) || !isfinite(last))
    problem = "the perplexity did not fall";
  else if (!replicas_agree)
    problem = "the replicas' parameters differ";
  else if (!(tie_error < 1e-3))
    problem = "the lm head is no longer wte";
  const int failed = s.check && problem != NULL;
  if (failed) fprintf(stderr, "rank %d: %s\n", rank, problem);

  accel_tensor_free(gathered);
  accel_tensor_free(local);
  accel_dataloader_free(eval_loader);
  accel_dataloader_free(train_loader);
  accel_sequences_free(eval_set);
  accel_sequences_free(train_set);
  accel_scheduler_free(scheduler);
  accel_optimizer_free(optimizer);
  accel_model_free(model);
  accel_accelerator_free(acc);
  return failed;
}
