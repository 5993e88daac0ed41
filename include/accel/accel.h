/*
 * libaccel C ABI: Hugging Face Accelerate's training model over LibTorch, from C.
 *
 * Conventions (every function below follows them):
 * - Fallible functions return accel_status. ACCEL_OK (0) is success; on failure
 *   accel_last_error() holds a message naming the bad value, and out-parameters
 *   are left untouched.
 * - Handles are opaque. Every constructor has exactly one destructor,
 *   accel_<object>_free, and accel_<object>_free(NULL) does nothing. Passing NULL,
 *   or a handle that was already freed, to any other function returns
 *   ACCEL_ERR_INVALID_ARGUMENT (never a crash).
 * - "Returns a new handle": the caller owns it and frees it with the matching
 *   _free. "Borrows": the library does not keep the pointer after the call.
 * - Strings passed in are UTF-8 and copied if kept. Strings returned are owned by
 *   the library.
 * - "Collective": every process must call the function, in the same order. A
 *   collective that does not complete within the accelerator's timeout returns
 *   ACCEL_ERR_TIMEOUT with a message naming the operation, its sequence number
 *   and, where known, the ranks that did not arrive.
 * - Threads: an accelerator and the handles prepared with it are used by one
 *   thread at a time. Tensor handles may be read from several threads.
 * - Options structs start with struct_size; initialise them with their _init
 *   function (or the matching ACCEL_*_OPTIONS_INIT macro) before setting fields,
 *   so programs built against an older header keep working with a newer library.
 *
 * This header holds the accelerator (creation, this process's place, prepare,
 * backward, accumulation, collectives); the other areas have headers of their
 * own, which it includes at its end: accel_model.h (models, losses, optimizers,
 * schedulers), accel_data.h (datasets, dataloaders), accel_checkpoint.h,
 * accel_partial_state.h, accel_tracking.h and big_model.h; types.h holds what
 * they share. Include this one. Plain C99.
 */
#ifndef ACCEL_ACCEL_H
#define ACCEL_ACCEL_H

#include <stddef.h>
#include <stdint.h>

#include "accel/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Version                                                                    */
/* ------------------------------------------------------------------------- */

/* The one definition of the version; CMake reads these lines. */
#define ACCEL_VERSION_MAJOR 0
#define ACCEL_VERSION_MINOR 1
#define ACCEL_VERSION_PATCH 0
/* The ABI major: the SONAME is libaccel.so.<ACCEL_ABI_VERSION>. */
#define ACCEL_ABI_VERSION 0
#define ACCEL_VERSION_NUMBER (ACCEL_VERSION_MAJOR * 10000 + ACCEL_VERSION_MINOR * 100 + ACCEL_VERSION_PATCH)

/* The library's version as "MAJOR.MINOR.PATCH". Owned by the library. */
ACCEL_API const char* accel_version(void);
/* The library's version as MAJOR*10000 + MINOR*100 + PATCH. */
ACCEL_API int accel_version_number(void);
/* The library's ABI major version (compare with ACCEL_ABI_VERSION). */
ACCEL_API int accel_abi_version(void);

typedef enum accel_feature { ACCEL_FEATURE_GLOO = 1, ACCEL_FEATURE_CUDA = 2, ACCEL_FEATURE_NCCL = 3 } accel_feature;

/* 1 when this build (and, for CUDA, this machine) has the feature, else 0. */
ACCEL_API int accel_has_feature(accel_feature feature);

/* ------------------------------------------------------------------------- */
/* Errors                                                                     */
/* ------------------------------------------------------------------------- */

/* accel_status, the result of every fallible call, is in accel/types.h. */

/* The message of the last failed call on this thread ("" if none). Owned by the
   library; valid until the next libaccel call on this thread. */
ACCEL_API const char* accel_last_error(void);
/* A short constant name for a status, e.g. "ACCEL_ERR_TIMEOUT". */
ACCEL_API const char* accel_status_name(accel_status status);

/* ------------------------------------------------------------------------- */
/* Tensors                                                                    */
/* ------------------------------------------------------------------------- */

/* Size in bytes of one element of dtype (0 for an unknown dtype). */
ACCEL_API size_t accel_dtype_size(accel_dtype dtype);

/* Creates a CPU tensor of the given dtype and shape by copying nbytes from data.
   nbytes must equal numel * accel_dtype_size(dtype). ndim may be 0 (a scalar),
   at most 64. Returns a new handle in *out. Errors: ACCEL_ERR_INVALID_ARGUMENT
   naming the dimension for a negative size or a shape whose byte count
   overflows 63 bits, checked before anything is allocated. */
ACCEL_API accel_status accel_tensor_from_buffer(const void* data, size_t nbytes, accel_dtype dtype,
                                                const int64_t* shape, size_t ndim, accel_tensor** out);
/* Copies the tensor's elements (from any device, in row-major order) into data,
   which has room for nbytes; nbytes must equal numel * element size. */
ACCEL_API accel_status accel_tensor_copy_to(const accel_tensor* tensor, void* data, size_t nbytes);
ACCEL_API accel_status accel_tensor_ndim(const accel_tensor* tensor, size_t* out);
/* Writes the sizes of the first min(capacity, ndim) dimensions into dims. */
ACCEL_API accel_status accel_tensor_shape(const accel_tensor* tensor, int64_t* dims, size_t capacity);
ACCEL_API accel_status accel_tensor_dtype(const accel_tensor* tensor, accel_dtype* out);
ACCEL_API accel_status accel_tensor_numel(const accel_tensor* tensor, int64_t* out);
/* Indices of the maximum along dim (negative counts from the end). New handle. */
ACCEL_API accel_status accel_tensor_argmax(const accel_tensor* tensor, int64_t dim, accel_tensor** out);
/* Element-wise a == b as a bool tensor; shapes must match or broadcast. New handle. */
ACCEL_API accel_status accel_tensor_eq(const accel_tensor* a, const accel_tensor* b, accel_tensor** out);
/* Sum of all elements as a 0-dimensional tensor. New handle. */
ACCEL_API accel_status accel_tensor_sum(const accel_tensor* tensor, accel_tensor** out);
/* The value of a one-element tensor, converted to double. */
ACCEL_API accel_status accel_tensor_item(const accel_tensor* tensor, double* out);
/* What metrics need beside argmax/eq/sum (the model does the math; these read
   its outputs). Each returns a new handle in *out (accel_tensor_free) and
   leaves *out untouched on failure; none is collective. A dim counts from the
   end when negative. Errors: INVALID_ARGUMENT naming the bad dim, k, shape,
   start or length together with the tensor's shape. */
/* softmax along dim, in the tensor's floating dtype (integers are refused). */
ACCEL_API accel_status accel_tensor_softmax(const accel_tensor* tensor, int64_t dim, accel_tensor** out);
/* The k largest entries along dim, largest first: values and their int64
   indices as two new handles. Errors also when k > the dim's size or k < 0. */
ACCEL_API accel_status accel_tensor_topk(const accel_tensor* tensor, int64_t k, int64_t dim, accel_tensor** values,
                                         accel_tensor** indices);
/* Mean of all elements (0-dimensional); integer and bool tensors are averaged
   as float32 (a bool mean is an accuracy). */
ACCEL_API accel_status accel_tensor_mean(const accel_tensor* tensor, accel_tensor** out);
/* Mean along dim (removed from the shape), same dtype rule. */
ACCEL_API accel_status accel_tensor_mean_dim(const accel_tensor* tensor, int64_t dim, accel_tensor** out);
/* The same elements in a new shape (a copy when the tensor is not contiguous);
   one entry may be -1 (inferred). Errors name both shapes. */
ACCEL_API accel_status accel_tensor_reshape(const accel_tensor* tensor, const int64_t* shape, size_t ndim,
                                            accel_tensor** out);
/* length entries from start along dim (torch.narrow); shares storage. */
ACCEL_API accel_status accel_tensor_narrow(const accel_tensor* tensor, int64_t dim, int64_t start, int64_t length,
                                           accel_tensor** out);
typedef enum accel_compare_op {
  ACCEL_COMPARE_EQ = 0,
  ACCEL_COMPARE_NE = 1,
  ACCEL_COMPARE_LT = 2,
  ACCEL_COMPARE_LE = 3,
  ACCEL_COMPARE_GT = 4,
  ACCEL_COMPARE_GE = 5
} accel_compare_op;
/* Element-wise a <op> b as a bool tensor; shapes must match or broadcast (b is
   moved to a's device). Errors name an unknown op or both shapes. */
ACCEL_API accel_status accel_tensor_compare(const accel_tensor* a, const accel_tensor* b, accel_compare_op op,
                                            accel_tensor** out);
ACCEL_API void accel_tensor_free(accel_tensor* tensor);

/* ------------------------------------------------------------------------- */
/* Accelerator                                                                */
/* ------------------------------------------------------------------------- */

typedef enum accel_distributed_type {
  ACCEL_DISTRIBUTED_NO = 0,
  ACCEL_DISTRIBUTED_MULTI_CPU = 1,
  ACCEL_DISTRIBUTED_MULTI_GPU = 2
} accel_distributed_type;

typedef enum accel_mixed_precision {
  ACCEL_PRECISION_DEFAULT = -1, /* in options: take ACCELERATE_MIXED_PRECISION, else NO */
  ACCEL_PRECISION_NO = 0,
  ACCEL_PRECISION_BF16 = 1, /* on a CPU without AVX-512-BF16/AMX-BF16: runs emulated, slower than NO; rank 0 warns */
  ACCEL_PRECISION_FP16 = 2,
  ACCEL_PRECISION_FP8 = 3
} accel_mixed_precision;

/* NONE is Accelerate's reduction="none": the (scaled) sum, not averaged. */
typedef enum accel_reduce_op { ACCEL_REDUCE_SUM = 0, ACCEL_REDUCE_MEAN = 1, ACCEL_REDUCE_NONE = 2 } accel_reduce_op;

/* Gradient compression for the allreduce (DDP's fp16/bf16 compress hooks):
   buckets travel as 16-bit floats, half the bytes, at the cost of precision. */
typedef enum accel_comm_hook {
  ACCEL_COMM_HOOK_NONE = 0,
  ACCEL_COMM_HOOK_FP16 = 1,
  ACCEL_COMM_HOOK_BF16 = 2
} accel_comm_hook;

/* Sharded data parallel (docs/sharding.md). Values are explicit and never
   renumbered. NO_SHARD: every rank holds everything (replicated data
   parallel). SHARD_OPTIMIZER (DeepSpeed ZeRO-1): each rank keeps the optimizer
   state of its chunk of the flat parameters and updates only that chunk; the
   chunks are all-gathered after every step. SHARD_GRAD_OP (FSDP's name, ZeRO-2):
   gradients are reduce-scattered too, so each rank keeps only its chunk's
   gradient after backward. FULL_SHARD (FSDP, ZeRO-3): the parameters too,
   per wrap unit (fsdp_min_num_params), all-gathered for each unit's forward
   and backward and freed after. HYBRID_SHARD (FSDP): FULL_SHARD within each
   node (LOCAL_WORLD_SIZE consecutive ranks), replicated across nodes: each
   node reduce-scatters its gradients and the chunks are then summed across
   the nodes; with one node it is FULL_SHARD. */
typedef enum accel_sharding_strategy {
  ACCEL_SHARDING_DEFAULT = -1, /* in options: from the launcher's environment, else NO_SHARD */
  ACCEL_SHARDING_NO_SHARD = 0,
  ACCEL_SHARDING_SHARD_OPTIMIZER = 1,
  ACCEL_SHARDING_SHARD_GRAD_OP = 2,
  ACCEL_SHARDING_FULL_SHARD = 3,
  ACCEL_SHARDING_HYBRID_SHARD = 4
} accel_sharding_strategy;

typedef struct accel_accelerator_options {
  uint32_t struct_size; /* sizeof(accel_accelerator_options); set by _init */
  int cpu;              /* nonzero: use the CPU even where a GPU is present */
  /* Collective and rendezvous timeout; default 1800000 (30 min). A collective
     waits at most this long. When a rank does not arrive, the rendezvous of
     accel_accelerator_create fails within timeout_ms (plus at most about a
     second) with ACCEL_ERR_TIMEOUT naming the ranks that did not arrive; under
     `accel launch`, a rank that exits before arriving ends it at once
     (docs/launch.md). */
  int64_t timeout_ms;
  accel_mixed_precision mixed_precision; /* default ACCEL_PRECISION_DEFAULT; FP16 on the CPU needs LibTorch 2.x */
  double bucket_cap_mb;                  /* gradient-sync bucket size cap in MiB; default 25 */
  /* Micro-steps per optimizer step; 0 (default): 1. ACCELERATE_GRADIENT_ACCUMULATION_STEPS
     (set by `accel launch --gradient_accumulation_steps`) wins over it, as in Accelerate. */
  int64_t gradient_accumulation_steps;
  int sync_with_dataloader; /* the loader's last batch ends a window; default 1 */
  /* fp16 dynamic loss scaling (Accelerate's GradScalerKwargs). Checked under
     every precision; INVALID_ARGUMENT naming the option unless init_scale is
     finite and > 0, growth_factor finite and > 1, backoff_factor in (0, 1)
     and growth_interval > 0. */
  double scaler_init_scale;       /* default 65536 */
  double scaler_growth_factor;    /* default 2 */
  double scaler_backoff_factor;   /* default 0.5 */
  int64_t scaler_growth_interval; /* default 2000 */
  /* Prepared dataloaders (Accelerate's DataLoaderConfiguration). */
  int split_batches; /* nonzero: each batch is cut into num_processes slices; default 0 */
  int even_batches;  /* nonzero: the last round is completed from the start; default 1 */
  /* 1: the main process reads and scatters; 0: every process reads its shard;
     -1 (default): 1 for iterable datasets when device_placement is on, else 0
     (Accelerate's default); other values are INVALID_ARGUMENT. */
  int dispatch_batches;
  int device_placement; /* nonzero: batches arrive on the accelerator's device; default 1 */
  /* Project layout (Accelerate's ProjectConfiguration). Strings are copied. */
  const char* project_dir;         /* checkpoints and logs go under it; NULL: current directory */
  const char* logging_dir;         /* tracker output; NULL: project_dir/logs */
  int automatic_checkpoint_naming; /* save_state() without a dir writes project_dir/checkpoints/checkpoint_{i} */
  int64_t total_limit;             /* automatic checkpoints kept (oldest removed); 0: all */
  int save_on_each_node;           /* shared checkpoint files on every node's main process too; default 0 */
  /* Trackers: comma-separated names ("tensorboard,jsonl"), or "all"; NULL or "": none. */
  const char* log_with;
  /* Gradient sync (Accelerate's DistributedDataParallelKwargs); see docs/gradient-sync.md. */
  double first_bucket_cap_mb;  /* the first bucket, small so communication starts early; default 1 */
  int gradient_as_bucket_view; /* default 1: gradients alias the buckets, no copy in or out (PyTorch's
                                  default is 0; measured 2x faster sync here, docs/gradient-sync.md);
                                  0: gradients are separate tensors copied to and from the buckets */
  int static_graph;            /* accepted for compatibility: buckets are always fixed at prepare */
  /* 0 (default): a parameter that gets no gradient in a synced backward makes
     backward fail with ACCEL_ERR_STATE naming it; nonzero: allowed. */
  int find_unused_parameters;
  accel_comm_hook comm_hook; /* default ACCEL_COMM_HOOK_NONE; UNSUPPORTED at prepare if the backend cannot */
  /* Accelerate's GradientAccumulationPlugin (with sync_with_dataloader above).
     sync_each_batch nonzero: gradients are averaged across processes on every
     accumulation micro-step, not only at the window's end (less memory, more
     communication); the optimizer still steps once per window. Default 0. */
  int sync_each_batch;
  /* nonzero: a prepared scheduler's calls on micro-steps count towards
     OneCycle's total_steps cap. Default 0 (Accelerate 0.22 drops its plugin's
     default True before reading it, so it is off there too). */
  int adjust_scheduler;
  /* DDP's broadcast_buffers, default 1: every training-mode forward (grad
     enabled) of a prepared model first copies process 0's buffers (BatchNorm
     running statistics) into every replica, which makes that forward
     collective; skipped inside join_uneven_inputs. 0: buffers stay local. */
  int broadcast_buffers;
  /* Shuffling of prepared loaders (Accelerate's DataLoaderConfiguration).
     use_seedable_sampler nonzero: epoch e is shuffled with data_seed + e, or,
     with data_seed = -1, the seed last given to set_seed (LibTorch's initial
     seed) + e, whatever the loader's own seed. 0 (default): a loader whose
     seed is 0 draws each epoch's seed from the global generator (so set_seed
     decides the order) and, with several processes, takes the main
     process's draw: its first next of each epoch is then collective. */
  int use_seedable_sampler;
  int64_t data_seed; /* default -1 (none); other negatives are INVALID_ARGUMENT */
  /* Default ACCEL_SHARDING_DEFAULT: ACCELERATE_USE_FSDP=true with
     FSDP_SHARDING_STRATEGY (a name or FSDP's number 1-5), else
     ACCELERATE_USE_DEEPSPEED=true with ACCELERATE_DEEPSPEED_ZERO_STAGE (0-3),
     as `accel launch` writes them from Accelerate's fsdp_config or a DeepSpeed
     config; else NO_SHARD (FSDP's 5, HYBRID_SHARD_ZERO2, is UNSUPPORTED).
     SHARD_GRAD_OP, FULL_SHARD and HYBRID_SHARD with a comm_hook are UNSUPPORTED;
     HYBRID_SHARD needs the same number of processes on every node. With sharding,
     join_uneven_inputs and fp16 are UNSUPPORTED for now;
     accel_optimizer_step is collective (it all-gathers the parameters), and
     so is clip_grad_norm under SHARD_GRAD_OP and FULL_SHARD (the norm spans
     every rank's chunk); save_state writes one optimizer file per process
     (docs/sharding.md). Under FULL_SHARD the model's forward, backward,
     get_state_dict, save_model and checkpoint loading are collective, and
     its parameters are empty tensors outside forward and backward. Its wrap
     units: a JSON spec's layers, a TorchScript model whole or by submodule
     class (fsdp_transformer_layer_cls_to_wrap), a C++ module whole. */
  accel_sharding_strategy sharding_strategy;
  /* FULL_SHARD's wrap units. Default -1: with ACCELERATE_USE_FSDP=true,
     Accelerate's FSDP_AUTO_WRAP_POLICY (NO_WRAP, its default: the whole model
     is one unit; SIZE_BASED_WRAP with FSDP_MIN_NUM_PARAMS), else 0. 0: one unit
     per top-level layer with parameters; n > 0: consecutive layers grouped
     until they hold n parameters (size_based_auto_wrap_policy). Other
     negatives are INVALID_ARGUMENT. */
  int64_t fsdp_min_num_params;
  /* FSDP's activation checkpointing of FULL_SHARD's wrap units (Accelerate's
     fsdp_activation_checkpointing): a unit's forward keeps only its input and
     its backward runs the unit again, with the random generator's state of
     the forward (dropout draws the same masks), so no activation inside a
     unit outlives its forward; costs one more forward per step. Default -1:
     with ACCELERATE_USE_FSDP=true, FSDP_ACTIVATION_CHECKPOINTING (as `accel
     launch` writes it), else 0. 1 with a strategy other than FULL_SHARD is
     UNSUPPORTED; values other than -1, 0 and 1 are INVALID_ARGUMENT. */
  int fsdp_activation_checkpointing;
  /* FSDP's transformer_auto_wrap_policy (Accelerate's
     fsdp_transformer_layer_cls_to_wrap), comma-separated, copied: every
     submodule of a TorchScript model whose class name ("GPT2Block") or dotted
     path ("transformer.h.0") is listed becomes a FULL_SHARD wrap unit, run
     inside its own all-gather (its calls are rewritten in the graph at
     prepare, so prepare the model before its first forward), and the rest of
     the model one root unit; in a JSON spec, every layer whose "type"
     ("TransformerEncoderLayer") or name (a graph node's, a chain layer's
     index) is listed, and the layers between two of them a unit each.
     Default NULL: with ACCELERATE_USE_FSDP=true and
     FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP, FSDP_TRANSFORMER_CLS_TO_WRAP;
     else none (a TorchScript or C++ module model is one unit). An empty name
     is INVALID_ARGUMENT here; at accel_accelerator_prepare_model, a name that
     matches no submodule or layer is INVALID_ARGUMENT naming it and the
     model's classes or layer types; a C++ module or a submodule inlined at
     export is UNSUPPORTED. */
  const char* fsdp_transformer_layer_cls_to_wrap;
  /* FSDP's backward_prefetch: while a FULL_SHARD unit runs its backward, the
     all-gather of the unit whose backward comes next is already in flight
     (costs one more unit whole in memory; +7% steps/s on the mlp bench,
     docs/benchmarks.md). Default -1: on, unless ACCELERATE_USE_FSDP=true with
     FSDP_BACKWARD_PREFETCH=NO_PREFETCH; 0 off, 1 on; others INVALID_ARGUMENT. */
  int fsdp_backward_prefetch;
  /* FSDP's forward_prefetch: the same in the forward, for the next unit.
     Default -1: FSDP_FORWARD_PREFETCH under ACCELERATE_USE_FSDP=true, else
     off; 0 off, 1 on; others INVALID_ARGUMENT. */
  int fsdp_forward_prefetch;
  /* CPU offload (Accelerate's fsdp_offload_params, DeepSpeed's
     offload_optimizer / offload_param device "cpu"): a sharded model's fp32
     master chunk, gradient chunk and optimizer state live in host memory and
     the optimizer steps there, while forward and backward run on the
     accelerator's device, which under FULL_SHARD then holds only the units in
     use (SHARD_OPTIMIZER and SHARD_GRAD_OP keep the full parameters there).
     Costs a device-to-host copy of the gradient chunk and a host-to-device copy
     of the parameter chunk per step. With one process the strategy is then
     applied over a world of one (without offload one process runs
     replicated). Default -1: FSDP_OFFLOAD_PARAMS under ACCELERATE_USE_FSDP=true,
     or ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE / _PARAM_DEVICE "cpu"
     under ACCELERATE_USE_DEEPSPEED=true, else off; 0 off, 1 on; others
     INVALID_ARGUMENT; on with NO_SHARD is UNSUPPORTED. docs/sharding.md. */
  int cpu_offload;
  /* FSDP's state_dict_type (Accelerate's fsdp_state_dict_type), for save_state
     under a sharding strategy: "SHARDED_STATE_DICT" writes the model and the
     optimizers as PyTorch distributed checkpoints (pytorch_model_fsdp_0/,
     optimizer_0/, which Accelerate's FSDP load_state and
     torch.distributed.checkpoint read), "FULL_STATE_DICT" libaccel's own
     per-process files. load_state reads either at any world size. Borrowed
     for the call. Default NULL: FSDP_STATE_DICT_TYPE, else FULL_STATE_DICT;
     another value is INVALID_ARGUMENT. docs/checkpointing.md. */
  const char* fsdp_state_dict_type;
  /* Accelerate's ParallelismConfig (docs/parallelism.md): the world factored
     into dp_replicate x dp_shard x cp x tp (tp innermost: a tensor-parallel
     group is tp_size consecutive ranks). The data loader's shards and
     gather_for_metrics run over dp_replicate x dp_shard, gradient averaging
     over dp_replicate x dp_shard x cp, a sharding strategy over dp_shard x
     cp; prepare splits a JSON-spec model's transformer layers over tp
     (attention by heads, the feed-forward block by columns and rows, the
     norms over sequence blocks under "sequence_parallel"; a "tp_plan" in
     the spec chooses) and cuts a JSON graph model's sequence over cp (each
     rank computes its block of the tokens; attention gathers the keys and
     values; UNSUPPORTED at prepare for other models). All 0 (default): from
     ACCELERATE_USE_PARALLELISM_CONFIG=true with PARALLELISM_CONFIG_*_SIZE
     (`accel launch --parallelism_config_*`), else none. Any of them set: the
     mesh, a 0 counting as 1. Negative sizes, sizes that do not multiply to
     the number of processes or do not fit the sharding strategy
     (dp_shard_size > 1 needs one; a strategy needs dp_shard_size x cp_size
     > 1) are INVALID_ARGUMENT. */
  int64_t parallelism_dp_replicate_size;
  int64_t parallelism_dp_shard_size;
  int64_t parallelism_tp_size;
  int64_t parallelism_cp_size;
  /* Accelerate's AutocastKwargs. autocast_enabled, default 1: 0 runs a
     prepared model's forward, and autocast scopes opened with enabled = -1,
     in float32 under a mixed precision. autocast_cache_enabled: LibTorch's
     autocast weight-cast cache inside those regions; -1 (default) leaves it
     as it is (on), 0 off, 1 on; others INVALID_ARGUMENT. */
  int autocast_enabled;
  int autocast_cache_enabled;
  /* GradScalerKwargs' enabled, default 1: 0 runs fp16 without loss scaling
     (no step is skipped). */
  int scaler_enabled;
  /* Accelerate's InitProcessGroupKwargs, copied. backend: NULL or "" (the
     device's: gloo on the CPU, nccl on CUDA), "gloo" (CPU runs; on CUDA
     UNSUPPORTED) or "nccl" (CUDA runs; on the CPU INVALID_ARGUMENT); a backend
     torch.distributed knows but libaccel does not build ("mpi", "ccl",
     "xccl", "hccl", "ucc", ...) is UNSUPPORTED, anything else
     INVALID_ARGUMENT. init_method: NULL, "" or "env://" (MASTER_ADDR and
     MASTER_PORT), or "tcp://HOST:PORT" (the rendezvous store at that
     address, hosted by rank 0); "file://..." is UNSUPPORTED, anything else
     INVALID_ARGUMENT. The timeout is timeout_ms above. */
  const char* backend;
  const char* init_method;
  /* Accelerate's rng_types, comma-separated, copied: the generators every
     process takes from process 0 at the start of each epoch of a prepared
     dataloader. "torch" (LibTorch's CPU generator), "cuda" (the process's
     CUDA generator; nothing on a CPU run), "generator" (a shuffle without a
     seed of its own takes process 0's draw). NULL (default): "generator", as
     Accelerate; "": none. Accelerate's other device types (xla, npu, mlu,
     musa, sdaa, xpu, hpu) are UNSUPPORTED, other names INVALID_ARGUMENT. */
  const char* rng_types;
  /* DataLoaderConfiguration's non_blocking and use_stateful_dataloader,
     reported by the accelerator as given (default 0). Batches already reach a
     CUDA device from pinned memory without blocking, and save_state always
     records prepared loaders' positions, so neither changes what runs. */
  int non_blocking;
  int use_stateful_dataloader;
  /* Accelerate's step_scheduler_with_optimizer (default 1): prepared
     schedulers step as accel_accelerator_prepare_scheduler says. 0: each
     scheduler step call advances it once, whatever the optimizer did (as a
     scheduler's own step_with_optimizer = 0). */
  int step_scheduler_with_optimizer;
} accel_accelerator_options;

#define ACCEL_ACCELERATOR_OPTIONS_INIT                                                                               \
  {                                                                                                                  \
    (uint32_t)sizeof(accel_accelerator_options), 0, 1800000, ACCEL_PRECISION_DEFAULT, 25.0, 0, 1, 65536.0, 2.0, 0.5, \
        2000, 0, 1, -1, 1, NULL, NULL, 0, 0, 0, NULL, 1.0, 1, 0, 0, ACCEL_COMM_HOOK_NONE, 0, 0, 1, 0, -1,            \
        ACCEL_SHARDING_DEFAULT, -1, -1, NULL, -1, -1, -1, NULL, 0, 0, 0, 0, 1, -1, 1, NULL, NULL, NULL, 0, 0, 1      \
  }

/* Fills opts with the defaults above. */
ACCEL_API void accel_accelerator_options_init(accel_accelerator_options* opts);

/* Creates the accelerator. Reads the torchrun environment contract (RANK,
   WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT); with
   none set it runs as a single process without a process group. With
   WORLD_SIZE > 1 it joins the TCPStore rendezvous and creates the process group
   (Gloo on CPU, NCCL on CUDA). opts may be NULL for defaults.
   The first accelerator of a process also tunes glibc's malloc to keep freed
   buffers up to 32 MiB for reuse instead of returning them to the kernel every
   step (1.3-1.55x the CPU steps/s of the example CNN, docs/benchmarks.md).
   ACCEL_TUNE_MALLOC=0 (or no, off, false), or any of MALLOC_MMAP_THRESHOLD_,
   MALLOC_TRIM_THRESHOLD_ and MALLOC_TOP_PAD_ in the environment, leaves
   malloc as it is; another ACCEL_TUNE_MALLOC value is INVALID_ARGUMENT.
   It also gives LibTorch a CPU allocator that keeps freed blocks of 32 MiB and
   more (which glibc always returns to the kernel) for reuse, never holding
   more than the process's peak of live blocks and freeing blocks unused for
   5 s (1.4-2.4x the steps/s of the 67M-parameter `sync` workload,
   docs/benchmarks.md); ACCEL_HOST_BLOCK_CACHE=0 (or ACCEL_TUNE_MALLOC=0)
   leaves LibTorch's allocator alone, another value that is not a true/false
   word is INVALID_ARGUMENT.
   Collective when WORLD_SIZE > 1. Errors: INVALID_ARGUMENT (bad option or
   environment value, named), TIMEOUT (a peer did not join within timeout_ms;
   the message lists the ranks that did not arrive),
   DISTRIBUTED, UNSUPPORTED (a mixed precision mode the device cannot do).
   Returns a new handle in *out. */
ACCEL_API accel_status accel_accelerator_create(const accel_accelerator_options* opts, accel_accelerator** out);
/* Frees the accelerator. Models, optimizers and dataloaders prepared with it
   keep it alive internally, so they may be freed before or after it. */
ACCEL_API void accel_accelerator_free(accel_accelerator* acc);

ACCEL_API accel_status accel_accelerator_process_index(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_local_process_index(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_num_processes(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_is_main_process(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_is_local_main_process(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_distributed_type(const accel_accelerator* acc, accel_distributed_type* out);
ACCEL_API accel_status accel_accelerator_mixed_precision(const accel_accelerator* acc, accel_mixed_precision* out);
/* The device as a string such as "cpu" or "cuda:0"; owned by the accelerator. */
ACCEL_API accel_status accel_accelerator_device(const accel_accelerator* acc, const char** out);
/* Accelerate's send_to_device for hand-built batches: tensor on the
   accelerator's device, as a new handle in *out (accel_tensor_free); the same
   storage when it is already there. Not collective. */
ACCEL_API accel_status accel_accelerator_send_to_device(const accel_accelerator* acc, const accel_tensor* tensor,
                                                        accel_tensor** out);
/* accel_accelerator_send_map_to_device (with accel_tensor_map below) does the
   same for every tensor of a map. */
/* The effective collective timeout in milliseconds, as given to the backend. */
ACCEL_API accel_status accel_accelerator_timeout_ms(const accel_accelerator* acc, int64_t* out);
/* The resolved sharding strategy (the option, else the launcher's environment;
   a single process trains replicated whatever it says, unless cpu_offload is
   on). Not collective. Errors: INVALID_ARGUMENT for a NULL acc or out; *out is
   untouched then. */
ACCEL_API accel_status accel_accelerator_sharding_strategy(const accel_accelerator* acc, accel_sharding_strategy* out);
/* *out = 1 when sharded models offload to the CPU (the resolved cpu_offload
   option), else 0. Not collective. Errors: INVALID_ARGUMENT for a NULL acc or
   out; *out is untouched then. */
ACCEL_API accel_status accel_accelerator_cpu_offload(const accel_accelerator* acc, int* out);
/* The device mesh in use (docs/parallelism.md): each size of the
   ParallelismConfig, from the options or the environment; without one,
   dp_replicate_size is the number of processes and the rest 1, as in
   Accelerate. Any out may be NULL. Not collective. */
ACCEL_API accel_status accel_accelerator_parallelism_config(const accel_accelerator* acc, int64_t* dp_replicate_size,
                                                            int64_t* dp_shard_size, int64_t* tp_size, int64_t* cp_size);
/* This process's coordinate along each dimension of that mesh (Accelerate's
   data_parallel_rank, data_parallel_shard_rank, tensor_parallel_rank,
   context_parallel_rank): the process index read row-major over dp_replicate
   x dp_shard x cp x tp, tp innermost (tp_rank = index % tp_size); without a
   ParallelismConfig, dp_replicate_rank is the process index and the rest 0.
   Any out may be NULL. Not collective. */
ACCEL_API accel_status accel_accelerator_parallelism_ranks(const accel_accelerator* acc, int64_t* dp_replicate_rank,
                                                           int64_t* dp_shard_rank, int64_t* tp_rank, int64_t* cp_rank);

/* Blocks until every process reaches this call. Collective. */
ACCEL_API accel_status accel_accelerator_wait_for_everyone(accel_accelerator* acc);
/* Prints message and a newline once per machine, on each machine's local main
   process (Accelerate's accelerator.print); other processes do nothing. */
ACCEL_API accel_status accel_accelerator_print(const accel_accelerator* acc, const char* message);
/* Seeds every random generator LibTorch has (CPU and CUDA) and libaccel's own. */
ACCEL_API accel_status accel_accelerator_set_seed(accel_accelerator* acc, uint64_t seed);
/* Accelerate's set_seed(seed, device_specific, deterministic): as
   accel_accelerator_set_seed, and with device_specific != 0 each process uses
   seed + its process index (so ranks differ, reproducibly); with
   deterministic != 0 LibTorch uses deterministic algorithms from then on in
   this process (an operation without one then fails with its own error);
   0 leaves that setting as it was. Not collective. Errors: INVALID_ARGUMENT
   for a bad handle. */
ACCEL_API accel_status accel_accelerator_set_seed_ext(accel_accelerator* acc, uint64_t seed, int device_specific,
                                                      int deterministic);

/* Concatenates tensor from every process along dim 0 (in rank order). Sizes on
   dim 0 may differ between processes; the other dims and the dtype must match,
   else every process gets INVALID_ARGUMENT naming the differing ranks.
   Collective. Returns a new handle in *out. */
ACCEL_API accel_status accel_accelerator_gather(accel_accelerator* acc, const accel_tensor* tensor, accel_tensor** out);
/* Like accel_accelerator_gather, but on the last batch of a prepared dataloader
   it drops the samples that were repeated to complete the last round, so a
   metric over the result counts every sample of the dataset exactly once.
   Collective. Returns a new handle in *out. */
ACCEL_API accel_status accel_accelerator_gather_for_metrics(accel_accelerator* acc, const accel_tensor* tensor,
                                                            accel_tensor** out);
/* Sums (SUM, NONE) or averages (MEAN) tensor over every process; shapes and
   dtypes must match. Checked only in debug mode (see
   accel_accelerator_debug_mode): there a mismatch is INVALID_ARGUMENT on every
   process naming the shapes; otherwise the check's extra collective is skipped
   and a mismatch is undefined, as in Accelerate: the backend may fail
   (DISTRIBUTED), wait until the TIMEOUT, or abort the process (Gloo does on a
   size mismatch). Diagnose with `accel launch --debug`.
   Collective. Returns a new handle in *out. */
ACCEL_API accel_status accel_accelerator_reduce(accel_accelerator* acc, const accel_tensor* tensor, accel_reduce_op op,
                                                accel_tensor** out);
/* Process `from`'s tensor, on every process; shapes and dtypes must match
   (checked in debug mode only, as for accel_accelerator_reduce).
   Collective. Returns a new handle in *out. */
ACCEL_API accel_status accel_accelerator_broadcast(accel_accelerator* acc, const accel_tensor* tensor, int from,
                                                   accel_tensor** out);
/* Pads tensor along dim to the largest size any process has, with pad_value,
   at the end (pad_first = 0) or the start. Collective. New handle in *out.
   A dim the tensor does not have (dim >= ndim) returns it unchanged without
   communicating, as Accelerate does; a negative dim beyond -ndim is
   INVALID_ARGUMENT. */
ACCEL_API accel_status accel_accelerator_pad_across_processes(accel_accelerator* acc, const accel_tensor* tensor,
                                                              int64_t dim, double pad_value, int pad_first,
                                                              accel_tensor** out);
/* Lists of tensors: a binding's nested structure (tuples, lists, dicts),
   flattened. Each takes `count` borrowed tensors and, on success, stores
   `count` new handles in out[0..count-1] (a caller-provided array; the caller
   frees each with accel_tensor_free); on failure out is untouched. Every
   process must pass the same count. count 0 does nothing (tensors and out may
   then be NULL). A NULL or freed tensor is INVALID_ARGUMENT naming its index.
   Each is collective and behaves as its one-tensor form on every tensor;
   gather exchanges the whole list's shapes in one collective. */
ACCEL_API accel_status accel_accelerator_gather_tensors(accel_accelerator* acc, const accel_tensor* const* tensors,
                                                        size_t count, accel_tensor** out);
ACCEL_API accel_status accel_accelerator_gather_for_metrics_tensors(accel_accelerator* acc,
                                                                    const accel_tensor* const* tensors, size_t count,
                                                                    accel_tensor** out);
/* Sum, mean or none (see accel_reduce_op) of scale * tensor (Accelerate's
   reduce(..., scale)): scale must be finite, else INVALID_ARGUMENT. Tensors of
   one dtype travel in one allreduce. */
ACCEL_API accel_status accel_accelerator_reduce_tensors(accel_accelerator* acc, const accel_tensor* const* tensors,
                                                        size_t count, accel_reduce_op op, double scale,
                                                        accel_tensor** out);
ACCEL_API accel_status accel_accelerator_broadcast_tensors(accel_accelerator* acc, const accel_tensor* const* tensors,
                                                           size_t count, int from, accel_tensor** out);
/* One gather of every tensor's size along dim; tensors without dim come back
   unchanged (no collective at all when none has it). */
ACCEL_API accel_status accel_accelerator_pad_across_processes_tensors(accel_accelerator* acc,
                                                                      const accel_tensor* const* tensors, size_t count,
                                                                      int64_t dim, double pad_value, int pad_first,
                                                                      accel_tensor** out);
/* How many of `gathered` samples gather_for_metrics keeps now: the dataset's
   remainder on a prepared loader's last batch, else all. Bindings use it for
   gather_for_metrics over objects (Accelerate's use_gather_object): gather
   them with accel_accelerator_gather_object, concatenate, keep the first
   *out. Not collective. INVALID_ARGUMENT when gathered < 0. */
ACCEL_API accel_status accel_accelerator_metrics_length(const accel_accelerator* acc, int64_t gathered, int64_t* out);
/* 1 in debug mode (ACCELERATE_DEBUG_MODE truthy at creation; accel launch
   --debug sets it), else 0. In debug mode reduce and broadcast exchange
   shapes and dtypes first (one extra collective per call). */
ACCEL_API accel_status accel_accelerator_debug_mode(const accel_accelerator* acc, int* out);
/* Gathers nbytes of arbitrary data from every process: *bytes receives all of
   them concatenated in rank order (uint8), *lengths each process's byte count
   (int64, one per process). Collective. Two new handles. */
ACCEL_API accel_status accel_accelerator_gather_object(accel_accelerator* acc, const void* data, size_t nbytes,
                                                       accel_tensor** bytes, accel_tensor** lengths);
/* Process `from`'s nbytes of data on every process (Accelerate's
   broadcast_object_list, the objects serialized by the binding); the other
   processes' data is ignored (may be NULL with nbytes 0). *bytes receives a
   new uint8 tensor. INVALID_ARGUMENT when from is not a process index.
   Collective. */
ACCEL_API accel_status accel_accelerator_broadcast_object(accel_accelerator* acc, const void* data, size_t nbytes,
                                                          int from, accel_tensor** bytes);
/* Which of n items this process takes in split_between_processes, the one
   rule every binding uses for its own containers: items [*start, *end), then
   *padded_length - (*end - *start) copies of item n - 1. With n over P
   processes the first n % P take one more; with fewer items than processes
   the surplus processes get none (*start == *end). With apply_padding every
   process gets ceil(n / P) (n = 0: none). Not collective. INVALID_ARGUMENT
   when n < 0; the out-params are untouched on failure. */
ACCEL_API accel_status accel_accelerator_split_range(const accel_accelerator* acc, int64_t n, int apply_padding,
                                                     int64_t* start, int64_t* end, int64_t* padded_length);
/* This process's share of tensor's rows, by accel_accelerator_split_range;
   padding repeats the last row. Not collective. New handle in *out. */
ACCEL_API accel_status accel_accelerator_split_between_processes(const accel_accelerator* acc,
                                                                 const accel_tensor* tensor, int apply_padding,
                                                                 accel_tensor** out);
/* The same rows of each of count tensors (their dim-0 sizes must agree, else
   INVALID_ARGUMENT naming them); out as for accel_accelerator_gather_tensors.
   Not collective. */
ACCEL_API accel_status accel_accelerator_split_between_processes_tensors(const accel_accelerator* acc,
                                                                         const accel_tensor* const* tensors,
                                                                         size_t count, int apply_padding,
                                                                         accel_tensor** out);
/* Raises this process's trigger (e.g. "stop early"). */
ACCEL_API accel_status accel_accelerator_set_trigger(accel_accelerator* acc);
/* *out = 1 when any process raised its trigger since the last check (and
   clears it), else 0. Collective. */
ACCEL_API accel_status accel_accelerator_check_trigger(accel_accelerator* acc, int* out);
/* A scope in which the main process runs first: the others wait in _begin,
   the main process waits in _end. Collective (both calls). _end without an
   open _begin is ACCEL_ERR_STATE (and enters no barrier). */
ACCEL_API accel_status accel_accelerator_main_process_first_begin(accel_accelerator* acc);
ACCEL_API accel_status accel_accelerator_main_process_first_end(accel_accelerator* acc);
/* The same with each machine's local main process. Collective; _end without
   an open _begin is ACCEL_ERR_STATE. */
ACCEL_API accel_status accel_accelerator_local_main_process_first_begin(accel_accelerator* acc);
ACCEL_API accel_status accel_accelerator_local_main_process_first_end(accel_accelerator* acc);
/* Accelerate's free_memory/clear: the accelerator forgets every prepared
   model, optimizer, scheduler and dataloader (backward syncs none of them,
   save_state saves none of them; the handles stay valid and the caller frees
   them), resets gradient accumulation and the trigger, and empties the CUDA
   caching allocator's unused memory. Not collective. */
ACCEL_API accel_status accel_accelerator_free_memory(accel_accelerator* acc);

/* ------------------------------------------------------------------------- */
/* prepare and backward                                                       */
/* ------------------------------------------------------------------------- */

/* Moves the model to the device, broadcasts process 0's parameters and buffers
   so every replica starts equal, and wires bucketed gradient averaging that
   overlaps backward. A model is prepared once. The model keeps the accelerator
   alive. Collective. */
ACCEL_API accel_status accel_accelerator_prepare_model(accel_accelerator* acc, accel_model* model);
/* Binds the optimizer to the accelerator (its model must be prepared first). */
ACCEL_API accel_status accel_accelerator_prepare_optimizer(accel_accelerator* acc, accel_optimizer* optimizer);
/* Shards the loader across processes as Accelerate does, following the
   accelerator's options: without split_batches each process takes whole
   batches in turn, with it every batch is cut into num_processes slices
   (batch_size must divide; INVALID_ARGUMENT otherwise); with even_batches the
   last round is completed from the start of the dataset so every process sees
   the same number of batches; with dispatch_batches the main process reads
   and broadcasts each batch (then every next call is collective), and the
   last batch, when its rows do not divide by num_processes, is split without
   padding beyond one row per process (range(10), batch 4, 2 processes: rank 0
   gets [0..3], [8] and rank 1 [4..7], [9]). With device_placement batches
   arrive on the accelerator's device. Errors: INVALID_ARGUMENT for a batch
   size split_batches cannot divide, or a batch sampler without a batch size
   under split_batches or even_batches. */
ACCEL_API accel_status accel_accelerator_prepare_dataloader(accel_accelerator* acc, accel_dataloader* loader);
/* Binds the scheduler to the accelerator, as Accelerate does: it steps only
   when the optimizer really stepped (a sync step not skipped by the fp16 loss
   scaler) and, unless step_with_optimizer is 0, advances num_processes steps
   per call so a schedule written for one process keeps its shape; under
   split_batches (batches are not multiplied by the processes) one step per
   call. Without split_batches a OneCycle scheduler stops at total_steps
   instead of failing (Accelerate's special case). */
ACCEL_API accel_status accel_accelerator_prepare_scheduler(accel_accelerator* acc, accel_scheduler* scheduler);
/* Backpropagates loss / gradient_accumulation_steps (scaled under fp16); on
   a sync step the gradients of every prepared model are averaged across
   processes before it returns. Collective on sync steps. */
ACCEL_API accel_status accel_accelerator_backward(accel_accelerator* acc, const accel_tensor* loss);

/* ------------------------------------------------------------------------- */
/* Gradient accumulation, sync control and clipping                           */
/* ------------------------------------------------------------------------- */

/* Accelerate's `with accelerator.accumulate(model)`: call _begin before the
   forward of each micro-step and _end after the optimizer step. _begin decides
   whether this micro-step completes the accumulation window (every
   gradient_accumulation_steps-th, and the dataloader's last batch); on the
   others gradients accumulate locally with no communication, and the prepared
   optimizer's step/zero_grad and the prepared scheduler do nothing. _end
   without an open _begin for that model is ACCEL_ERR_STATE. */
ACCEL_API accel_status accel_accelerator_accumulate_begin(accel_accelerator* acc, accel_model* model);
ACCEL_API accel_status accel_accelerator_accumulate_end(accel_accelerator* acc, accel_model* model);
/* Whether the batch a prepared loader just yielded was its epoch's last
   (Accelerate's gradient_state.end_of_dataloader). */
ACCEL_API accel_status accel_accelerator_end_of_dataloader(const accel_accelerator* acc, int* out);
/* *out = 1 while a loader prepared by this accelerator is in an epoch, else 0
   (Accelerate's gradient_state.in_dataloader): from the accel_dataloader_next
   that opens the epoch to the one that reports its end (or
   accel_dataloader_set_epoch, a resume, freeing the loader).
   accel_dataloader_open_index tells which loaders. Errors: INVALID_ARGUMENT
   for a NULL or bad handle. */
ACCEL_API accel_status accel_accelerator_in_dataloader(const accel_accelerator* acc, int* out);
/* Accelerate's gradient_state.remainder: from the start of each epoch of a
   prepared map-style loader (after its first next), the dataset's length
   modulo the total batch size (batch_size, times num_processes without
   split_batches), in one process too; with dispatch_batches or a stream,
   at the last batch, the real samples of that last round. -1 with
   drop_last, outside an epoch, for a batch sampler without a batch size and
   while a stream's length is unknown. gather_for_metrics keeps that many rows
   of the last batch's gather when it is positive. */
ACCEL_API accel_status accel_accelerator_remainder(const accel_accelerator* acc, int64_t* out);
/* *out = 1 on a step whose gradients are synchronised, else 0. */
ACCEL_API accel_status accel_accelerator_sync_gradients(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_gradient_accumulation_steps(const accel_accelerator* acc, int64_t* out);
/* Accelerate's accelerator.step: the micro-steps accumulate_begin has counted
   (a window ends when it is a multiple of gradient_accumulation_steps); 0 at
   creation, after free_memory, and again at a prepared loader's last batch
   under sync_with_dataloader. save_state keeps it, load_state restores it. */
ACCEL_API accel_status accel_accelerator_accumulation_step(const accel_accelerator* acc, int64_t* out);
/* Accelerate's `accelerator.sync_gradients = sync`: whether this micro-step
   ends a window for the optimizer step and gradient clipping, until the next
   accumulate_begin decides again. As in Accelerate it does not change whether
   the running backward averages gradients (accel_accelerator_trigger_sync_in_backward
   does). Not collective. */
ACCEL_API accel_status accel_accelerator_set_sync_gradients(accel_accelerator* acc, int sync);
/* Accelerate's `accelerator.gradient_accumulation_steps = steps`: windows of
   `steps` micro-steps from the next accumulate_begin on, and backward divides
   the loss by it. INVALID_ARGUMENT naming the value when steps < 1. */
ACCEL_API accel_status accel_accelerator_set_gradient_accumulation_steps(accel_accelerator* acc, int64_t steps);
/* The DataLoaderConfiguration in use (Accelerate's properties of the same
   names): 0 or 1; dispatch_batches -1 when unset (iterable datasets are
   dispatched), data_seed -1 when none. */
ACCEL_API accel_status accel_accelerator_split_batches(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_even_batches(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_dispatch_batches(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_use_seedable_sampler(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_data_seed(const accel_accelerator* acc, int64_t* out);
ACCEL_API accel_status accel_accelerator_non_blocking(const accel_accelerator* acc, int* out);
ACCEL_API accel_status accel_accelerator_use_stateful_dataloader(const accel_accelerator* acc, int* out);
/* Accelerate's `accelerator.even_batches = even`: dataloaders prepared from
   now on complete (nonzero) or do not complete (0) their last round. */
ACCEL_API accel_status accel_accelerator_set_even_batches(accel_accelerator* acc, int even);
/* Accelerate's synchronize_rng_states: every process takes process 0's state
   of the comma-separated generators ("torch", "cuda", "generator" as in
   rng_types; "generator" has no global state, so it is accepted and does
   nothing here; "cuda" does nothing on a CPU run). Errors as for the
   rng_types option, before anything is sent. Collective with several
   processes. */
ACCEL_API accel_status accel_accelerator_synchronize_rng_states(accel_accelerator* acc, const char* rng_types);
/* Between _begin and _end the model's backward passes do not communicate
   (DDP's no_sync); gradients accumulate locally. _end without an open _begin
   for that model is ACCEL_ERR_STATE. */
ACCEL_API accel_status accel_accelerator_no_sync_begin(accel_accelerator* acc, accel_model* model);
ACCEL_API accel_status accel_accelerator_no_sync_end(accel_accelerator* acc, accel_model* model);
/* LocalSGD's synchronisation (Accelerate's LocalSGD): waits for every process,
   then replaces each of the model's parameters by its mean over the
   data-parallel processes. Collective; nothing to do on one process. Use it
   every N steps inside no_sync (the bindings' LocalSGD does both). Errors:
   INVALID_ARGUMENT (bad handles, a model not prepared); UNSUPPORTED for a
   sharded model (its processes hold chunks, not replicas). */
ACCEL_API accel_status accel_accelerator_average_parameters(accel_accelerator* acc, accel_model* model);
/* Makes the model's next backward synchronise even inside no_sync. */
ACCEL_API accel_status accel_accelerator_trigger_sync_in_backward(accel_accelerator* acc, accel_model* model);
/* Clips the model's total gradient norm to max_norm (unscaling first under
   fp16); *total_norm receives the norm before clipping. On micro-steps that do
   not sync, gradients are left alone and *total_norm is 0. */
ACCEL_API accel_status accel_accelerator_clip_grad_norm(accel_accelerator* acc, accel_model* model, double max_norm,
                                                        double norm_type, double* total_norm);
/* Bytes this process holds for a prepared model's parameters, gradients and
   (optimizer non-NULL) optimizer state, counted from the tensors' storages,
   each once (a FULL_SHARD unit's freed full storage counts 0). Not
   collective. Borrows everything. Errors: INVALID_ARGUMENT for a NULL acc,
   model or out pointer; the outputs are untouched then. */
ACCEL_API accel_status accel_accelerator_held_bytes(const accel_accelerator* acc, const accel_model* model,
                                                    const accel_optimizer* optimizer, int64_t* parameters,
                                                    int64_t* gradients, int64_t* optimizer_state);
/* Clamps every gradient element of the model to [-clip_value, clip_value] (sync steps only). */
ACCEL_API accel_status accel_accelerator_clip_grad_value(accel_accelerator* acc, accel_model* model, double clip_value);
/* Divides the optimizer's gradients by the fp16 loss scale now (no-op otherwise). */
ACCEL_API accel_status accel_accelerator_unscale_gradients(accel_accelerator* acc, accel_optimizer* optimizer);
/* The current fp16 loss scale (1 when not scaling). */
ACCEL_API accel_status accel_accelerator_loss_scale(const accel_accelerator* acc, double* out);
/* Accelerate's join_uneven_inputs, for loaders prepared with even_batches = 0:
   call _begin before the epoch and _end after each process's loop. A process
   that runs out of batches waits in _end, answering the gradient allreduces of
   the processes still training (which average over those only), until every
   process has reached _end; then the last process to finish sends its
   parameters and buffers to the others. Supports one prepared model; between
   the calls the loop may not use other collectives. Collective (_end).
   Errors: STATE (nested or unmatched calls), UNSUPPORTED (several models). */
ACCEL_API accel_status accel_accelerator_join_uneven_inputs_begin(accel_accelerator* acc);
ACCEL_API accel_status accel_accelerator_join_uneven_inputs_end(accel_accelerator* acc);
/* Code between _begin and _end runs under the accelerator's mixed precision
   (Accelerate's accelerator.autocast()); enabled = 0 turns autocast off inside
   an enclosing scope, 1 on, -1 follows the options' autocast_enabled
   (Accelerate's autocast_handler given at creation); other values are
   INVALID_ARGUMENT. Scopes nest. Autocast is per thread, as in PyTorch: code
   on this thread only. Errors: STATE for _end without _begin, or on another
   thread than its _begin (the scope then stays open). */
ACCEL_API accel_status accel_accelerator_autocast_begin(accel_accelerator* acc, int enabled);
ACCEL_API accel_status accel_accelerator_autocast_end(accel_accelerator* acc);
/* torch.no_grad() for evaluation: between _begin and _end this thread records
   no autograd graph (forward outputs cannot be passed to backward; no memory
   is kept for one). Scopes nest; _end restores the mode _begin found. Grad
   mode is per thread, as in PyTorch: call both on the same thread. Not
   collective. Errors: STATE for _end without _begin, or on another thread
   than its _begin (the scope then stays open). */
ACCEL_API accel_status accel_accelerator_no_grad_begin(accel_accelerator* acc);
ACCEL_API accel_status accel_accelerator_no_grad_end(accel_accelerator* acc);

#ifdef __cplusplus
}
#endif

/* Further parts of the C ABI, one header per area. */
#include "accel/accel_model.h"
#include "accel/accel_data.h"
#include "accel/accel_checkpoint.h"
#include "accel/accel_partial_state.h"
#include "accel/accel_tracking.h"
#include "accel/big_model.h"

#endif /* ACCEL_ACCEL_H */
