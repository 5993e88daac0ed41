// libaccel C++ API: the vocabulary of the Accelerator's configuration, on its
// own so that code needing one enum or option struct does not pull the whole
// Accelerator (the pattern of c10d's Types.hpp). accel/accelerator.hpp includes
// it; the C ABI's counterparts are in accel/types.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel {

enum class DistributedType { No = 0, MultiCpu = 1, MultiGpu = 2 };
enum class MixedPrecision { No = 0, Bf16 = 1, Fp16 = 2, Fp8 = 3 };
// None: Accelerate's reduction="none", the scaled sum without averaging.
enum class ReduceOp { Sum = 0, Mean = 1, None = 2 };
// Gradient compression for the allreduce (DDP's fp16/bf16 compress hooks):
// buckets travel as 16-bit floats, halving the bytes, at the cost of precision.
enum class CommHook { None = 0, Fp16 = 1, Bf16 = 2 };
// Sharded data parallel (docs/sharding.md). NoShard: every rank holds the full
// parameters, gradients and optimizer state. ShardOptimizer (DeepSpeed ZeRO-1):
// each rank keeps and updates the optimizer state of its slice of the flat
// parameters, then the slices are all-gathered. ShardGradOp (FSDP's
// SHARD_GRAD_OP, ZeRO-2): the gradients are sharded too. FullShard (FSDP's
// FULL_SHARD, ZeRO-3): the parameters too, per wrap unit, gathered for each
// unit's forward and backward. HybridShard (FSDP's HYBRID_SHARD): FullShard
// within each node, replicated across nodes (gradient chunks summed across them).
enum class ShardingStrategy { NoShard = 0, ShardOptimizer = 1, ShardGradOp = 2, FullShard = 3, HybridShard = 4 };
// Accepts our names (NO_SHARD, SHARD_OPTIMIZER, SHARD_GRAD_OP, FULL_SHARD,
// HYBRID_SHARD) and FSDP's numbers 1-4 as Accelerate writes them in
// FSDP_SHARDING_STRATEGY (1 FULL_SHARD, 2 SHARD_GRAD_OP, 3 NO_SHARD,
// 4 HYBRID_SHARD); throws Unsupported naming HYBRID_SHARD_ZERO2 (5) and
// InvalidArgument naming any other value.
ShardingStrategy parse_sharding_strategy(const std::string& text);
const char* to_string(ShardingStrategy strategy);

// Parses "no", "bf16", "fp16", "fp8" (Accelerate's spellings); throws InvalidArgument naming the value.
MixedPrecision parse_mixed_precision(const std::string& text);
const char* to_string(MixedPrecision precision);
const char* to_string(DistributedType type);

// Accelerate's DataLoaderConfiguration: how prepare(dataloader) shards.
struct DataLoaderConfiguration {
  bool split_batches = false;  // cut each batch into num_processes slices
  bool even_batches = true;    // complete the last round from the start of the data
  // The main process reads each batch and scatters slices. Unset: true for
  // iterable datasets with device_placement, false otherwise (Accelerate's
  // default when dispatch_batches is None).
  std::optional<bool> dispatch_batches;
  // Shuffle with (data_seed, else the global generator's initial seed) + epoch
  // (Accelerate's SeedableRandomSampler), whatever the loader's own seed.
  // Off: a loader without a seed draws each epoch's seed from the global
  // generator, so set_seed decides the order.
  bool use_seedable_sampler = false;
  std::optional<uint64_t> data_seed;
  // Reported as given (Accelerate's properties). Batches already travel to a
  // CUDA device from pinned memory without blocking, whatever non_blocking
  // says, and prepared loaders' positions are always part of save_state, as
  // use_stateful_dataloader asks of Accelerate.
  bool non_blocking = false;
  bool use_stateful_dataloader = false;
};

// Accelerate's ProjectConfiguration: where checkpoints and logs go.
struct ProjectConfiguration {
  std::string project_dir;                   // empty: the current directory
  std::string logging_dir;                   // empty: project_dir/logs
  bool automatic_checkpoint_naming = false;  // save_state() → project_dir/checkpoints/checkpoint_{iteration}
  int64_t total_limit = 0;                   // automatic checkpoints kept, oldest removed first; 0: all
  int64_t iteration = 0;                     // number of the next automatic checkpoint (saved in checkpoints)
  bool save_on_each_node = false;
};

// Sizes of a device mesh's dimensions (Accelerate's names; each at least 1).
struct ParallelismConfig {
  int64_t dp_replicate_size = 1;  // data parallel, replicated (DDP; HSDP's replicas)
  int64_t dp_shard_size = 1;      // data parallel, sharded by the sharding strategy
  int64_t tp_size = 1;            // tensor parallel: layers split over these ranks
  int64_t cp_size = 1;            // context parallel: the sequence cut over these ranks
};

// This process's coordinate along each dimension of that mesh (Accelerate's
// data_parallel_rank, data_parallel_shard_rank, tensor_parallel_rank and
// context_parallel_rank; each from 0 to its size - 1).
struct ParallelismRanks {
  int64_t dp_replicate_rank = 0;
  int64_t dp_shard_rank = 0;
  int64_t tp_rank = 0;
  int64_t cp_rank = 0;
};

struct AcceleratorOptions {
  bool cpu = false;  // use the CPU even where a GPU is present
  // Collectives wait at most this long. When a rank does not arrive, the
  // constructor's rendezvous fails within it (plus at most about a second) with
  // ErrorCode::Timeout listing the ranks that did not arrive.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // Unset: ACCELERATE_MIXED_PRECISION from the environment, else MixedPrecision::No.
  std::optional<MixedPrecision> mixed_precision;
  // Gradient sync (Accelerate's DistributedDataParallelKwargs).
  double bucket_cap_mb = 25.0;          // bucket size cap
  double first_bucket_cap_mb = 1.0;     // the first bucket, small so communication starts early
  bool gradient_as_bucket_view = true;  // .grad tensors alias the buckets: no copy in or out (DDP defaults to false)
  bool static_graph = false;            // accepted: buckets are always fixed at prepare (see docs)
  bool find_unused_parameters = false;  // false: a parameter without gradient in a synced backward is an error
  // DDP's broadcast_buffers: every training-mode forward (grad enabled) of a
  // prepared model first copies process 0's buffers (BatchNorm running
  // statistics) into every replica. Collective then. false: buffers stay local.
  bool broadcast_buffers = true;
  CommHook comm_hook = CommHook::None;
  // ACCELERATE_GRADIENT_ACCUMULATION_STEPS (set by `accel launch
  // --gradient_accumulation_steps`) wins over this value, as in Accelerate;
  // neither set: 1.
  std::optional<int64_t> gradient_accumulation_steps;
  // Accelerate's GradientAccumulationPlugin options:
  // the last batch of a prepared dataloader always ends an accumulation window;
  bool sync_with_dataloader = true;
  // gradients are averaged across processes on every micro-step, not only at
  // the window's end (less memory, more communication); the optimizer still
  // steps once per window;
  bool sync_each_batch = false;
  // a prepared scheduler's calls on micro-steps count towards OneCycle's
  // total_steps cap. Off by default: Accelerate 0.22 drops the plugin's
  // default (True) before reading it, so it is effectively off there too.
  bool adjust_scheduler = false;
  // Accelerate's step_scheduler_with_optimizer: a prepared scheduler steps
  // only after a real optimizer step, num_processes times without
  // split_batches. false: every call steps it once, as an unprepared
  // scheduler does (for a schedule already written in calls, not steps).
  bool step_scheduler_with_optimizer = true;
  // fp16 loss scaling (Accelerate's GradScalerKwargs). Checked under every precision
  // (InvalidArgument naming the option): init_scale finite and > 0, growth_factor
  // finite and > 1, backoff_factor in (0, 1), growth_interval > 0.
  double scaler_init_scale = 65536.0;
  double scaler_growth_factor = 2.0;
  double scaler_backoff_factor = 0.5;
  int64_t scaler_growth_interval = 2000;
  // GradScalerKwargs' enabled: false runs fp16 without loss scaling (no step is
  // skipped, gradients are not unscaled).
  bool scaler_enabled = true;
  // AutocastKwargs: enabled=false runs a prepared model's forward, and
  // autocast scopes opened without saying otherwise, in float32 even under a
  // mixed precision; cache_enabled is LibTorch's autocast weight-cast cache
  // (unset: LibTorch's default, on).
  bool autocast_enabled = true;
  std::optional<bool> autocast_cache_enabled;
  // InitProcessGroupKwargs. backend: empty (the device's: Gloo on the CPU,
  // NCCL on CUDA), "gloo" (CPU only here) or "nccl" (CUDA only); another
  // backend Accelerate names ("mpi", "ccl", "xccl", "hccl", ...) is
  // Unsupported, anything else InvalidArgument. init_method: empty or
  // "env://" (MASTER_ADDR and MASTER_PORT), or "tcp://HOST:PORT" (the store
  // there); "file://" is Unsupported.
  std::string backend;
  std::string init_method;
  // Accelerate's rng_types: the generators every process takes from process 0
  // at the start of each epoch of a prepared dataloader (synchronize_rng_states):
  // "torch" (LibTorch's CPU generator), "cuda" (this process's CUDA generator;
  // nothing on a CPU run), "generator" (a shuffle without a seed of its own
  // takes process 0's draw). Unset: {"generator"}, Accelerate's default.
  std::optional<std::vector<std::string>> rng_types;
  DataLoaderConfiguration dataloader;
  bool device_placement = true;  // prepared loaders move batches to device()
  ProjectConfiguration project;
  std::vector<std::string> log_with;  // tracker names; {"all"} picks every built-in one
  // Unset: from the environment `accel launch` writes (ACCELERATE_USE_FSDP with
  // FSDP_SHARDING_STRATEGY, or ACCELERATE_USE_DEEPSPEED with
  // ACCELERATE_DEEPSPEED_ZERO_STAGE 0-3), else NoShard. FullShard and
  // HybridShard cut the model into wrap units: a JSON spec's layers, a
  // TorchScript model whole or by submodule class
  // (fsdp_transformer_layer_cls_to_wrap), a C++ module whole. HybridShard
  // needs the same number of processes on every node (InvalidArgument otherwise).
  std::optional<ShardingStrategy> sharding_strategy;
  // FULL_SHARD's wrap units. Unset: from FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP
  // with FSDP_MIN_NUM_PARAMS (as `accel launch` writes them), else 0. 0: one
  // unit per top-level layer with parameters; n > 0: Accelerate's
  // size_based_auto_wrap_policy, consecutive layers grouped until they hold n
  // parameters. Negative: InvalidArgument.
  std::optional<int64_t> fsdp_min_num_params;
  // FSDP's transformer_auto_wrap_policy (Accelerate's
  // fsdp_transformer_layer_cls_to_wrap): every submodule of a TorchScript
  // model whose class name (GPT2Block) or dotted name (transformer.h.0) is
  // listed becomes a wrap unit, and the rest of the model one root unit; in a
  // JSON spec, every layer whose "type" (TransformerEncoderLayer) or name (a
  // graph node's, a chain layer's index) is listed, and the layers between
  // two of them a unit each. Unset: FSDP_TRANSFORMER_CLS_TO_WRAP
  // (comma-separated) when ACCELERATE_USE_FSDP=true and
  // FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP, else none. An empty name is
  // InvalidArgument; prepare(model) throws InvalidArgument naming a name that
  // matches no submodule or layer, and Unsupported for a C++ module (wrapped whole).
  std::optional<std::vector<std::string>> fsdp_transformer_layer_cls_to_wrap;
  // FSDP's backward_prefetch: while a FULL_SHARD unit runs its backward, the
  // all-gather of the unit whose backward comes next is in flight (one more
  // unit whole in memory). Unset: on, unless ACCELERATE_USE_FSDP=true with
  // FSDP_BACKWARD_PREFETCH=NO_PREFETCH (BACKWARD_PRE and BACKWARD_POST: on).
  std::optional<bool> fsdp_backward_prefetch;
  // FSDP's forward_prefetch: the same during the forward, for the next unit.
  // Unset: FSDP_FORWARD_PREFETCH under ACCELERATE_USE_FSDP=true, else off.
  std::optional<bool> fsdp_forward_prefetch;
  // FSDP's state_dict_type for save_state under a sharding strategy:
  // "SHARDED_STATE_DICT" writes PyTorch distributed checkpoints (Accelerate's
  // pytorch_model_fsdp_0/, optimizer_0/), "FULL_STATE_DICT" libaccel's own
  // per-process files. Unset: FSDP_STATE_DICT_TYPE, else FULL_STATE_DICT.
  std::optional<std::string> fsdp_state_dict_type;
  // FSDP's activation checkpointing of FULL_SHARD's wrap units: a unit's
  // forward keeps only its input, its backward runs the unit again (same
  // random draws) to rebuild the graph. Unset: FSDP_ACTIVATION_CHECKPOINTING
  // when ACCELERATE_USE_FSDP=true (as `accel launch` writes them), else off.
  // On with a strategy other than FullShard throws Unsupported.
  std::optional<bool> fsdp_activation_checkpointing;
  // CPU offload (Accelerate's fsdp_offload_params, DeepSpeed's
  // offload_optimizer / offload_param device "cpu"): a sharded model's fp32
  // master chunk, its gradient chunk and the optimizer state live in host
  // memory, and the optimizer steps there, while forward and backward run on
  // the accelerator's device. Under FULL_SHARD the device then holds only the
  // units in use; under SHARD_OPTIMIZER and SHARD_GRAD_OP it still holds the
  // full parameters. Costs a device-to-host copy of each gradient chunk and a
  // host-to-device copy of each parameter chunk per step. With one process,
  // offload is the reason to shard at all: the strategy is then applied with
  // a world of one (without offload one process runs replicated). Unset:
  // FSDP_OFFLOAD_PARAMS under ACCELERATE_USE_FSDP=true, or
  // ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE / _PARAM_DEVICE "cpu" under
  // ACCELERATE_USE_DEEPSPEED=true (as `accel launch` writes them), else off.
  // On with NoShard throws Unsupported (there is no shard to move).
  std::optional<bool> cpu_offload;
  // Accelerate's ParallelismConfig (docs/parallelism.md): the world factored
  // into dp_replicate x dp_shard x cp x tp, tp innermost. Unset: from
  // ACCELERATE_USE_PARALLELISM_CONFIG=true with PARALLELISM_CONFIG_*_SIZE (as
  // `accel launch --parallelism_config_*` writes them), else none (plain data
  // parallelism). The Accelerator throws InvalidArgument when the sizes do not
  // multiply to the number of processes, or do not fit the sharding strategy
  // (dp_shard_size > 1 needs one, a strategy needs dp_shard_size x cp_size >
  // 1); prepare splits a model's transformer layers over tp and cuts a JSON
  // graph model's sequence over cp (Unsupported for a model it cannot split
  // or cut). The dataloader deals batches over dp_replicate x dp_shard; the
  // ranks of one tp or cp group see the same batch.
  std::optional<ParallelismConfig> parallelism_config;
};

}  // namespace accel
