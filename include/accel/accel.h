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
 * This header is plain C99.
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

typedef enum accel_dtype {
  ACCEL_FLOAT32 = 1,
  ACCEL_FLOAT64 = 2,
  ACCEL_INT32 = 3,
  ACCEL_INT64 = 4,
  ACCEL_UINT8 = 5,
  ACCEL_INT8 = 6,
  ACCEL_INT16 = 7,
  ACCEL_BOOL = 8,
  ACCEL_FLOAT16 = 9,
  ACCEL_BFLOAT16 = 10
} accel_dtype;

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

/* ------------------------------------------------------------------------- */
/* Datasets and dataloaders                                                   */
/* ------------------------------------------------------------------------- */

/* A dataset of (inputs[i], targets[i]) pairs over two tensors with the same
   size on dim 0. The dataset keeps its own reference to the tensors; the
   handles stay the caller's. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_tensors(const accel_tensor* inputs, const accel_tensor* targets,
                                                  accel_dataset** out);
/* A dataset from an IDX image file and an IDX label file (MNIST layout,
   gzip-compressed or raw). Images become float32 [1, rows, cols] scaled to
   [0, 1], then normalised as (x - mean) / std (mean 0, std 1: no change);
   labels become int64. Errors: IO naming the file and byte offset (bad magic,
   truncated file, image and label counts that differ) or the dimension whose
   size the file cannot hold, checked before the data is allocated. New handle
   in *out. */
ACCEL_API accel_status accel_dataset_from_idx(const char* images_path, const char* labels_path, double mean, double std,
                                              accel_dataset** out);
/* A dataset from a numeric CSV file with a header row: inputs are float32
   [N, columns - 1], targets the column named label_column as label_dtype [N].
   Cells are plain decimal numbers ("1", "-2.5", "3e-4", an optional leading
   "+"); "0x10", "inf", "nan", a cell with trailing bytes and a feature beyond
   float32's range are refused; labels of an integer dtype must be integers
   ("2", not "2.0"). A UTF-8 byte order mark before the header is skipped.
   Errors: IO naming the file, line, column and cell of a bad cell, a row of
   the wrong length, or header names that repeat (line 1); INVALID_ARGUMENT
   when no column has that name. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_csv(const char* path, const char* label_column, accel_dtype label_dtype,
                                              accel_dataset** out);

/* A dataset from a directory of .safetensors shards (e.g. written by
   safetensors.numpy.save_file): every *.safetensors file holds the tensors
   named field_names[0..num_fields-1], aligned on dim 0; the shards are
   concatenated in file-name order and each name becomes one field of a sample
   (accel_dataloader_next returns the first two). Errors: IO naming the
   directory, file and tensor (no shards, a missing tensor, rows that differ
   between fields, a dtype or sample shape that differs from the first shard);
   INVALID_ARGUMENT for NULL or no names. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_safetensors(const char* dir, const char* const* field_names, int num_fields,
                                                      accel_dataset** out);

/* Datasets whose samples come from the caller: how datasets written in Python,
   Java or Go reach the loader. A sample is a fixed list of fields, each of a
   fixed dtype and per-sample shape (e.g. float32 [1, 28, 28] and int64 []). */
typedef struct accel_field_spec {
  accel_dtype dtype;
  int ndim;             /* 0 for a scalar field */
  const int64_t* shape; /* ndim sizes, each > 0; copied */
} accel_field_spec;

/* Lets a callback say why it failed: call it before returning a non-OK status;
   the library's error then carries this message. Thread-local. */
ACCEL_API void accel_set_error(const char* message);

/* Accelerate's find_executable_batch_size: calls fn(user, batch_size) from
   starting_batch_size on. When fn returns ACCEL_ERR_RESOURCE (what libaccel's
   calls return when memory cannot be allocated: a CUDA or host allocation
   failure in forward, backward or an optimizer step), the cached CUDA memory
   is released and fn is called again with (int64_t)(batch_size * 0.9), as
   Accelerate 1.x does (128, 115, 103, 92, ...). *out is the batch size for
   which fn returned ACCEL_OK. Any other status of fn is returned at once with
   fn's message (accel_set_error). Errors: ACCEL_ERR_RESOURCE "No executable
   batch size found, reached zero." when the size reaches 0;
   INVALID_ARGUMENT for a NULL fn or out, or starting_batch_size < 0. Not
   collective by itself: with several processes fn's collectives must fail
   alike on every rank. */
typedef accel_status (*accel_batch_size_fn)(void* user, int64_t batch_size);
ACCEL_API accel_status accel_find_executable_batch_size(int64_t starting_batch_size, accel_batch_size_fn fn, void* user,
                                                        int64_t* out);

/* Callbacks of a map-style dataset. Each gets the user pointer given at
   creation and returns ACCEL_OK or an error status (see accel_set_error). With
   num_workers > 0 they are called from the loader's worker threads, possibly
   concurrently for different samples. */
typedef struct accel_dataset_callbacks {
  uint32_t struct_size;
  /* Number of samples. Required. */
  accel_status (*length)(void* user, int64_t* out);
  /* Writes sample `index` into fields[f] (nbytes[f] bytes each, contiguous,
     row-major, of field f's dtype and shape). Required. */
  accel_status (*get_sample)(void* user, int64_t index, void* const* fields, const size_t* nbytes);
  /* Optional: transforms the sample in place right after get_sample. */
  accel_status (*transform)(void* user, int64_t index, void* const* fields, const size_t* nbytes);
  /* Optional: called once when the library no longer needs user (after the
     dataset and every loader over it are freed); never when the creation
     fails, which leaves user to the caller. */
  void (*release)(void* user);
} accel_dataset_callbacks;

#define ACCEL_DATASET_CALLBACKS_INIT \
  { (uint32_t)sizeof(accel_dataset_callbacks), NULL, NULL, NULL, NULL }
ACCEL_API void accel_dataset_callbacks_init(accel_dataset_callbacks* callbacks);

/* A map-style dataset read through callbacks; the loader writes samples
   straight into its batch tensors. The callbacks struct is copied; user is
   borrowed until release. Errors: INVALID_ARGUMENT (no fields, a bad dtype or
   shape, a missing required callback). A failing callback makes the loader
   call that reads it return the callback's status with a message naming the
   callback and the sample index. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_callbacks(const accel_field_spec* fields, int num_fields,
                                                    const accel_dataset_callbacks* callbacks, void* user,
                                                    accel_dataset** out);

/* Callbacks of an iterable (streaming) dataset, called from one thread at a time. */
typedef struct accel_stream_callbacks {
  uint32_t struct_size;
  /* Writes the next sample into fields and sets *has_sample = 1, or sets
   *has_sample = 0 at the end of the stream. Required. */
  accel_status (*next_sample)(void* user, void* const* fields, const size_t* nbytes, int* has_sample);
  /* Optional: starts a new pass over the stream (each epoch). */
  accel_status (*reset)(void* user, uint64_t epoch);
  void (*release)(void* user); /* optional, as for accel_dataset_callbacks */
} accel_stream_callbacks;

#define ACCEL_STREAM_CALLBACKS_INIT \
  { (uint32_t)sizeof(accel_stream_callbacks), NULL, NULL, NULL }
ACCEL_API void accel_stream_callbacks_init(accel_stream_callbacks* callbacks);

/* An iterable dataset read through callbacks. Prepared loaders shard it as
   Accelerate's IterableDatasetShard does: every process reads the whole stream
   and keeps its slice of each run of batch_size * num_processes samples; the
   last short run is completed from the first unless drop_last. Shuffling is
   the stream's own business (reset gets the epoch). New handle in *out. */
ACCEL_API accel_status accel_dataset_from_stream(const accel_field_spec* fields, int num_fields,
                                                 const accel_stream_callbacks* callbacks, void* user,
                                                 accel_dataset** out);

/* Variable-length token sequences (language-model data): N sequences of
   int64 ids, optionally with labels, read once and validated at load. A
   dataset over them collates each batch on its own: padded to the batch's
   longest sequence (accel_dataset_from_sequences) or by the caller's collate
   function (accel_dataset_from_sequences_collate); its fields have names
   (accel_dataloader_field_names). Read-only after creation: may be shared
   between threads and datasets. */

/* Sequences from flat arrays: sequence i is ids[offsets[i] .. offsets[i+1]),
   num_offsets = N + 1 (offsets[0] = 0, never decreasing, offsets[N] =
   num_ids). labels (NULL: none) holds N per-sequence labels or num_ids
   per-token labels. Ids must be >= 0 and, when vocab_size > 0, below it. The
   arrays are copied. Errors: INVALID_ARGUMENT naming the bad offset, the
   sequence, position and value of a bad id, or a labels count that is neither.
   New handle in *out (free with accel_sequences_free). */
ACCEL_API accel_status accel_sequences_from_arrays(const int64_t* ids, size_t num_ids, const int64_t* offsets,
                                                   size_t num_offsets, const int64_t* labels, size_t num_labels,
                                                   int64_t vocab_size, accel_sequences** out);
/* Sequences from a JSONL file: each non-blank line is a JSON object whose
   ids_key holds an array of integer ids ({"input_ids": [1, 2, 3]}), or with
   ids_key NULL or "" a bare array. labels_key (NULL or "": none) names an
   integer (one label per sequence) or an array as long as the ids (per-token
   labels), the same kind on every line. Errors: IO naming the file, the line
   and the value: invalid JSON, a missing key, a float or non-integer id, a
   negative id, an id >= vocab_size (when vocab_size > 0), labels of the wrong
   length or kind, no sequence at all; INVALID_ARGUMENT for a NULL path or a
   negative vocab_size. New handle in *out. */
ACCEL_API accel_status accel_sequences_from_jsonl(const char* path, const char* ids_key, const char* labels_key,
                                                  int64_t vocab_size, accel_sequences** out);

/* How accel_sequences_from_text cuts a file's bytes into samples. */
typedef enum accel_text_split {
  ACCEL_TEXT_LINES = 0,      /* one sample per line ("\r\n" or "\n"); empty lines skipped */
  ACCEL_TEXT_PARAGRAPHS = 1, /* samples separated by empty lines; inner newlines kept */
  ACCEL_TEXT_SEPARATOR = 2,  /* samples separated by lines holding only separator
                                (the fortune databases' "%"); inner newlines kept */
  ACCEL_TEXT_CHUNKS = 3      /* windows of chunk_length bytes starting every stride
                                bytes (0: chunk_length, no overlap); the last is
                                shorter when the file ends inside it */
} accel_text_split;
/* Sequences from a text file read as bytes: every byte is an id in [0, 256)
   (a byte-level language model), cut into samples by rule. separator is
   used only by ACCEL_TEXT_SEPARATOR (NULL: "%"), chunk_length and stride only
   by ACCEL_TEXT_CHUNKS. No labels: a causal LM's labels are its ids.
   Errors: IO when the file cannot be read or yields no sample;
   INVALID_ARGUMENT for an unknown rule, a chunk_length < 1 with
   ACCEL_TEXT_CHUNKS, a negative stride, an empty separator. New handle in *out. */
ACCEL_API accel_status accel_sequences_from_text(const char* path, accel_text_split rule, const char* separator,
                                                 int64_t chunk_length, int64_t stride, accel_sequences** out);
/* Sequences from a text file split on whitespace into tokens, each mapped to
   its id in the vocabulary at vocab_path: a JSON object token -> id (a file
   starting with '{', as Hugging Face's vocab.json) or one token per line, the
   token on line k (from 1) having id k - 1 (as BERT's vocab.txt). A token not
   in the vocabulary becomes the id of "<unk>". rule, separator, chunk_length
   and stride as accel_sequences_from_text, except that ACCEL_TEXT_CHUNKS
   counts tokens, not bytes; samples without a token are skipped. No labels.
   Not collective. Errors: IO naming the file, the line and the token: an
   unknown token when the vocabulary has no "<unk>", an empty, duplicate or
   whitespace-holding vocabulary token, a JSON id that is not an integer >= 0,
   an unreadable file, no sample; INVALID_ARGUMENT for a NULL path or
   vocab_path and as accel_sequences_from_text. New handle in *out (free with
   accel_sequences_free); *out is untouched on error. */
ACCEL_API accel_status accel_sequences_from_text_vocab(const char* path, const char* vocab_path, accel_text_split rule,
                                                       const char* separator, int64_t chunk_length, int64_t stride,
                                                       accel_sequences** out);
/* Sequences from one safetensors file holding a flat integer ids tensor and
   its offsets tensor (N + 1 entries, as for accel_sequences_from_arrays), and
   optionally labels (labels_name NULL or "": none); integer dtypes are
   widened to int64. ids_name NULL: "input_ids"; offsets_name NULL: "offsets".
   Errors: IO naming the file and the tensor (missing, not an integer dtype,
   not 1-D) or the bad offset or id. New handle in *out. */
ACCEL_API accel_status accel_sequences_from_safetensors(const char* path, const char* ids_name,
                                                        const char* offsets_name, const char* labels_name,
                                                        int64_t vocab_size, accel_sequences** out);
/* Number of sequences. */
ACCEL_API accel_status accel_sequences_count(const accel_sequences* sequences, int64_t* out);
/* Length (tokens) of sequence index. Errors: INVALID_ARGUMENT for an index
   outside [0, count). */
ACCEL_API accel_status accel_sequences_length(const accel_sequences* sequences, int64_t index, int64_t* out);
/* Sequence index as new handles: *ids int64 [length]; *labels its labels
   (int64 [] per sequence or [length] per token), or NULL when the sequences
   have none (labels may be NULL then). The caller frees both. Errors:
   INVALID_ARGUMENT for an index outside [0, count), or labels NULL when there
   are labels. */
ACCEL_API accel_status accel_sequences_get(const accel_sequences* sequences, int64_t index, accel_tensor** ids,
                                           accel_tensor** labels);
ACCEL_API void accel_sequences_free(accel_sequences* sequences);

/* Dynamic padding (Hugging Face's DataCollatorWithPadding and
   DataCollatorForLanguageModeling(mlm=False)); pads on the right. */
typedef struct accel_padding_options {
  uint32_t struct_size;
  int64_t pad_id;             /* default 0 */
  int64_t pad_to_multiple_of; /* > 0: the padded length is rounded up to a multiple; default 0 */
  /* > 0: the longest a sequence may be; a longer one is cut to it when
     truncate is set, else the loader call that reads it returns
     INVALID_ARGUMENT naming the sample and its length. Default 0 (no limit). */
  int64_t max_length;
  int truncate; /* default 0 */
  /* Without labels in the data: 1 (default) adds labels = input_ids with the
     padding set to -100 (a causal LM's labels; the model shifts them); 0 adds
     no labels field. */
  int causal_lm_labels;
} accel_padding_options;

#define ACCEL_PADDING_OPTIONS_INIT \
  { (uint32_t)sizeof(accel_padding_options), 0, 0, 0, 0, 1 }
ACCEL_API void accel_padding_options_init(accel_padding_options* opts);

/* A map-style dataset over sequences (kept alive by the dataset) whose
   batches are padded to their longest sequence: fields "input_ids" [B, L]
   int64 (padded with pad_id), "attention_mask" [B, L] int64 (1 on real
   tokens) and "labels": per-token labels [B, L] padded with -100, per-sequence
   labels [B], or the causal LM labels (see causal_lm_labels). opts may be
   NULL. Errors: INVALID_ARGUMENT for a negative pad_id, pad_to_multiple_of or
   max_length. New handle in *out. */
ACCEL_API accel_status accel_dataset_from_sequences(const accel_sequences* sequences, const accel_padding_options* opts,
                                                    accel_dataset** out);

/* A collate function: turns the num_samples sequences of one batch into one
   new tensor per field name, written to fields[0..num_fields-1] (all NULL on
   entry); the library takes every handle written there, also on failure.
   input_ids[s] is sample s's ids, int64 [length]; labels is NULL without
   labels, else labels[s] is int64 [] (per sequence) or [length] (per token).
   Both are borrowed for the call. Every field must have num_samples rows on
   dim 0. Return ACCEL_OK, or an error status after accel_set_error. Called
   from the loader's worker threads when num_workers > 0, possibly
   concurrently. */
typedef accel_status (*accel_collate_fn)(void* user, const accel_tensor* const* input_ids,
                                         const accel_tensor* const* labels, size_t num_samples, accel_tensor** fields,
                                         size_t num_fields);
/* A map-style dataset over sequences whose batches collate makes, with the
   field names field_names[0..num_fields-1] (copied). release (optional) is
   called once when the library no longer needs user (the dataset and every
   loader over it freed); never when creation fails. Errors:
   INVALID_ARGUMENT for NULL, empty or repeated names, or a NULL collate. A
   loader call that collates returns INVALID_ARGUMENT when a field comes back
   NULL or without num_samples rows (naming the field, the expected and the
   actual shape), or the callback's status with its message. New handle in
   *out. */
ACCEL_API accel_status accel_dataset_from_sequences_collate(const accel_sequences* sequences,
                                                            const char* const* field_names, int num_fields,
                                                            accel_collate_fn collate, void* user,
                                                            void (*release)(void* user), accel_dataset** out);

/* Number of samples. Errors: STATE for an iterable dataset (unknown length). */
ACCEL_API accel_status accel_dataset_size(const accel_dataset* dataset, int64_t* out);
/* *out = 1 for an iterable (streaming) dataset, 0 for a map-style one. */
ACCEL_API accel_status accel_dataset_is_iterable(const accel_dataset* dataset, int* out);
ACCEL_API void accel_dataset_free(accel_dataset* dataset);

typedef struct accel_dataloader_options {
  uint32_t struct_size;
  int64_t batch_size; /* default 1 */
  int shuffle;        /* default 0 */
  /* The loader's own generator (PyTorch's DataLoader(generator=...)): epoch e
     is shuffled with seed + e, identically on every process. 0 (default): no
     generator of its own; each epoch draws its seed from the global generator
     seeded by accel_accelerator_set_seed (PyTorch's RandomSampler), see
     use_seedable_sampler in accel_accelerator_options. */
  uint64_t seed;
  int drop_last; /* default 0 */
  /* Background threads reading batches ahead (0: read on the calling thread);
     the order of batches never depends on it. 0 to 256 (more is
     INVALID_ARGUMENT at create). They start with each epoch's first
     accel_dataloader_next: when the system refuses a thread (a process or
     thread limit, no memory for its stack) that call returns
     ACCEL_ERR_RESOURCE naming it, with no worker left running and nothing
     consumed, and the next call tries again. Default 0. */
  int num_workers;
  int prefetch_factor; /* batches read ahead per worker; default 2 */
} accel_dataloader_options;

#define ACCEL_DATALOADER_OPTIONS_INIT \
  { (uint32_t)sizeof(accel_dataloader_options), 1, 0, 0, 0, 0, 2 }
ACCEL_API void accel_dataloader_options_init(accel_dataloader_options* opts);

/* A dataloader over dataset (which it keeps alive). Before prepare it yields
   every batch on the CPU; after accel_accelerator_prepare_dataloader it yields
   this process's shard on the accelerator's device. opts may be NULL.
   New handle in *out. */
ACCEL_API accel_status accel_dataloader_create(accel_dataset* dataset, const accel_dataloader_options* opts,
                                               accel_dataloader** out);
/* A dataloader over a user's batch sampler (e.g. length-bucketed batches of
   varying sizes): batch b holds the batch_lengths[b] dataset indices that
   follow the previous batches' in indices; every epoch yields these batches in
   this order until accel_dataloader_set_batches replaces them. Prepared with several processes they are sharded as
   Accelerate's BatchSamplerShard does. opts->batch_size is the sampler's
   nominal batch size (Accelerate reads batch_sampler.batch_size): full batches
   have it, and 0 says sizes vary (then prepare refuses split_batches and
   even_batches with INVALID_ARGUMENT; set even_batches = 0). opts->drop_last is
   the sampler's: a short last round is dropped rather than completed.
   opts->shuffle must be 0. Both arrays are copied; the dataset is kept alive.
   Errors: INVALID_ARGUMENT (NULL arrays with num_batches > 0, a negative
   num_batches, a length < 1, an index outside [0, dataset size), shuffle set,
   a negative batch_size), STATE for an iterable dataset. New handle in *out. */
ACCEL_API accel_status accel_dataloader_create_from_batches(accel_dataset* dataset, const int64_t* indices,
                                                            const int64_t* batch_lengths, int64_t num_batches,
                                                            const accel_dataloader_options* opts,
                                                            accel_dataloader** out);
/* A loader over a sequence dataset whose batches group sequences of similar
   length (transformers' LengthGroupedSampler with the loader's batching): a
   permutation seeded with opts->seed (0 included: here it is a seed like any
   other, not "no generator") is cut into megabatches of min(N / (4 *
   batch_size), 50) batches, each sorted by decreasing length, the longest
   sequence moved into the first batch, then cut into batches of
   opts->batch_size (the last shorter unless opts->drop_last). Each epoch draws
   a new permutation, as the sampler's generator does when a transformers
   Trainer iterates it again: epoch e's is the (e+1)-th draw of a generator
   seeded with opts->seed (so a resumed epoch gets its batches back). The
   batches are the same on every process; prepared, they are sharded as Accelerate's BatchSamplerShard does, with
   batch_size as the sampler's. Errors: INVALID_ARGUMENT for a dataset that is
   not a sequence dataset, opts->shuffle set, a batch_size < 1. New handle in *out. */
ACCEL_API accel_status accel_dataloader_create_length_grouped(accel_dataset* dataset,
                                                              const accel_dataloader_options* opts,
                                                              accel_dataloader** out);
ACCEL_API void accel_dataloader_free(accel_dataloader* loader);
/* The next batch of this epoch as two new handles (the caller frees both). At
   the end of the epoch it returns ACCEL_OK with *inputs and *targets set to
   NULL; the call after that starts the next epoch (reshuffled: see seed in
   accel_dataloader_options). Collective where the loader dispatches, and at
   an epoch's first call for a shuffled loader without a seed prepared with
   several processes (the main process's draw is broadcast).
   Errors: INVALID_ARGUMENT when the dataset's samples are not (input, target)
   pairs (nothing is consumed: use accel_dataloader_next_fields); RESOURCE
   when a worker thread cannot start (see num_workers). */
ACCEL_API accel_status accel_dataloader_next(accel_dataloader* loader, accel_tensor** inputs, accel_tensor** targets);
/* The next batch as one new tensor handle per field, written to
   fields[0..*count-1] (capacity: the array's length); *count = 0 at the end of
   the epoch. The caller frees every handle. Errors: INVALID_ARGUMENT when the
   dataset has more fields than capacity (nothing is consumed then). */
ACCEL_API accel_status accel_dataloader_next_fields(accel_dataloader* loader, accel_tensor** fields, int capacity,
                                                    int* count);
/* The names of the fields accel_dataloader_next_fields returns, in order
   (input_ids, attention_mask, labels ...), written to names[0..*count-1];
   *count = 0 when the dataset's fields have no names (tensors, IDX, CSV,
   callbacks). The strings are owned by the loader and live as long as it.
   Errors: INVALID_ARGUMENT when there are more names than capacity. */
ACCEL_API accel_status accel_dataloader_field_names(const accel_dataloader* loader, const char** names, int capacity,
                                                    int* count);
/* Accelerate's len(loader). Unprepared: the batches of an epoch. Prepared
   with several processes: the length Accelerate's BatchSamplerShard reports
   (with split_batches, the unsplit count on every process; otherwise
   batches / num_processes, plus one when they do not divide unless drop_last,
   and with even_batches = 0 plus one only on the first batches %
   num_processes processes), or with dispatch_batches its dispatcher's (the
   global batches). With split_batches and even_batches = 0 a process that
   gets no slice of the short last batch yields one batch fewer than this, as
   in Accelerate. A loader from accel_dataloader_skip_first_batches reports
   num_batches fewer (at least 0) until its first pass ends. Errors: STATE for
   an iterable dataset (a stream has no length). */
ACCEL_API accel_status accel_dataloader_num_batches(const accel_dataloader* loader, int64_t* out);
/* A new loader (same dataset, options, preparation and epoch) whose next pass
   starts after the first num_batches batches of that epoch, without reading
   them for a map-style dataset; later passes are whole. Use it to resume
   mid-epoch (Accelerate's skip_first_batches). Its length is the original's
   minus num_batches, never negative. Errors: INVALID_ARGUMENT for a negative
   num_batches. New handle in *out. */
ACCEL_API accel_status accel_dataloader_skip_first_batches(const accel_dataloader* loader, int64_t num_batches,
                                                           accel_dataloader** out);
/* Sets the epoch of the next pass (a seeded shuffle uses seed + epoch) and restarts it. */
ACCEL_API accel_status accel_dataloader_set_epoch(accel_dataloader* loader, uint64_t epoch);
/* The epoch being iterated, or the next one to be between epochs (0 at
   first, set by accel_dataloader_set_epoch and by a resume from
   accel_accelerator_load_state). Errors: INVALID_ARGUMENT for a NULL argument. */
ACCEL_API accel_status accel_dataloader_epoch(const accel_dataloader* loader, uint64_t* out);
/* Gives a loader over a batch sampler (accel_dataloader_create_from_batches,
   accel_dataloader_create_length_grouped) new batches, laid out as at
   creation, from the next epoch on: call it between epochs, before an epoch's
   first batch (a resumed epoch's too, with that epoch's batches), to feed a
   sampler that draws new batches each epoch, as PyTorch's DataLoader
   iterates its batch_sampler anew (see accel_dataloader_epoch). A
   length-grouped loader stops regrouping. Every process must set the same
   batches. Not collective. The arrays are copied. Errors: INVALID_ARGUMENT as
   at creation (nothing changes); STATE while an epoch is in progress or for a
   loader made without a batch sampler. */
ACCEL_API accel_status accel_dataloader_set_batches(accel_dataloader* loader, const int64_t* indices,
                                                    const int64_t* batch_lengths, int64_t num_batches);
/* A progress bar per epoch, on stderr of the process with RANK 0 only (what
   Accelerate users get from tqdm(loader, disable=not
   accelerator.is_local_main_process)): on a terminal it is redrawn in place
   with \r after every batch, elsewhere (a pipe, a file) it prints a plain line
   at every 10%. Its total is accel_dataloader_num_batches, so a loader over an
   iterable dataset shows none. description labels it ("" for "epoch N");
   NULL turns it off (the default). ACCEL_DISABLE_PROGRESS_BAR set to anything
   but "" or "0" silences it too. Not collective. Errors: INVALID_ARGUMENT for
   a NULL loader. The string is copied. */
ACCEL_API accel_status accel_dataloader_set_progress(accel_dataloader* loader, const char* description);

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
/* *out = 1 on a step whose gradients are synchronised, else 0. */
/* Whether the batch a prepared loader just yielded was its epoch's last
   (Accelerate's gradient_state.end_of_dataloader). */
ACCEL_API accel_status accel_accelerator_end_of_dataloader(const accel_accelerator* acc, int* out);
/* Accelerate's gradient_state.remainder: from the start of each epoch of a
   prepared map-style loader (after its first next), the dataset's length
   modulo the total batch size (batch_size, times num_processes without
   split_batches), in one process too; with dispatch_batches or a stream,
   at the last batch, the real samples of that last round. -1 with
   drop_last, outside an epoch, for a batch sampler without a batch size and
   while a stream's length is unknown. gather_for_metrics keeps that many rows
   of the last batch's gather when it is positive. */
ACCEL_API accel_status accel_accelerator_remainder(const accel_accelerator* acc, int64_t* out);
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
#include "accel/accel_checkpoint.h"
#include "accel/accel_partial_state.h"
#include "accel/accel_tracking.h"
#include "accel/big_model.h"

#endif /* ACCEL_ACCEL_H */
