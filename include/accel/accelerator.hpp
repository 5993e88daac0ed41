// libaccel C++ API: the Accelerator, the object a training loop talks to.
//
// One Accelerator per process. It reads the launcher's environment (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), joins the
// rendezvous and owns the process group. Models, optimizers and dataloaders are
// prepared with it; prepared objects keep its state alive.
//
// Collective functions (every process must call them, in the same order) say so.
// A collective that does not finish within timeout() throws accel::Error with
// ErrorCode::Timeout naming the operation, its sequence number and, where known,
// the ranks that did not arrive.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <string>
#include <vector>

#include "accel/checkpoint.hpp"
#include "accel/error.hpp"
#include "accel/options.hpp"
#include "accel/tracking.hpp"

namespace accel {

class Model;
class Optimizer;
class Scheduler;
class DataLoader;
namespace detail {
class AcceleratorState;
}

// What Accelerator::held_bytes counts.
struct HeldBytes {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer_state = 0;
};

class Accelerator {
 public:
  // Collective when WORLD_SIZE > 1: joins the rendezvous and creates the process group.
  // The first one of a process also tunes glibc's malloc (see accel_accelerator_create).
  explicit Accelerator(const AcceleratorOptions& options = {});
  ~Accelerator();
  Accelerator(const Accelerator&) = delete;
  Accelerator& operator=(const Accelerator&) = delete;

  int process_index() const;
  int local_process_index() const;
  int num_processes() const;
  bool is_main_process() const;
  bool is_local_main_process() const;
  DistributedType distributed_type() const;
  MixedPrecision mixed_precision() const;
  c10::Device device() const;
  std::chrono::milliseconds timeout() const;  // the value the backend really uses
  // The resolved strategy. A single process has nothing to shard and trains as NoShard.
  ShardingStrategy sharding_strategy() const;
  // Whether sharded models keep master weights, gradients and optimizer state on the CPU.
  bool cpu_offload() const;
  // The mesh in use (docs/parallelism.md); without a ParallelismConfig,
  // dp_replicate_size is the number of processes and the rest 1, as Accelerate's.
  ParallelismConfig parallelism_config() const;
  // This process's place in that mesh: row-major over dp_replicate x dp_shard
  // x cp x tp (tp innermost, so tp_rank = process_index % tp_size); without a
  // ParallelismConfig, dp_replicate_rank is the process index.
  ParallelismRanks parallelism_ranks() const;
  // Bytes this process holds for a prepared model's parameters, gradients and
  // (optimizer given) optimizer state, counted from the tensors' storages (each
  // storage once, as allocated now; a FULL_SHARD unit's freed storage counts 0).
  // Not collective. `optimizer` may be null.
  HeldBytes held_bytes(const Model& model, const Optimizer* optimizer) const;

  // Moves the model to the device, broadcasts process 0's parameters and buffers
  // and wires overlapped, bucketed gradient averaging. Collective.
  void prepare(Model& model);
  void prepare(Optimizer& optimizer);
  // Shards the loader across processes and places its batches on the device.
  void prepare(DataLoader& loader);
  // Steps only after real optimizer steps, num_processes at a time (see scheduler.hpp).
  void prepare(Scheduler& scheduler);
  // A new loader that resumes loader's current epoch after its first
  // num_batches batches without reading them (Accelerate's skip_first_batches).
  std::unique_ptr<DataLoader> skip_first_batches(const DataLoader& loader, int64_t num_batches) const;

  // (loss / gradient_accumulation_steps).backward(), scaled under fp16; on a
  // sync step every prepared model's gradients are averaged across processes
  // before it returns. Collective on sync steps.
  void backward(const at::Tensor& loss);

  // Gradient accumulation, as Accelerate's `with accelerator.accumulate(model)`:
  // begin decides whether this micro-step completes the window (or is the
  // dataloader's last batch) and, if not, turns gradient sync off for it.
  void accumulate_begin(Model& model);
  void accumulate_end(Model& model);
  class AccumulateScope {
   public:
    AccumulateScope(Accelerator& accelerator, Model& model);
    ~AccumulateScope();
    AccumulateScope(const AccumulateScope&) = delete;
    AccumulateScope& operator=(const AccumulateScope&) = delete;

   private:
    Accelerator& accelerator_;
    Model& model_;
  };
  AccumulateScope accumulate(Model& model) { return AccumulateScope(*this, model); }
  // Gradients accumulate locally while sync is off (DDP's no_sync).
  void no_sync_begin(Model& model);
  // LocalSGD's synchronisation (Accelerate's LocalSGD._sync_and_avg_model_params):
  // waits for every process, then replaces each of the prepared model's
  // parameters by its mean over the data-parallel processes. Collective; does
  // nothing on one process. Throws Unsupported for a sharded model (its
  // parameters are chunks), InvalidArgument for a model not prepared here.
  void average_parameters(Model& model);
  void no_sync_end(Model& model);
  // Makes the next backward synchronise even inside no_sync or a micro-step.
  void trigger_sync_in_backward(Model& model);
  bool sync_gradients() const;
  // Accelerate's `accelerator.sync_gradients = value`: whether this micro-step
  // counts as the end of a window for the optimizer step and gradient
  // clipping, until the next accumulate_begin decides again. Like Accelerate,
  // it does not change whether the running backward averages gradients (see
  // trigger_sync_in_backward).
  void set_sync_gradients(bool sync);
  bool end_of_dataloader() const;  // the batch a prepared loader just yielded was its epoch's last
  // Whether a loader prepared by this accelerator is in an epoch (Accelerate's
  // gradient_state.in_dataloader): from the next() that opens the epoch to
  // the one that reports its end (DataLoader::open_index tells which).
  bool in_dataloader() const;
  int64_t remainder() const;  // real samples of a padded last round, else 0
  int64_t gradient_accumulation_steps() const;
  // Accelerate's accelerator.step: the micro-steps accumulate_begin has counted
  // (the window ends when it is a multiple of gradient_accumulation_steps); 0
  // at the start, after free_memory, and again at a dataloader's last batch
  // under sync_with_dataloader. save_state keeps it and load_state restores it.
  int64_t accumulation_step() const;
  // Accelerate's `accelerator.gradient_accumulation_steps = n`: windows of n
  // micro-steps from the next accumulate_begin on; backward divides the loss
  // by n. InvalidArgument when n < 1.
  void set_gradient_accumulation_steps(int64_t steps);
  // The DataLoaderConfiguration in use (Accelerate's split_batches,
  // even_batches, dispatch_batches, ... properties).
  const DataLoaderConfiguration& dataloader_config() const;
  // Accelerate's `accelerator.even_batches = value`: applies to dataloaders
  // prepared from now on (join_uneven_inputs works with uneven ones).
  void set_even_batches(bool even);
  // Accelerate's synchronize_rng_states: every process takes process 0's state
  // of the named generators ("torch", "cuda", "generator": see
  // AcceleratorOptions::rng_types; "generator" has no global state and is
  // accepted as a no-op here). InvalidArgument naming an unknown type,
  // Unsupported naming a device type libaccel does not drive. Collective.
  void synchronize_rng_states(const std::vector<std::string>& rng_types);

  // Clips the total gradient norm of the model's parameters (unscaling first
  // under fp16) and returns the norm before clipping. On micro-steps that do not
  // sync it leaves the gradients alone and returns 0.
  double clip_grad_norm(Model& model, double max_norm, double norm_type = 2.0);
  // Clamps every gradient element to [-clip_value, clip_value] (sync steps only).
  void clip_grad_value(Model& model, double clip_value);
  // Divides the optimizer's gradients by the fp16 loss scale now (no-op otherwise).
  void unscale_gradients(Optimizer& optimizer);
  // The current fp16 loss scale (1 when not scaling).
  double loss_scale() const;

  // Runs code outside the model's forward under the accelerator's mixed
  // precision (Accelerate's accelerator.autocast()); scopes nest. enabled
  // (accelerator.autocast(autocast_handler=AutocastKwargs(enabled=...))):
  // false turns autocast off inside the scope; without it the options'
  // autocast_enabled decides. The options' autocast_cache_enabled applies too.
  // Accelerate's join_uneven_inputs, for loaders with even_batches = false:
  // between _begin and _end a process that runs out of batches calls _end,
  // which keeps answering the gradient allreduces of the processes still
  // training (with zeros, dividing by the number of those) until every process
  // has reached _end. Supports one prepared model; inside the scope the loop
  // may not call other collectives. Collective (_end).
  void join_uneven_inputs_begin();
  void join_uneven_inputs_end();

  void autocast_begin();
  void autocast_begin(bool enabled);
  void autocast_end();
  // torch.no_grad() for evaluation: between _begin and _end this thread's
  // autograd records nothing (outputs have no grad_fn, memory is not held for
  // a backward). Scopes nest and _end restores the mode _begin found; _end
  // without _begin throws State. Grad mode is thread-local, as in PyTorch: end
  // a scope on the thread that began it.
  void no_grad_begin();
  void no_grad_end();

  // Concatenation along dim 0 over all processes (dim-0 sizes may differ). Collective.
  at::Tensor gather(const at::Tensor& tensor);
  // gather(), minus the filler samples that completed the last round of a
  // prepared dataloader (on its last batch), so metrics count every sample once.
  // Collective.
  at::Tensor gather_for_metrics(const at::Tensor& tensor);
  // How many of `gathered` samples gather_for_metrics keeps right now: the
  // remainder on a prepared loader's last batch, else all. Not collective.
  int64_t metrics_length(int64_t gathered) const;
  // Element-wise reduction over all processes: scale * sum (Sum, None), or
  // that divided by num_processes (Mean). Collective.
  at::Tensor reduce(const at::Tensor& tensor, ReduceOp op, double scale = 1.0);
  // Process `from`'s tensor on every process; shapes and dtypes must match. Collective.
  at::Tensor broadcast(const at::Tensor& tensor, int from = 0);
  // Pads `tensor` along dim to the largest size any process has, with
  // pad_value, at the end (or the start with pad_first). Collective. A dim the
  // tensor lacks (dim >= its dim()) returns it unchanged, as Accelerate does.
  at::Tensor pad_across_processes(const at::Tensor& tensor, int64_t dim = 0, double pad_value = 0,
                                  bool pad_first = false);
  // The same over a flat list of tensors (a binding's nested structure,
  // flattened): one result per input, in order. Every process passes the same
  // number of tensors. The shape exchange of gather and the debug-mode checks
  // of reduce and broadcast travel in one collective for the whole list.
  std::vector<at::Tensor> gather(const std::vector<at::Tensor>& tensors);
  std::vector<at::Tensor> gather_for_metrics(const std::vector<at::Tensor>& tensors);
  std::vector<at::Tensor> reduce(const std::vector<at::Tensor>& tensors, ReduceOp op, double scale = 1.0);
  std::vector<at::Tensor> broadcast(const std::vector<at::Tensor>& tensors, int from = 0);
  std::vector<at::Tensor> pad_across_processes(const std::vector<at::Tensor>& tensors, int64_t dim = 0,
                                               double pad_value = 0, bool pad_first = false);
  // Every process's bytes, in rank order. Collective.
  std::vector<std::string> gather_object(const std::string& bytes);
  // Process `from`'s bytes on every process (Accelerate's broadcast_object_list
  // with the objects serialized by the binding). Collective.
  std::string broadcast_object(const std::string& bytes, int from = 0);
  // Which of n items this process takes in split_between_processes: items
  // [start, end), then padded_length - (end - start) copies of item n - 1.
  // The first n % P processes take one more; with fewer items than processes
  // the surplus ones get none (start == end). With apply_padding every process
  // reaches ceil(n / P) (nothing to pad with when n == 0). Not collective.
  struct SplitRange {
    int64_t start = 0;
    int64_t end = 0;
    int64_t padded_length = 0;
  };
  SplitRange split_range(int64_t n, bool apply_padding = false) const;
  // This process's share of tensor's rows by split_range (padding repeats the last row).
  at::Tensor split_between_processes(const at::Tensor& tensor, bool apply_padding = false) const;
  // The same rows of every tensor; their dim-0 sizes must agree.
  std::vector<at::Tensor> split_between_processes(const std::vector<at::Tensor>& tensors,
                                                  bool apply_padding = false) const;
  // Debug mode (ACCELERATE_DEBUG_MODE, accel launch --debug): reduce and
  // broadcast first exchange shapes and dtypes, so a mismatch is an error on
  // every process naming them; otherwise they skip that extra collective and
  // a mismatch is undefined (the backend may fail, time out or, Gloo, abort).
  bool debug_mode() const;
  // Raises this process's trigger; check_trigger() reports (and clears) whether
  // any process raised one. check_trigger is collective.
  void set_trigger();
  bool check_trigger();
  // Scopes that let the main (or each node's local main) process run first,
  // e.g. to download or preprocess: the others wait at begin, the main at end.
  void main_process_first_begin();
  void main_process_first_end();
  void local_main_process_first_begin();
  void local_main_process_first_end();
  // Accelerate's free_memory: forgets every prepared model, optimizer,
  // scheduler and dataloader (backward and save_state no longer see them; the
  // caller still owns them), resets accumulation and empties the CUDA cache.
  void free_memory();
  void clear() { free_memory(); }  // Accelerate's alias
  // Blocks until every process arrives. Collective.
  void wait_for_everyone();
  // Prints once per machine, on each machine's local main process, as
  // Accelerate's accelerator.print does.
  void print(const std::string& message) const;
  // Seeds LibTorch's CPU and CUDA generators (Accelerate's set_seed). With
  // device_specific each process uses seed + process_index(), so ranks draw
  // different numbers (dropout, augmentation) yet reproducibly. With
  // deterministic LibTorch uses deterministic algorithms from now on (and
  // fails on operations that have none); false leaves that setting as it is.
  void set_seed(uint64_t seed, bool device_specific = false, bool deterministic = false);

  // Checkpoints (docs/checkpointing.md). save_state writes the prepared models,
  // optimizers, schedulers, the fp16 loss scaler, every process's RNG state,
  // the prepared dataloaders' positions and registered objects into dir (empty:
  // project_dir/checkpoints/checkpoint_{iteration} under automatic naming); the
  // directory appears only when complete, and total_limit pruning happens only
  // after the commit. load_state restores all of it (empty dir: the newest
  // automatic checkpoint), checking every file (checksums, types, shapes)
  // before applying anything, so a failure leaves the run as it was. With
  // automatic naming, creating an Accelerator removes leftovers of interrupted
  // saves in project_dir/checkpoints. Both collective. save_state returns the
  // directory it wrote; under automatic naming an existing
  // checkpoint_{iteration} is an InvalidArgument error naming it (Accelerate's
  // ValueError), raised before anything is written. load_state also reads a
  // directory Python Accelerate saved (no manifest.json; data only, see
  // accel_accelerator_load_state in accel_checkpoint.h for what it restores).
  // safe_serialization = false writes each model as pytorch_model.bin
  // (pytorch_model_{i}.bin), a torch.save pickle of its state dict, instead of
  // model.safetensors: the layout Accelerate 0.22's load_state reads.
  std::string save_state(const std::string& dir = "", bool safe_serialization = true);
  void load_state(const std::string& dir = "");
  void register_for_checkpointing(CheckpointObject object);
  // Hooks run before save_state writes / load_state reads; the id removes them.
  int64_t register_save_state_pre_hook(StateHook hook);
  int64_t register_load_state_pre_hook(StateHook hook);
  void remove_hook(int64_t id);
  int64_t save_iteration() const;  // number of the next automatic checkpoint
  // Accelerate's project_configuration.iteration = n: the next automatic
  // checkpoint is checkpoint_{n}. InvalidArgument when n < 0.
  void set_save_iteration(int64_t iteration);

  // The model's state dict on the host, in PyTorch's state_dict() order
  // (modules in pre-order, each one's parameters then buffers) and names.
  // Under FULL_SHARD, and with tensor parallelism (the split parameters'
  // slices, docs/parallelism.md), it all-gathers the parameters (full state
  // dict): collective.
  TensorDict get_state_dict(const Model& model) const;
  // Hugging Face layout in dir: model.safetensors, or model-0000i-of-0000N.safetensors
  // shards plus model.safetensors.index.json when larger than max_shard_size.
  // Shards are packed as Hugging Face's shard_checkpoint does: tensors in
  // get_state_dict order fill the current shard while the next one fits, a
  // tensor larger than max_shard_size gets a shard of its own; the index is
  // written with sorted keys (weight_map by tensor name).
  // Main process only writes; collective (others wait; under FULL_SHARD all
  // take part in gathering the parameters). safe_serialization =
  // false (pickle) is Unsupported.
  void save_model(const Model& model, const std::string& dir, const std::string& max_shard_size = "10GB",
                  bool safe_serialization = true);
  // Loads a .safetensors file, a PyTorch pickle (.bin/.pt/.pth, e.g.
  // pytorch_model.bin; data only) or a sharded index of either (…index.json)
  // into model; returns missing and unexpected names. Shapes must match (a
  // model split for tensor parallelism: the whole shapes; each rank keeps its
  // slices). With strict, missing or unexpected names are an InvalidArgument
  // error naming them, raised before any parameter changes.
  LoadReport load_checkpoint_in_model(Model& model, const std::string& path, bool strict = false);
  // Accelerate's accelerator.save: writes tensors to a safetensors file on the main process only.
  void save(const TensorDict& tensors, const std::string& path);
  // Experiment tracking (tracking.hpp, docs/tracking.md). Trackers live on the
  // main process only; on other ranks these calls do nothing.
  // Adds a user tracker that the next init_trackers starts with the log_with ones.
  void add_tracker(std::shared_ptr<Tracker> tracker);
  // Creates the log_with trackers under logging_dir and starts a run named
  // project_name with config as its hyperparameters. Throws State if already started;
  // on any error no tracker is started, so the call can be repeated.
  void init_trackers(const std::string& project_name, const TrackerConfig& config = {});
  // The same with Accelerate's init_kwargs: a JSON object of per-tracker options,
  // {"wandb": {"name": "run-1", "tags": ["a"]}, "dvclive": {"dir": "out"}} (""
  // for none; docs/tracking.md lists each tracker's keys). InvalidArgument names
  // a key that is not a built-in tracker or an option its tracker lacks; a
  // built-in tracker missing from log_with ignores its entry, as in Accelerate.
  void init_trackers(const std::string& project_name, const TrackerConfig& config, const std::string& init_kwargs_json);
  // Sends one step's scalars to every running tracker.
  void log(const Scalars& values, std::optional<int64_t> step = std::nullopt);
  void log_text(const std::string& tag, const std::string& text, std::optional<int64_t> step = std::nullopt);
  // The running tracker called name, or nullptr (always nullptr on other ranks).
  Tracker* get_tracker(const std::string& name) const;
  // Accelerate's get_tracker(name).log(values, step): to the running tracker
  // called name alone. Nothing happens where Accelerate's get_tracker gives a
  // blank tracker: when no tracker runs in this process (other ranks, before
  // init_trackers, an empty log_with, after end_training). Throws
  // InvalidArgument naming name and the running trackers when trackers run and
  // none is called name.
  void log_to(const std::string& tracker, const Scalars& values, std::optional<int64_t> step = std::nullopt);
  // The same for a text value (trackers without text ignore it, as log_text).
  void log_text_to(const std::string& tracker, const std::string& tag, const std::string& text,
                   std::optional<int64_t> step = std::nullopt);
  // Finishes every tracker (flushes and closes its files); idempotent. Every
  // tracker is finished even when one fails; the first failure is thrown.
  void end_training();

  const std::shared_ptr<detail::AcceleratorState>& state() const { return state_; }

 private:
  // Under join_uneven_inputs, before a backward that syncs: agree with the
  // joined processes on how many are still training.
  void start_join_round();
  std::shared_ptr<detail::AcceleratorState> state_;
};

}  // namespace accel
