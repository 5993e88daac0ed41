/*
 * libaccel C ABI: models (TorchScript files, JSON specs, C++ modules), losses,
 * optimizers and learning-rate schedulers (included by accel/accel.h, whose
 * conventions hold here too). Preparing them for training is in accel.h.
 */
#ifndef ACCEL_ACCEL_MODEL_H
#define ACCEL_ACCEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "accel/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Models and losses                                                          */
/* ------------------------------------------------------------------------- */

/* Loads a TorchScript module saved by PyTorch (torch.jit.save); its parameters
   are trainable. transformers' elementwise tanh-GELU (GPT-2's gelu_new) is
   rewritten into one aten::gelu(approximate="tanh") kernel, the same formula
   (docs/transformers.md; ACCEL_TORCHSCRIPT_REWRITES=0 keeps the graph as
   saved). Errors: IO (missing or unreadable file, named). New handle. */
ACCEL_API accel_status accel_model_from_torchscript(const char* path, accel_model** out);
/* Builds a model from a JSON spec (docs/models.md has the full guide). Two forms:

   A chain: an array of layers (or {"layers": [...]}) such as
   [{"type": "Conv2d", "in_channels": 1, "out_channels": 32, "kernel_size": 3},
   {"type": "ReLU"}, ...], run one after the other as torch.nn.Sequential, with
   parameters named as PyTorch's ("0.weight").

   A graph: {"inputs": [...], "nodes": [...], "outputs": [...]}.
   - "inputs": names, or {"name": "labels", "optional": true}. Optional inputs
     may be left out of a named forward; what depends on them is then left out
     too (no "loss" without "labels"), except masks, which then mask nothing.
   - "nodes": layer objects with a "name" (a submodule name: parameters are
     "wte.weight", "h.0.self_attn.in_proj_weight") and an "input": a name (a
     graph input or another node), or a list whose first entry is transformed
     and the rest are side inputs (masks, an encoder's memory). Without
     "input" a node reads the node above it (the first, the first input).
     Nodes run in dependency order; registration follows the spec's order.
   - "outputs": node names; each output tensor carries its node's name.
   Graph-only types: "Sequential" and "Residual" ({"layers": [...]}, each
   layer optionally with a "name", else "0", "1", ...; a Residual adds its
   input to its chain's output; side inputs reach the layers that take them),
   "Add" (sums 2+ inputs), "Concat" (torch.cat, "dim" default 0) and
   "CausalLMLoss" (input [logits, labels]: transformers' GPT-2 loss, logits
   [N, L, V] at t predict labels at t+1, cross entropy with "ignore_index"
   -100 and "label_smoothing" 0, the mean over labels that are not ignored).
   A Linear's "weight" may name an earlier node's parameter ("wte.weight"):
   the weight is tied and listed once, under that name, as PyTorch's
   named_parameters() does.
   A graph with one required input also runs through accel_model_forward,
   returning its first output; otherwise use the named forward.
   Both object forms take an optional top-level "init": {"std": 0.02, "seed": 0}
   (the defaults): Linear, Embedding, PositionalEmbedding and MultiheadAttention
   weights ~ N(0, std) from a generator seeded with "seed", their biases 0 and
   an Embedding's padding_idx row 0, as transformers initialises GPT-2; other
   layers keep PyTorch's initialisation.

   Layer types (both forms), with PyTorch's keyword names and defaults: Linear,
   Conv1d, Conv2d, MaxPool2d, AvgPool2d, AdaptiveMaxPool2d, AdaptiveAvgPool2d,
   Dropout, Dropout2d, Flatten, ReLU, LeakyReLU, GELU, Tanh, Sigmoid,
   BatchNorm1d, BatchNorm2d, LayerNorm, Embedding, LogSoftmax and Softmax (both
   need "dim", as PyTorch recommends), LSTM and GRU (they return the output
   sequence), MultiheadAttention (self-attention; returns the attention output),
   TransformerEncoderLayer and TransformerDecoderLayer (PyTorch 1.13's
   arguments) and PositionalEmbedding ("num_positions", "embedding_dim",
   "batch_first": adds weight[:L] to its input). The attention layers take
   "causal": true (a token sees no later token) and, as a side input, a
   Hugging Face attention_mask [N, S] (1 attend, 0 padding).
   Errors: INVALID_ARGUMENT naming the layer index (chain) or node, its type and
   the argument or value: unknown types, arguments, node or input names, a
   cycle (listed), an output naming no node, a tie to a missing parameter or
   one of another shape; for text that is not JSON (with line and column) or
   that nests arrays and objects more than 256 levels deep (like every JSON
   libaccel reads). Forward errors name the node: a sequence longer than
   num_positions (length and maximum), ids that are not integers or lie outside
   an Embedding, a mask or labels of the wrong shape. Not collective. New handle. */
ACCEL_API accel_status accel_model_from_json(const char* spec, accel_model** out);
ACCEL_API void accel_model_free(accel_model* model);

/* Runs the model on input. A prepared model takes input on its device (batches
   from a prepared dataloader already are). New handle in *out. */
ACCEL_API accel_status accel_model_forward(accel_model* model, const accel_tensor* input, accel_tensor** out);
/* training != 0: training mode (dropout on, batch-norm statistics updated); 0: eval mode. */
ACCEL_API accel_status accel_model_train(accel_model* model, int training);
/* Number of scalar parameters (trainable_only != 0: only those requiring grad);
   a tensor shared by two modules (tied weights) counts once. */
ACCEL_API accel_status accel_model_num_parameters(const accel_model* model, int trainable_only, int64_t* out);

/* Tensors by name, in insertion order: a named forward's inputs and outputs
   (input_ids, attention_mask, labels -> loss, logits) and a model's named
   parameters. The map holds references, not copies: a tensor read from it
   shares storage with the tensor that was set (for named_parameters, writing
   through a handle changes the model). One thread at a time per map. */

/* An empty map. New handle in *out, freed with accel_tensor_map_free. */
ACCEL_API accel_status accel_tensor_map_create(accel_tensor_map** out);
ACCEL_API void accel_tensor_map_free(accel_tensor_map* map);
/* Sets name (UTF-8, copied) to tensor: appended when new, replaced in place
   otherwise. Borrows tensor (the map keeps its own reference; the handle may be
   freed at once). Errors: INVALID_ARGUMENT (NULL or empty name, bad handle). */
ACCEL_API accel_status accel_tensor_map_set(accel_tensor_map* map, const char* name, const accel_tensor* tensor);
ACCEL_API accel_status accel_tensor_map_count(const accel_tensor_map* map, size_t* out);
/* The index-th name. The string is owned by the map and stays valid until the
   map is freed. Errors: INVALID_ARGUMENT when index >= count (both named). */
ACCEL_API accel_status accel_tensor_map_name_at(const accel_tensor_map* map, size_t index, const char** out);
/* The tensor under name, as a new handle the caller frees with
   accel_tensor_free. Errors: INVALID_ARGUMENT naming the name and the names held. */
ACCEL_API accel_status accel_tensor_map_get(const accel_tensor_map* map, const char* name, accel_tensor** out);
/* accel_accelerator_send_to_device for every tensor of map (borrowed): a new
   map in *out (accel_tensor_map_free) with the same names in the same order,
   each tensor on the accelerator's device. Not collective. */
ACCEL_API accel_status accel_accelerator_send_map_to_device(const accel_accelerator* acc, const accel_tensor_map* map,
                                                            accel_tensor_map** out);

/* accel_model_from_torchscript, naming the outputs of a forward that returns a
   plain tuple (or one tensor) for accel_model_forward_named: count names
   (UTF-8, copied). Errors: as accel_model_from_torchscript; INVALID_ARGUMENT
   for a NULL names array with count > 0, a NULL, empty or repeated name. */
ACCEL_API accel_status accel_model_from_torchscript_outputs(const char* path, const char* const* output_names,
                                                            size_t count, accel_model** out);
/* Runs the model on named inputs and returns its named outputs in a new map
   (*out, freed with accel_tensor_map_free). Not collective; a training
   forward of a prepared model arms gradient sync as accel_model_forward does.
   A TorchScript model binds each input to the forward argument of that name;
   arguments with defaults may be omitted. Its outputs are named by the dict's
   keys (trace with strict=False), the NamedTuple's fields, the names given to
   accel_model_from_torchscript_outputs for a plain tuple (else "0", "1", ...),
   or "output" for one tensor; None outputs are left out. A JSON model takes
   one input of any name and returns "output".
   Errors: INVALID_ARGUMENT naming a missing, unknown, repeated or undefined
   input or one of the wrong type or device, with the forward's argument names
   and the given ones; or naming the inputs' shapes and dtypes when the model
   fails on them (float ids, a sequence longer than the model's maximum). */
ACCEL_API accel_status accel_model_forward_named(accel_model* model, const accel_tensor_map* inputs,
                                                 accel_tensor_map** out);
/* The model's parameters by PyTorch name, each tensor once: a tensor shared by
   two modules (tied weights such as GPT-2's lm_head.weight and
   transformer.wte.weight) appears under its first name only. The tensors are
   the parameters themselves (see accel_tensor_map). New map in *out. */
ACCEL_API accel_status accel_model_named_parameters(const accel_model* model, accel_tensor_map** out);
/* The model's buffers (BatchNorm statistics, attention masks) the same way. */
ACCEL_API accel_status accel_model_named_buffers(const accel_model* model, accel_tensor_map** out);
/* PyTorch's model.load_state_dict: copies each tensor of the map (borrowed)
   into the model's parameter or buffer of that name (the names of
   accel_accelerator_get_state_dict; a tied copy writes the shared tensor).
   Floating dtypes convert; shapes must match. strict != 0: a name the model
   lacks or a model name the map lacks is an error; strict = 0 skips both.
   All or nothing: everything is checked before anything is copied.
   Collective under FULL_SHARD (the shards are gathered first, so every
   process calls it); otherwise not, but every process of a prepared model
   should load the same tensors, or the replicas diverge. Errors:
   INVALID_ARGUMENT listing the missing and unexpected names, or naming a
   tensor with its shape or dtype and the model's. */
ACCEL_API accel_status accel_model_load_state_dict(accel_model* model, const accel_tensor_map* tensors, int strict);
/* accel_model_load_state_dict that also says what strict = 0 skipped, as
   PyTorch's load_state_dict returns it: *report_json is a new JSON object
   {"missing_keys": [...], "unexpected_keys": [...]}: the model's names the map
   lacks (in the model's order) and the map's names the model lacks (sorted);
   both empty after a strict load, where any mismatch is the error. Free it with
   accel_string_free; untouched on failure, when nothing was loaded. Errors: as
   accel_model_load_state_dict, and INVALID_ARGUMENT for a NULL report_json. */
ACCEL_API accel_status accel_model_load_state_dict_report(accel_model* model, const accel_tensor_map* tensors,
                                                          int strict, char** report_json);

typedef enum accel_loss_kind {
  ACCEL_LOSS_CROSS_ENTROPY = 1,   /* logits [N,C], int64 class targets [N] */
  ACCEL_LOSS_MSE = 2,             /* same shapes */
  ACCEL_LOSS_NLL = 3,             /* log-probabilities [N,C], int64 targets [N] */
  ACCEL_LOSS_BCE_WITH_LOGITS = 4, /* logits and float targets of the same shape */
  /* Hugging Face's shifted causal LM loss: logits [N, L, V], integer labels
     [N, L]; position t predicts label t + 1, labels of -100 (ignore_index)
     count for nothing. Equals the JSON graph's CausalLMLoss node. */
  ACCEL_LOSS_CAUSAL_LM = 5
} accel_loss_kind;

/* The mean loss of input against target as a 0-dimensional tensor that can be
   passed to accel_accelerator_backward. Errors: INVALID_ARGUMENT for a wrong
   dtype or shape (named). New handle in *out. */
ACCEL_API accel_status accel_loss(accel_loss_kind kind, const accel_tensor* input, const accel_tensor* target,
                                  accel_tensor** out);

/* PyTorch's CrossEntropyLoss options for accel_loss_ext. */
typedef struct accel_loss_options {
  uint32_t struct_size; /* set by ACCEL_LOSS_OPTIONS_INIT / accel_loss_options_init */
  /* Targets equal to it count for nothing; the mean runs over the others.
     Cross-entropy, NLL and causal LM only. Default -100 (PyTorch's). */
  int64_t ignore_index;
  /* In [0, 1]: the target mixes the one-hot class with the uniform
     distribution. Cross-entropy and causal LM only. Default 0. */
  double label_smoothing;
} accel_loss_options;

#define ACCEL_LOSS_OPTIONS_INIT \
  { (uint32_t)sizeof(accel_loss_options), -100, 0.0 }
ACCEL_API void accel_loss_options_init(accel_loss_options* opts);

/* accel_loss with options (NULL: the defaults, i.e. accel_loss). New handle in
   *out (accel_tensor_free); not collective. Errors: INVALID_ARGUMENT as
   accel_loss, for a class target outside [0, C) that is not ignore_index (the
   class named), for label_smoothing outside [0, 1] or an option the kind does
   not take (named), or for a bad struct_size. */
ACCEL_API accel_status accel_loss_ext(accel_loss_kind kind, const accel_tensor* input, const accel_tensor* target,
                                      const accel_loss_options* opts, accel_tensor** out);

/* ------------------------------------------------------------------------- */
/* Optimizers                                                                 */
/* ------------------------------------------------------------------------- */

typedef enum accel_optimizer_kind {
  ACCEL_OPTIM_SGD = 1,
  ACCEL_OPTIM_ADAM = 2,
  ACCEL_OPTIM_ADAMW = 3,
  ACCEL_OPTIM_RMSPROP = 4,
  ACCEL_OPTIM_ADAGRAD = 5
} accel_optimizer_kind;

/* One struct for every kind; each kind reads the fields PyTorch's optimizer of
   that name has and ignores the others. */
typedef struct accel_optimizer_options {
  uint32_t struct_size;
  accel_optimizer_kind kind;
  double lr;
  double weight_decay;
  double momentum;                  /* SGD, RMSprop */
  double dampening;                 /* SGD */
  int nesterov;                     /* SGD */
  double beta1, beta2;              /* Adam, AdamW */
  double eps;                       /* Adam, AdamW, RMSprop, Adagrad */
  int amsgrad;                      /* Adam, AdamW */
  double alpha;                     /* RMSprop */
  int centered;                     /* RMSprop */
  double lr_decay;                  /* Adagrad */
  double initial_accumulator_value; /* Adagrad */
} accel_optimizer_options;

/* Fills opts with PyTorch's defaults for kind (e.g. AdamW: lr 1e-3, betas
   0.9/0.999, eps 1e-8, weight_decay 1e-2; SGD: lr 1e-3 as PyTorch has no default). */
ACCEL_API void accel_optimizer_options_init(accel_optimizer_options* opts, accel_optimizer_kind kind);

/* Creates an optimizer over the model's trainable parameters. Errors:
   INVALID_ARGUMENT naming a bad hyperparameter or kind. The optimizer keeps
   the model alive. New handle in *out. */
ACCEL_API accel_status accel_optimizer_create(accel_model* model, const accel_optimizer_options* opts,
                                              accel_optimizer** out);
ACCEL_API void accel_optimizer_free(accel_optimizer* optimizer);
/* Steps the optimizer (nothing on accumulation micro-steps). Under
   SHARD_OPTIMIZER / SHARD_GRAD_OP it updates this process's chunk and then
   all-gathers the parameters: collective then. */
ACCEL_API accel_status accel_optimizer_step(accel_optimizer* optimizer);
/* Zeroes the gradients in place (they keep their storage). */
ACCEL_API accel_status accel_optimizer_zero_grad(accel_optimizer* optimizer);
/* The learning rate of the first parameter group. */
ACCEL_API accel_status accel_optimizer_get_lr(const accel_optimizer* optimizer, double* out);
/* Sets the learning rate of every parameter group. */
ACCEL_API accel_status accel_optimizer_set_lr(accel_optimizer* optimizer, double lr);

/* 1 when the last accel_optimizer_step was skipped because the fp16 loss
   scaler found inf or NaN gradients, else 0. */
ACCEL_API accel_status accel_optimizer_step_was_skipped(const accel_optimizer* optimizer, int* out);

/* ------------------------------------------------------------------------- */
/* Learning-rate schedulers                                                   */
/* ------------------------------------------------------------------------- */

typedef enum accel_scheduler_kind {
  ACCEL_SCHED_STEP = 1,             /* step_size, gamma */
  ACCEL_SCHED_MULTI_STEP = 2,       /* milestones, num_milestones, gamma */
  ACCEL_SCHED_EXPONENTIAL = 3,      /* gamma */
  ACCEL_SCHED_COSINE_ANNEALING = 4, /* t_max, eta_min */
  ACCEL_SCHED_LINEAR = 5,           /* start_factor, end_factor, total_iters */
  ACCEL_SCHED_CONSTANT = 6,         /* factor, total_iters */
  ACCEL_SCHED_POLYNOMIAL = 7,       /* total_iters, power */
  ACCEL_SCHED_ONE_CYCLE =
      8, /* max_lr, total_steps, pct_start, anneal_linear, div_factor, final_div_factor, three_phase */
  ACCEL_SCHED_LINEAR_WARMUP = 9,     /* num_warmup_steps, num_training_steps */
  ACCEL_SCHED_COSINE_WARMUP = 10,    /* num_warmup_steps, num_training_steps, num_cycles */
  ACCEL_SCHED_REDUCE_ON_PLATEAU = 11 /* mode_max, factor, patience, threshold, threshold_abs, cooldown, min_lr, eps */
} accel_scheduler_kind;

/* One struct for every kind, each reading the fields PyTorch's scheduler of
   that name has (listed above); accel_scheduler_options_init sets PyTorch's
   defaults. */
typedef struct accel_scheduler_options {
  uint32_t struct_size;
  accel_scheduler_kind kind;
  int64_t step_size;
  double gamma;
  const int64_t* milestones; /* borrowed: copied by accel_scheduler_create */
  size_t num_milestones;
  int64_t t_max;
  double eta_min;
  double start_factor, end_factor;
  int64_t total_iters;
  double factor;
  double power;
  double max_lr;
  int64_t total_steps;
  double pct_start;
  int anneal_linear; /* 0: "cos", 1: "linear" */
  double div_factor, final_div_factor;
  int three_phase;
  int64_t num_warmup_steps, num_training_steps;
  double num_cycles;
  int mode_max; /* ReduceOnPlateau: 0 "min", 1 "max" */
  int64_t patience;
  double threshold;
  int threshold_abs; /* 0 "rel", 1 "abs" */
  int64_t cooldown;
  double min_lr;
  double eps;
  int step_with_optimizer; /* default 1: see accel_accelerator_prepare_scheduler */
} accel_scheduler_options;

ACCEL_API void accel_scheduler_options_init(accel_scheduler_options* opts, accel_scheduler_kind kind);
/* A scheduler setting optimizer's learning rate (it keeps the optimizer alive).
   Errors: INVALID_ARGUMENT naming a bad option. New handle in *out. */
ACCEL_API accel_status accel_scheduler_create(accel_optimizer* optimizer, const accel_scheduler_options* opts,
                                              accel_scheduler** out);
ACCEL_API void accel_scheduler_free(accel_scheduler* scheduler);
/* One step (once prepared: only after a real optimizer step, num_processes at
   a time). ReduceOnPlateau needs accel_scheduler_step_metric instead. */
ACCEL_API accel_status accel_scheduler_step(accel_scheduler* scheduler);
ACCEL_API accel_status accel_scheduler_step_metric(accel_scheduler* scheduler, double metric);
/* The learning rate of the optimizer's first parameter group. */
ACCEL_API accel_status accel_scheduler_get_last_lr(const accel_scheduler* scheduler, double* out);
/* Steps taken so far (PyTorch's last_epoch). */
ACCEL_API accel_status accel_scheduler_last_epoch(const accel_scheduler* scheduler, int64_t* out);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_MODEL_H */
