#include "accel/accelerator.hpp"
#include "core/trace_span.hpp"

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>

#include "accel/data.hpp"
#include "accel/model.hpp"
#include "accel/optimizer.hpp"
#include "accel/partial_state.hpp"
#include "accel/scheduler.hpp"
#include "model/model_impl.hpp"
#include "precision/autocast.hpp"
#include "precision/cpu_bf16.hpp"
#include "tracking/warn.hpp"
#include "accelerator/accelerator_state.hpp"
#include "accelerator/checkpoint_files.hpp"
#include "accelerator/parallelism.hpp"
#include "state/collectives.hpp"
#include "state/host_allocator.hpp"
#include "state/large_block_cache.hpp"
#include "state/out_of_memory.hpp"
#include "state/process_device.hpp"
#include "state/shared_world_group.hpp"
#include "accelerator/resolved_options.hpp"
#include "sharding/strategy.hpp"

namespace accel {

MixedPrecision parse_mixed_precision(const std::string& text) {
  if (text == "no") return MixedPrecision::No;
  if (text == "bf16") return MixedPrecision::Bf16;
  if (text == "fp16") return MixedPrecision::Fp16;
  if (text == "fp8") return MixedPrecision::Fp8;
  fail(ErrorCode::InvalidArgument, "mixed precision \"" + text + "\" is not one of no, bf16, fp16, fp8");
}

const char* to_string(MixedPrecision precision) {
  switch (precision) {
    case MixedPrecision::No: return "no";
    case MixedPrecision::Bf16: return "bf16";
    case MixedPrecision::Fp16: return "fp16";
    case MixedPrecision::Fp8: return "fp8";
  }
  return "unknown";
}

const char* to_string(DistributedType type) {
  switch (type) {
    case DistributedType::No: return "NO";
    case DistributedType::MultiCpu: return "MULTI_CPU";
    case DistributedType::MultiGpu: return "MULTI_GPU";
  }
  return "unknown";
}

namespace detail {

namespace {

// HYBRID_SHARD's two groups, as FSDP makes them: the ranks of each node
// (torchrun numbers a node's LOCAL_WORLD_SIZE ranks consecutively) and each
// local rank across the nodes. Every process creates the two it belongs to.
// With one node there is nothing to replicate: the whole group shards.
void create_hybrid_groups(AcceleratorState& state) {
  const int world = state.env.world_size, per_node = state.env.local_world_size, rank = state.env.rank;
  require_arg(per_node >= 1 && world % per_node == 0 && state.env.local_rank == rank % per_node,
              "sharding_strategy HYBRID_SHARD needs the same number of processes on every node, numbered node by "
              "node; got world size " +
                  std::to_string(world) + ", LOCAL_WORLD_SIZE " + std::to_string(per_node) + ", rank " +
                  std::to_string(rank) + " with LOCAL_RANK " + std::to_string(state.env.local_rank));
  const int nodes = world / per_node;
  if (nodes == 1) return;
  const int node = rank / per_node, local = rank % per_node;
  std::vector<int> same_node, same_local;
  for (int i = 0; i < per_node; ++i) same_node.push_back(node * per_node + i);
  for (int n = 0; n < nodes; ++n) same_local.push_back(n * per_node + local);
  state.shard_group = std::make_unique<ProcessGroup>(
      *state.process_group, state.subgroup_name("hybrid_shard/node" + std::to_string(node)), same_node);
  state.replica_group = std::make_unique<ProcessGroup>(
      *state.process_group, state.subgroup_name("hybrid_replicate/local" + std::to_string(local)), same_local);
}

// mixed_precision="bf16" on a CPU without bfloat16 instructions runs, slower
// than fp32: rank 0 says so once per process (per distinct text), rather than
// leaving the slowdown silent.
void warn_if_bf16_emulated(MixedPrecision precision, const c10::Device& device) {
  if (precision != MixedPrecision::Bf16 || !device.is_cpu()) return;
  const std::string warning = bf16_emulation_warning(read_cpu_bf16_isa());
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warning.empty() && said.insert(warning).second) warn("accel", warning);
}

}  // namespace

AcceleratorState::AcceleratorState(const ResolvedOptions& resolved)
    : dataloader_config(resolved.given.dataloader),
      device_placement(resolved.given.device_placement),
      sync_each_batch(resolved.given.sync_each_batch),
      adjust_scheduler(resolved.given.adjust_scheduler),
      step_scheduler_with_optimizer(resolved.given.step_scheduler_with_optimizer),
      project(resolved.given.project),
      log_with(resolved.given.log_with) {
  const AcceleratorOptions& options = resolved.given;
  bucket_cap_mb = options.bucket_cap_mb;
  first_bucket_cap_mb = options.first_bucket_cap_mb;
  gradient_as_bucket_view = options.gradient_as_bucket_view;
  find_unused_parameters = options.find_unused_parameters;
  broadcast_buffers = options.broadcast_buffers;
  comm_hook = options.comm_hook;
  timeout = options.timeout;
  debug_mode = resolved.debug_mode;
  sharding_strategy = resolved.sharding_strategy;
  fsdp_min_num_params = resolved.fsdp_min_num_params;
  fsdp_wrap_classes = resolved.fsdp_wrap_classes;
  fsdp_backward_prefetch = resolved.fsdp_backward_prefetch;
  fsdp_forward_prefetch = resolved.fsdp_forward_prefetch;
  fsdp_activation_checkpointing = resolved.fsdp_activation_checkpointing;
  cpu_offload = resolved.cpu_offload;
  sharded_state_dict = resolved.sharded_state_dict;
  mixed_precision = resolved.mixed_precision;
  gradient_state->num_steps = resolved.gradient_accumulation_steps;
  gradient_state->sync_with_dataloader = options.sync_with_dataloader;
  autocast_enabled = options.autocast_enabled;
  autocast_cache_enabled = options.autocast_cache_enabled;
  rng_types = resolved.rng_types;
  env = read_launch_environment();
  if (resolved.store_host) {  // init_method tcp://HOST:PORT
    env.master_addr = *resolved.store_host;
    env.master_port = resolved.store_port;
  }
  tune_host_allocator();
  install_large_block_cache();

  device = choose_process_device(env, resolved.use_cpu);
  check_precision_supported(mixed_precision, device);
  warn_if_bf16_emulated(mixed_precision, device);
  require_arg(resolved.backend != "nccl" || device.is_cuda(),
              "backend \"nccl\" needs CUDA devices, but this run is on " + device.str() +
                  " (use gloo, or leave the backend to the device)");
  require(resolved.backend != "gloo" || !device.is_cuda(), ErrorCode::Unsupported,
          "backend \"gloo\" on CUDA devices is not supported (use nccl, or the cpu option to train on the CPU "
          "with gloo)");
  // GradScalerKwargs(enabled=False): fp16 without loss scaling.
  if (mixed_precision == MixedPrecision::Fp16 && options.scaler_enabled) {
    GradScalerOptions scaler_options;
    scaler_options.init_scale = options.scaler_init_scale;
    scaler_options.growth_factor = options.scaler_growth_factor;
    scaler_options.backoff_factor = options.scaler_backoff_factor;
    scaler_options.growth_interval = options.scaler_growth_interval;
    scaler = std::make_shared<GradScaler>(scaler_options);
  }

  // Checked before any process group exists: a bad mesh fails alike everywhere, with nothing started.
  std::optional<MeshShape> mesh_shape;
  if (resolved.parallelism) mesh_shape = check_parallelism(*resolved.parallelism, env.world_size, sharding_strategy);
  if (env.distributed()) {
    auto world = join_world_group(env, device, timeout);
    process_group = std::move(world.group);
    group_generation = world.generation;
    timeout = process_group->timeout();  // the first user's, when a PartialState made the group
    distributed_type = device.is_cuda() ? DistributedType::MultiGpu : DistributedType::MultiCpu;
    if (mesh_shape) {
      create_mesh_groups(*this, *mesh_shape);
    } else if (sharding_strategy == ShardingStrategy::HybridShard) {
      create_hybrid_groups(*this);
    }
  }
}

namespace {

// ZeRO-2: each synced backward ends with the reduce-scatter of every prepared
// model's gradients, the same on every rank.
void reduce_scatter_sharded_gradients(AcceleratorState& state) {
  for (const auto& weak : state.prepared_models) {
    auto model = weak.lock();
    if (!model || !model->flat_shard()) continue;
    FlatShard& shard = *model->flat_shard();
    if (shard.strategy() == ShardingStrategy::ShardGradOp && shard.sync_enabled()) {
      shard.reduce_scatter_gradients();
    }
  }
}

void begin_sharded_backward(AcceleratorState& state) {
  for (const auto& weak : state.prepared_models) {
    auto model = weak.lock();
    if (model && model->flat_shard() && model->flat_shard()->strategy() == ShardingStrategy::ShardGradOp) {
      model->flat_shard()->begin_backward();
    }
  }
}

}  // namespace

}  // namespace detail

Accelerator::Accelerator(const AcceleratorOptions& options)
    : state_(std::make_shared<detail::AcceleratorState>(detail::resolve_options(options))) {
  // Before user code looks at checkpoints/ (a restart recipe tests whether it
  // is empty), on every process: a save killed before its commit must not make
  // it look non-empty.
  detail::remove_interrupted_saves(*state_);
}

Accelerator::~Accelerator() = default;

int Accelerator::process_index() const { return state_->env.rank; }
int Accelerator::local_process_index() const { return state_->env.local_rank; }
int Accelerator::num_processes() const { return state_->env.world_size; }
bool Accelerator::is_main_process() const { return state_->env.rank == 0; }
bool Accelerator::is_local_main_process() const { return state_->env.local_rank == 0; }
DistributedType Accelerator::distributed_type() const { return state_->distributed_type; }
MixedPrecision Accelerator::mixed_precision() const { return state_->mixed_precision; }
c10::Device Accelerator::device() const { return state_->device; }
std::chrono::milliseconds Accelerator::timeout() const { return state_->timeout; }
ShardingStrategy Accelerator::sharding_strategy() const { return state_->sharding_strategy; }
bool Accelerator::cpu_offload() const { return state_->cpu_offload; }

ParallelismConfig Accelerator::parallelism_config() const {
  const detail::MeshShape& mesh = state_->mesh;
  if (mesh.total() == 1) return ParallelismConfig{state_->world_size(), 1, 1, 1};
  return ParallelismConfig{mesh.dp_replicate, mesh.dp_shard, mesh.tp, mesh.cp};
}

ParallelismRanks Accelerator::parallelism_ranks() const {
  const detail::MeshShape& mesh = state_->mesh;
  if (mesh.total() == 1) return ParallelismRanks{process_index(), 0, 0, 0};  // as parallelism_config() says
  const detail::MeshPosition at = detail::mesh_position(mesh, process_index());
  return ParallelismRanks{at.dp_replicate, at.dp_shard, at.tp, at.cp};
}

void Accelerator::prepare(Model& model) {
  model.impl().prepare(state_);
  state_->prepared_models.push_back(model.impl().weak_from_this());
}

void Accelerator::prepare(Optimizer& optimizer) {
  require(optimizer.model().is_prepared(), ErrorCode::State,
          "prepare(optimizer): prepare the optimizer's model first, so the optimizer steps the prepared parameters");
  if (const auto& shard = optimizer.model().impl().flat_shard()) {
    // The fp16 scaler would decide to skip a step from this rank's chunk alone.
    require(!state_->scaler, ErrorCode::Unsupported,
            std::string("prepare(optimizer): mixed_precision fp16 with sharding_strategy ") +
                to_string(state_->sharding_strategy) + " is not supported yet; use bf16 or NO_SHARD");
    optimizer.shard_over(shard);
  }
  optimizer.bind(state_->gradient_state, state_->scaler);
  state_->prepared_optimizers.emplace_back(optimizer.lifetime(), optimizer.checkpoint_state());
}

void Accelerator::prepare(Scheduler& scheduler) {
  scheduler.bind(state_->gradient_state, state_->world_size(), state_->dataloader_config.split_batches,
                 state_->adjust_scheduler, state_->step_scheduler_with_optimizer);
  state_->prepared_schedulers.emplace_back(scheduler.lifetime(), scheduler.checkpoint_object());
}

void Accelerator::prepare(DataLoader& loader) {
  require(!loader.is_prepared(), ErrorCode::State, "prepare(dataloader): this dataloader is already prepared");
  ShardPlacement placement;
  // Under tensor and context parallelism the ranks of one group see the same batches.
  placement.num_processes = state_->batch_parallel_size();
  placement.process_index = state_->batch_parallel_rank();
  placement.split_batches = state_->dataloader_config.split_batches;
  placement.even_batches = state_->dataloader_config.even_batches;
  if (state_->device_placement) placement.device = state_->device;
  placement.gradient_state = state_->gradient_state;
  const DataLoaderConfiguration& config = state_->dataloader_config;
  placement.use_seedable_sampler = config.use_seedable_sampler;
  placement.data_seed = config.data_seed;
  const bool dispatch = config.dispatch_batches.value_or(loader.is_iterable() && state_->device_placement);
  std::shared_ptr<detail::AcceleratorState> state = state_;
  if (dispatch && state_->process_group) {
    placement.dispatch = [state](std::optional<Batch> batch) {
      return detail::broadcast_batch(*state, std::move(batch));
    };
  } else if (dispatch) {
    // One process dispatches to itself: the same last batch and remainder as with several.
    placement.dispatch = [](std::optional<Batch> batch) { return batch; };
  }
  if (state_->process_group && (state_->rng_types.torch || (state_->rng_types.cuda && state_->device.is_cuda()))) {
    placement.synchronize_rng = [state] { detail::synchronize_rng_states(*state, state->rng_types); };
  }
  if (state_->process_group && state_->rng_types.generator) {
    placement.agree_seed = [state](uint64_t seed) {
      at::Tensor value = at::full({1}, static_cast<int64_t>(seed), at::kLong).to(state->device);
      detail::broadcast_in_place(*state, {value}, 0, "dataloader shuffle seed");
      return static_cast<uint64_t>(value.item<int64_t>());
    };
  }
  loader.shard(placement);
  state_->prepared_loaders.emplace_back(loader.lifetime(), &loader);
}

std::unique_ptr<DataLoader> Accelerator::skip_first_batches(const DataLoader& loader, int64_t num_batches) const {
  return loader.skip_first_batches(num_batches);
}

void Accelerator::backward(const at::Tensor& loss) {
  require_arg(loss.defined(), "backward: the loss tensor is undefined");
  require_arg(loss.numel() == 1, "backward: the loss must have one element, got shape " + c10::str(loss.sizes()));
  require_arg(loss.requires_grad(),
              "backward: the loss does not require grad (was it computed under no_grad or "
              "from a model in eval mode without parameters requiring grad?)");
  ACCEL_TRACE_SPAN("accel::backward");
  try {
    at::Tensor scaled = state_->gradient_state->num_steps > 1 ? loss / state_->gradient_state->num_steps : loss;
    if (state_->scaler) scaled = state_->scaler->scale_loss(scaled);
    if (state_->joining) start_join_round();
    detail::begin_sharded_backward(*state_);
    scaled.backward();
    detail::reduce_scatter_sharded_gradients(*state_);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(detail::is_out_of_memory(e) ? ErrorCode::Resource : ErrorCode::Internal,
         "backward failed: " + message.substr(0, message.find('\n')));
  }
}

at::Tensor Accelerator::gather(const at::Tensor& tensor) { return gather(std::vector<at::Tensor>{tensor})[0]; }

std::vector<at::Tensor> Accelerator::gather(const std::vector<at::Tensor>& tensors) {
  return detail::gather_tensors(*state_, tensors);
}

int64_t Accelerator::metrics_length(int64_t gathered) const {
  const GradientState& gradient = *state_->gradient_state;
  if (gradient.end_of_dataloader && gradient.remainder > 0 && gradient.remainder < gathered) return gradient.remainder;
  return gathered;
}

at::Tensor Accelerator::gather_for_metrics(const at::Tensor& tensor) {
  return gather_for_metrics(std::vector<at::Tensor>{tensor})[0];
}

std::vector<at::Tensor> Accelerator::gather_for_metrics(const std::vector<at::Tensor>& tensors) {
  // Over the data-parallel ranks: a tensor- or context-parallel group's ranks hold the same samples.
  std::vector<at::Tensor> gathered = detail::gather_tensors(
      *state_, tensors, state_->batch_group ? state_->batch_group.get() : state_->data_group.get());
  for (auto& t : gathered) t = t.narrow(0, 0, metrics_length(t.size(0)));
  return gathered;
}

at::Tensor Accelerator::reduce(const at::Tensor& tensor, ReduceOp op, double scale) {
  return reduce(std::vector<at::Tensor>{tensor}, op, scale)[0];
}

std::vector<at::Tensor> Accelerator::reduce(const std::vector<at::Tensor>& tensors, ReduceOp op, double scale) {
  return detail::reduce_tensors(*state_, tensors, op, scale);
}

bool Accelerator::debug_mode() const { return state_->debug_mode; }

bool Accelerator::sync_gradients() const { return state_->gradient_state->sync_gradients; }
bool Accelerator::end_of_dataloader() const { return state_->gradient_state->end_of_dataloader; }
bool Accelerator::in_dataloader() const { return state_->gradient_state->in_dataloader(); }
int64_t Accelerator::remainder() const { return state_->gradient_state->remainder; }
int64_t Accelerator::gradient_accumulation_steps() const { return state_->gradient_state->num_steps; }
int64_t Accelerator::accumulation_step() const { return state_->gradient_state->step; }

void Accelerator::set_sync_gradients(bool sync) { state_->gradient_state->sync_gradients = sync; }

void Accelerator::set_gradient_accumulation_steps(int64_t steps) {
  require_arg(steps >= 1, "gradient_accumulation_steps must be >= 1, got " + std::to_string(steps));
  state_->gradient_state->num_steps = steps;
}

const DataLoaderConfiguration& Accelerator::dataloader_config() const { return state_->dataloader_config; }

void Accelerator::set_even_batches(bool even) { state_->dataloader_config.even_batches = even; }

void Accelerator::synchronize_rng_states(const std::vector<std::string>& rng_types) {
  detail::synchronize_rng_states(*state_, detail::parse_rng_types(rng_types));
}
double Accelerator::loss_scale() const { return state_->scaler ? state_->scaler->scale() : 1.0; }

void Accelerator::print(const std::string& message) const {
  if (!is_local_main_process()) return;
  std::fwrite(message.data(), 1, message.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void Accelerator::set_seed(uint64_t seed, bool device_specific, bool deterministic) {
  // Accelerate adds the rank; unsigned wrap-around keeps huge seeds valid.
  if (device_specific) seed += static_cast<uint64_t>(process_index());
  accel::set_seed(seed, deterministic);
}

}  // namespace accel
