package accel

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// AcceleratorOptions use Accelerate's names. A zero field (nil pointer, ""
// string) takes Accelerate's default or the ACCELERATE_* environment variable
// `accel launch` sets.
type AcceleratorOptions struct {
	CPU                       bool          // use the CPU even where a GPU is present
	MixedPrecision            string        // "no", "fp16", "bf16", "fp8"; "": ACCELERATE_MIXED_PRECISION, else "no"
	GradientAccumulationSteps int64         // 0: 1; ACCELERATE_GRADIENT_ACCUMULATION_STEPS wins (as in Accelerate)
	SyncWithDataloader        *bool         // nil: true (the loader's last batch ends a window)
	SyncEachBatch             bool          // average gradients on every accumulation micro-step too
	AdjustScheduler           bool          // micro-step scheduler calls count towards OneCycle's total_steps
	Timeout                   time.Duration // collectives and rendezvous; 0: 30 minutes
	BucketCapMB               float64       // gradient-sync bucket size; 0: 25
	FirstBucketCapMB          float64       // 0: 1
	GradientAsBucketView      *bool         // nil: true (gradients alias the buckets, no copies)
	StaticGraph               bool
	FindUnusedParameters      bool
	BroadcastBuffers          *bool  // nil: true (process 0's buffers at every training forward, DDP's default)
	CommHook                  string // "", "no", "fp16", "bf16"
	// "" (from the launcher's environment, else NO_SHARD), "NO_SHARD",
	// "SHARD_OPTIMIZER" (ZeRO-1), "SHARD_GRAD_OP" (ZeRO-2), "FULL_SHARD" (ZeRO-3),
	// "HYBRID_SHARD" (FULL_SHARD within each node, replicated
	// across nodes; docs/sharding.md).
	ShardingStrategy string
	// FULL_SHARD's wrap units: nil from the launcher's FSDP settings (else 0);
	// 0: one unit per layer; n > 0: layers grouped until they hold n parameters.
	FSDPMinNumParams *int64
	// FULL_SHARD units keep only their input and run again in backward; nil:
	// from FSDP_ACTIVATION_CHECKPOINTING; true with another strategy is ErrUnsupported.
	FSDPActivationCheckpointing *bool
	// FSDP's transformer_auto_wrap_policy (Accelerate's
	// fsdp_transformer_layer_cls_to_wrap): the TorchScript submodules whose
	// class ("GPT2Block") or path ("transformer.h.0") is listed become
	// FULL_SHARD units of their own (in a JSON spec: the layers of these
	// types, "TransformerEncoderLayer", or names); nil: from the launcher's
	// FSDP settings.
	FSDPTransformerLayerClsToWrap []string
	// FSDP's backward_prefetch (nil: on unless FSDP_BACKWARD_PREFETCH=NO_PREFETCH)
	// and forward_prefetch (nil: FSDP_FORWARD_PREFETCH): the next FULL_SHARD
	// unit's all-gather in flight while one runs.
	FSDPBackwardPrefetch *bool
	FSDPForwardPrefetch  *bool
	// FSDP's state_dict_type for SaveState under a sharding strategy:
	// "SHARDED_STATE_DICT" writes PyTorch distributed checkpoints
	// (pytorch_model_fsdp_0/, optimizer_0/, which Accelerate and
	// torch.distributed.checkpoint read), "FULL_STATE_DICT" libaccel's own
	// per-process files; "": FSDP_STATE_DICT_TYPE, else FULL_STATE_DICT.
	FSDPStateDictType string
	// CPU offload (Accelerate's fsdp_offload_params, DeepSpeed's offload
	// devices "cpu"): a sharded model's master weights, gradients and
	// optimizer state live in host memory; nil: from the launcher's
	// environment, else off; true with NO_SHARD is ErrUnsupported.
	CPUOffload *bool
	// Accelerate's ParallelismConfig (docs/parallelism.md): the world factored
	// into dp_replicate x dp_shard x cp x tp; nil: from the launcher's
	// environment (accel launch --parallelism_config_*), else none.
	ParallelismConfig         *ParallelismConfig
	ScalerInitScale           float64
	ScalerGrowthFactor        float64
	ScalerBackoffFactor       float64
	ScalerGrowthInterval      int64
	SplitBatches              bool
	EvenBatches               *bool  // nil: true
	DispatchBatches           *bool  // nil: Accelerate's default, iterable datasets are dispatched
	UseSeedableSampler        bool   // shuffle with DataSeed (else the SetSeed seed) + epoch
	DataSeed                  *int64 // nil: none; must be >= 0
	DevicePlacement           *bool  // nil: true
	ProjectDir                string
	LoggingDir                string
	AutomaticCheckpointNaming bool
	TotalLimit                int64
	SaveOnEachNode            bool
	LogWith                   []string // "jsonl", "csv", "tensorboard", "mlflow", "wandb", "dvclive", "trackio", "aim", "comet_ml", "all"
	// Accelerate's kwargs_handlers (DistributedDataParallelKwargs,
	// InitProcessGroupKwargs, GradScalerKwargs, AutocastKwargs; one of each):
	// the fields each sets apply over the flat options above.
	KwargsHandlers []KwargsHandler
	// Accelerate's dataloader_config and project_config, instead of the flat
	// options of the same meaning (setting both ways is ErrInvalidArgument).
	DataLoaderConfig *DataLoaderConfiguration
	ProjectConfig    *ProjectConfiguration
	// Accelerate's rng_types: generators every process takes from process 0 at
	// each epoch's start of a prepared loader ("torch", "cuda", "generator");
	// nil: {"generator"}; an empty non-nil slice: none.
	RNGTypes []string
	// Accelerate's step_scheduler_with_optimizer; nil: true (a prepared scheduler
	// steps only after a real optimizer step, NumProcesses times without
	// SplitBatches); false: every Step call advances it once.
	StepSchedulerWithOptimizer *bool
}

var precisionNames = []string{"no", "bf16", "fp16", "fp8"}

// In accel_sharding_strategy's order.
var shardingNames = []string{"NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD"}

func (o AcceleratorOptions) native() (core.AcceleratorOptions, error) {
	o, err := o.applyConfigurations()
	if err != nil {
		return nil, err
	}
	precision := -1 // ACCEL_PRECISION_DEFAULT
	if o.MixedPrecision != "" {
		p, err := choice(o.MixedPrecision, "MixedPrecision", precisionNames...)
		if err != nil {
			return nil, err
		}
		precision = p
	}
	hook, err := choice(o.CommHook, "CommHook", "no", "fp16", "bf16")
	if err != nil {
		return nil, err
	}
	sharding := -1 // ACCEL_SHARDING_DEFAULT
	if o.ShardingStrategy != "" {
		if sharding, err = choice(o.ShardingStrategy, "ShardingStrategy", shardingNames...); err != nil {
			return nil, err
		}
	}
	if o.Timeout < 0 {
		return nil, &Error{Code: ErrInvalidArgument, Msg: fmt.Sprintf("Timeout %v is negative", o.Timeout)}
	}
	n := core.NewAcceleratorOptions()
	n.SetCpu(boolInt(o.CPU))
	n.SetMixed_precision(core.Accel_mixed_precision(precision))
	setIf(o.GradientAccumulationSteps, n.SetGradient_accumulation_steps)
	if o.SyncWithDataloader != nil {
		n.SetSync_with_dataloader(boolInt(*o.SyncWithDataloader))
	}
	n.SetSync_each_batch(boolInt(o.SyncEachBatch))
	n.SetAdjust_scheduler(boolInt(o.AdjustScheduler))
	if o.StepSchedulerWithOptimizer != nil {
		n.SetStep_scheduler_with_optimizer(boolInt(*o.StepSchedulerWithOptimizer))
	}
	setIf(o.Timeout.Milliseconds(), n.SetTimeout_ms)
	setIf(o.BucketCapMB, n.SetBucket_cap_mb)
	setIf(o.FirstBucketCapMB, n.SetFirst_bucket_cap_mb)
	if o.GradientAsBucketView != nil {
		n.SetGradient_as_bucket_view(boolInt(*o.GradientAsBucketView))
	}
	n.SetStatic_graph(boolInt(o.StaticGraph))
	n.SetFind_unused_parameters(boolInt(o.FindUnusedParameters))
	if o.BroadcastBuffers != nil {
		n.SetBroadcast_buffers(boolInt(*o.BroadcastBuffers))
	}
	n.SetComm_hook(core.Accel_comm_hook(hook))
	n.SetSharding_strategy(core.Accel_sharding_strategy(sharding))
	if o.FSDPMinNumParams != nil {
		n.SetFsdp_min_num_params(*o.FSDPMinNumParams)
	}
	if o.FSDPActivationCheckpointing != nil {
		n.SetFsdp_activation_checkpointing(boolInt(*o.FSDPActivationCheckpointing))
	}
	if o.FSDPBackwardPrefetch != nil {
		n.SetFsdp_backward_prefetch(boolInt(*o.FSDPBackwardPrefetch))
	}
	if o.FSDPForwardPrefetch != nil {
		n.SetFsdp_forward_prefetch(boolInt(*o.FSDPForwardPrefetch))
	}
	if o.CPUOffload != nil {
		n.SetCpu_offload(boolInt(*o.CPUOffload))
	}
	if o.FSDPStateDictType != "" {
		n.SetFsdp_state_dict_type(o.FSDPStateDictType)
	}
	if p := o.ParallelismConfig; p != nil {
		// 0 counts as 1 in the C options; all four 0 would mean "none", so a
		// config of all ones is sent as dp_replicate_size 1.
		replicate := p.DPReplicateSize
		if replicate == 0 {
			replicate = 1
		}
		n.SetParallelism_dp_replicate_size(replicate)
		n.SetParallelism_dp_shard_size(p.DPShardSize)
		n.SetParallelism_tp_size(p.TPSize)
		n.SetParallelism_cp_size(p.CPSize)
	}
	if o.FSDPTransformerLayerClsToWrap != nil {
		n.SetFsdp_transformer_layer_cls_to_wrap(strings.Join(o.FSDPTransformerLayerClsToWrap, ","))
	}
	setIf(o.ScalerInitScale, n.SetScaler_init_scale)
	setIf(o.ScalerGrowthFactor, n.SetScaler_growth_factor)
	setIf(o.ScalerBackoffFactor, n.SetScaler_backoff_factor)
	setIf(o.ScalerGrowthInterval, n.SetScaler_growth_interval)
	n.SetSplit_batches(boolInt(o.SplitBatches))
	if o.EvenBatches != nil {
		n.SetEven_batches(boolInt(*o.EvenBatches))
	}
	if o.DispatchBatches != nil {
		n.SetDispatch_batches(boolInt(*o.DispatchBatches))
	}
	n.SetUse_seedable_sampler(boolInt(o.UseSeedableSampler))
	if o.DataSeed != nil {
		n.SetData_seed(*o.DataSeed)
	}
	if o.DevicePlacement != nil {
		n.SetDevice_placement(boolInt(*o.DevicePlacement))
	}
	setIf(o.ProjectDir, n.SetProject_dir)
	setIf(o.LoggingDir, n.SetLogging_dir)
	n.SetAutomatic_checkpoint_naming(boolInt(o.AutomaticCheckpointNaming))
	setIf(o.TotalLimit, n.SetTotal_limit)
	n.SetSave_on_each_node(boolInt(o.SaveOnEachNode))
	setIf(strings.Join(o.LogWith, ","), n.SetLog_with)
	if err := o.applyHandlers(n); err != nil {
		core.DeleteAcceleratorOptions(n)
		return nil, err
	}
	return n, nil
}

// Accelerator is Accelerate's Accelerator: the process's place in the
// distributed run, and what prepares models, optimizers and loaders for it.
// Methods documented as collective must be called by every process.
type Accelerator struct {
	acceleratorHandle
	// Tracker directors handed over to the accelerator, which deletes them when
	// freed (tests check that through their cleared pointers).
	trackers []core.Tracker
	// The Go trackers by name, for GetTracker.
	customTrackers map[string]Tracker

	projectDir, loggingDir string // as given, with Accelerate's defaults

	// A ...Context call whose context ended first, still running (context.go).
	pendingMu sync.Mutex
	pending   *pendingCall

	// The models PrepareModel prepared, in order, until FreeMemory: the
	// save/load-state hooks receive them, as Accelerate's do.
	preparedModels []*Model
}

// NewAccelerator starts (or joins, under `accel launch`) the distributed run.
func NewAccelerator(options AcceleratorOptions) (*Accelerator, error) {
	opts, err := options.native()
	if err != nil {
		return nil, err
	}
	defer core.DeleteAcceleratorOptions(opts)
	h, err := call(func() core.Accelerator { return core.NewAccelerator(opts) })
	if err != nil {
		return nil, err
	}
	a := &Accelerator{projectDir: options.ProjectDir, loggingDir: options.LoggingDir}
	if c := options.ProjectConfig; c != nil {
		a.projectDir, a.loggingDir = c.ProjectDir, c.LoggingDir
	}
	if a.projectDir == "" {
		a.projectDir = "."
	}
	if a.loggingDir == "" {
		a.loggingDir = filepath.Join(a.projectDir, "logs")
	}
	a = own(a, h)
	if c := options.ProjectConfig; c != nil && c.Iteration > 0 {
		if err := a.SetSaveIteration(c.Iteration); err != nil {
			a.Close()
			return nil, err
		}
	}
	return a, nil
}

type acceleratorHandle = owned[core.Accelerator]

var acceleratorKind = handleKind[core.Accelerator]{name: "Accelerator", free: core.DeleteAccelerator}

// ProjectDir is Accelerate's project_dir: where checkpoints and logs go ("." by default).
func (a *Accelerator) ProjectDir() string { return a.projectDir }

// LoggingDir is Accelerate's logging_dir: tracker output (ProjectDir/logs by default).
func (a *Accelerator) LoggingDir() string { return a.loggingDir }

func (a *Accelerator) handle() (core.Accelerator, error) {
	h, err := live(a, &acceleratorKind)
	if err != nil {
		return nil, err
	}
	if err := a.busyError(); err != nil {
		return nil, err
	}
	return h, nil
}

// Close ends training if Go trackers were added, then frees the accelerator; closing twice is fine.
func (a *Accelerator) Close() error {
	h, ok := take[Accelerator, core.Accelerator](a)
	if !ok {
		return nil
	}
	if done := a.pendingDone(); done != nil {
		// An abandoned ...Context call still uses it: free it when that ends.
		go func() {
			<-done
			acceleratorKind.free(h)
		}()
		return nil
	}
	acceleratorKind.free(h)
	return nil
}

// do runs f on the accelerator's handle on a pinned thread.
func (a *Accelerator) do(f func(core.Accelerator)) error { return run(a, a.handle, f) }

func accelValue[T any](a *Accelerator, f func(core.Accelerator) T) (T, error) {
	var v T
	err := a.do(func(h core.Accelerator) { v = f(h) })
	return v, err
}

// ProcessIndex is this process's global rank.
func (a *Accelerator) ProcessIndex() (int, error) {
	return accelValue(a, func(h core.Accelerator) int { return h.Process_index() })
}

// LocalProcessIndex is this process's rank on its machine.
func (a *Accelerator) LocalProcessIndex() (int, error) {
	return accelValue(a, func(h core.Accelerator) int { return h.Local_process_index() })
}

// NumProcesses is the number of processes in the run.
func (a *Accelerator) NumProcesses() (int, error) {
	return accelValue(a, func(h core.Accelerator) int { return h.Num_processes() })
}

// IsMainProcess tells whether this is global rank 0.
func (a *Accelerator) IsMainProcess() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Is_main_process() })
}

// IsLastProcess tells whether this is the highest global rank (Accelerate's is_last_process).
func (a *Accelerator) IsLastProcess() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Process_index() == h.Num_processes()-1 })
}

// UseDistributed is Accelerate's use_distributed: the run has several processes.
func (a *Accelerator) UseDistributed() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Num_processes() > 1 })
}

// IsLocalMainProcess tells whether this is rank 0 on its machine.
func (a *Accelerator) IsLocalMainProcess() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Is_local_main_process() })
}

// DistributedType is "NO", "MULTI_CPU" or "MULTI_GPU".
func (a *Accelerator) DistributedType() (string, error) {
	v, err := accelValue(a, func(h core.Accelerator) int { return int(h.Distributed_type()) })
	names := []string{"NO", "MULTI_CPU", "MULTI_GPU"}
	if err != nil || v < 0 || v >= len(names) {
		return "", err
	}
	return names[v], nil
}

// MixedPrecision is "no", "bf16", "fp16" or "fp8".
func (a *Accelerator) MixedPrecision() (string, error) {
	v, err := accelValue(a, func(h core.Accelerator) int { return int(h.Mixed_precision()) })
	if err != nil || v < 0 || v >= len(precisionNames) {
		return "", err
	}
	return precisionNames[v], nil
}

// ShardingStrategy is the resolved strategy: "NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP" or "FULL_SHARD".
func (a *Accelerator) ShardingStrategy() (string, error) {
	v, err := accelValue(a, func(h core.Accelerator) int { return int(h.Sharding_strategy()) })
	if err != nil || v < 0 || v >= len(shardingNames) {
		return "", err
	}
	return shardingNames[v], nil
}

// CPUOffload reports whether sharded models keep master weights, gradients
// and optimizer state on the CPU.
func (a *Accelerator) CPUOffload() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Cpu_offload() })
}

// ParallelismConfig is Accelerate's: the sizes of a device mesh's dimensions
// (0 counts as 1). Tensor parallelism splits a JSON-spec model's transformer
// layers over TPSize consecutive ranks; context parallelism cuts a JSON graph
// model's sequence over CPSize ranks (which see the same batches); data
// parallelism runs over DPReplicateSize x DPShardSize, a sharding strategy
// over DPShardSize x CPSize.
type ParallelismConfig struct {
	DPReplicateSize, DPShardSize, TPSize, CPSize int64
}

// ParallelismConfig is the mesh in use; without one, DPReplicateSize is the
// number of processes and the rest 1, as in Accelerate.
func (a *Accelerator) ParallelismConfig() (ParallelismConfig, error) {
	sizes, err := accelValue(a, func(h core.Accelerator) []int64 { return takeInt64Vector(h.Parallelism_sizes()) })
	if err != nil || len(sizes) != 4 {
		return ParallelismConfig{}, err
	}
	return ParallelismConfig{DPReplicateSize: sizes[0], DPShardSize: sizes[1], TPSize: sizes[2], CPSize: sizes[3]}, nil
}

// ParallelismRanks is this process's coordinate along each dimension of the
// mesh (Accelerate's data_parallel_rank, data_parallel_shard_rank,
// tensor_parallel_rank and context_parallel_rank).
type ParallelismRanks struct {
	DPReplicateRank, DPShardRank, TPRank, CPRank int64
}

// ParallelismRanks is this process's place in the mesh: its index read
// row-major over dp_replicate x dp_shard x cp x tp, tp innermost (TPRank is
// the index modulo TPSize); without a ParallelismConfig, DPReplicateRank is
// the process index and the rest 0.
func (a *Accelerator) ParallelismRanks() (ParallelismRanks, error) {
	ranks, err := accelValue(a, func(h core.Accelerator) []int64 { return takeInt64Vector(h.Parallelism_ranks()) })
	if err != nil || len(ranks) != 4 {
		return ParallelismRanks{}, err
	}
	return ParallelismRanks{DPReplicateRank: ranks[0], DPShardRank: ranks[1], TPRank: ranks[2], CPRank: ranks[3]}, nil
}

// Device is the device tensors are placed on ("cpu", "cuda:0").
func (a *Accelerator) Device() (string, error) {
	return accelValue(a, func(h core.Accelerator) string { return h.Device() })
}

// Timeout is the collective and rendezvous timeout.
func (a *Accelerator) Timeout() (time.Duration, error) {
	ms, err := accelValue(a, func(h core.Accelerator) int64 { return h.Timeout_ms() })
	return time.Duration(ms) * time.Millisecond, err
}

// WaitForEveryone blocks until every process reaches it. Collective.
func (a *Accelerator) WaitForEveryone() error {
	return a.do(func(h core.Accelerator) { h.Wait_for_everyone() })
}

// Print prints a line once per machine, on its local main process (Accelerate's
// accelerator.print).
func (a *Accelerator) Print(args ...any) error {
	line := fmt.Sprintln(args...)
	line = line[:len(line)-1]
	return a.do(func(h core.Accelerator) { h.Print(line) })
}

// Printf is Print with a format. Print ends the line itself, so one trailing
// newline in the format (the habit from fmt.Printf) is not doubled.
func (a *Accelerator) Printf(format string, args ...any) error {
	line := strings.TrimSuffix(fmt.Sprintf(format, args...), "\n")
	return a.do(func(h core.Accelerator) { h.Print(line) })
}

// SeedOptions are Accelerate's set_seed keywords.
type SeedOptions struct {
	// DeviceSpecific: each process uses seed + its process index, so ranks
	// draw different (but reproducible) numbers.
	DeviceSpecific bool
	// Deterministic: LibTorch uses deterministic algorithms from now on in
	// this process (false leaves that setting as it is).
	Deterministic bool
}

// SetSeed seeds LibTorch's generators (CPU and CUDA) and Rand, this package's
// math/rand generator, with seed (plus the process index with
// DeviceSpecific), as Accelerate's set_seed seeds torch, random and numpy.
// At most one SeedOptions; none means the defaults. Not collective.
func (a *Accelerator) SetSeed(seed uint64, options ...SeedOptions) error {
	o, err := oneSeedOptions(options)
	if err != nil {
		return err
	}
	effective := seed
	if o.DeviceSpecific {
		index, err := a.ProcessIndex()
		if err != nil {
			return err
		}
		effective += uint64(index)
	}
	if err := a.do(func(h core.Accelerator) { h.Set_seed_ext(seed, o.DeviceSpecific, o.Deterministic) }); err != nil {
		return err
	}
	Rand.Seed(int64(effective))
	return nil
}

// FreeMemory makes the accelerator forget every prepared model, optimizer,
// scheduler and dataloader (SaveState then saves none of them), resets
// gradient accumulation and empties the CUDA cache (Accelerate's free_memory).
func (a *Accelerator) FreeMemory() error {
	err := a.do(func(h core.Accelerator) { h.Free_memory() })
	if err == nil {
		a.preparedModels = nil
	}
	return err
}

// Clear is FreeMemory (Accelerate's clear).
func (a *Accelerator) Clear() error { return a.FreeMemory() }

// Prepare prepares models, optimizers, data loaders and schedulers, in that
// order whatever the argument order (as Accelerate does). Collective.
func (a *Accelerator) Prepare(objects ...any) error {
	for _, o := range objects {
		switch o.(type) {
		case *Model, *Optimizer, *DataLoader, *Scheduler:
		default:
			return &Error{Code: ErrInvalidArgument, Msg: fmt.Sprintf("cannot prepare a %T", o)}
		}
	}
	for pass := 0; pass < 4; pass++ {
		for _, o := range objects {
			var err error
			switch v := o.(type) {
			case *Model:
				if pass == 0 {
					err = a.PrepareModel(v)
				}
			case *Optimizer:
				if pass == 1 {
					err = a.PrepareOptimizer(v)
				}
			case *DataLoader:
				if pass == 2 {
					err = a.PrepareDataLoader(v)
				}
			case *Scheduler:
				if pass == 3 {
					err = a.PrepareScheduler(v)
				}
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// withModel runs f with the accelerator's and model's handles.
func (a *Accelerator) withModel(m *Model, f func(core.Accelerator, core.Model)) error {
	mh, err := m.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(m)
	return a.do(func(h core.Accelerator) { f(h, mh) })
}

// PrepareModel wraps the model for the run (device, gradient sync). Collective.
// Prepared objects keep their accelerator alive.
func (a *Accelerator) PrepareModel(m *Model) error {
	err := a.withModel(m, func(h core.Accelerator, mh core.Model) { h.Prepare_model(mh) })
	if err == nil {
		m.accelerator = a
		a.preparedModels = append(a.preparedModels, m)
	}
	return err
}

// PrepareOptimizer makes the optimizer follow accumulation and mixed precision.
func (a *Accelerator) PrepareOptimizer(o *Optimizer) error {
	oh, err := o.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(o)
	err = a.do(func(h core.Accelerator) { h.Prepare_optimizer(oh) })
	if err == nil {
		o.accelerator = a
	}
	return err
}

// PrepareDataLoader shards the loader across processes.
func (a *Accelerator) PrepareDataLoader(l *DataLoader) error {
	lh, err := l.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(l)
	err = a.do(func(h core.Accelerator) { h.Prepare_dataloader(lh) })
	if err == nil {
		l.accelerator = a
	}
	return err
}

// PrepareScheduler makes the scheduler step with the optimizer's real steps.
func (a *Accelerator) PrepareScheduler(s *Scheduler) error {
	sh, err := s.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(s)
	err = a.do(func(h core.Accelerator) { h.Prepare_scheduler(sh) })
	if err == nil {
		s.accelerator = a
	}
	return err
}

// Backward computes gradients of loss (scaled for accumulation and fp16).
func (a *Accelerator) Backward(loss *Tensor) error {
	th, err := loss.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(loss)
	return a.do(func(h core.Accelerator) { h.Backward(th) })
}

// tensorOp runs a tensor-producing accelerator call.
func (a *Accelerator) tensorOp(t *Tensor, f func(core.Accelerator, core.Tensor) core.Tensor) (*Tensor, error) {
	th, err := t.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(t)
	var out core.Tensor
	err = a.do(func(h core.Accelerator) { out = f(h, th) })
	return tensorResult(out, err)
}

// Gather concatenates every process's tensor along dim 0. Collective.
func (a *Accelerator) Gather(t *Tensor) (*Tensor, error) {
	return a.tensorOp(t, func(h core.Accelerator, x core.Tensor) core.Tensor { return h.Gather(x) })
}

// GatherForMetrics is Gather without the samples repeated to even out the last round. Collective.
func (a *Accelerator) GatherForMetrics(t *Tensor) (*Tensor, error) {
	return a.tensorOp(t, func(h core.Accelerator, x core.Tensor) core.Tensor { return h.Gather_for_metrics(x) })
}

// ReduceOp selects Reduce's reduction.
type ReduceOp int

const (
	ReduceSum  ReduceOp = 0
	ReduceMean ReduceOp = 1
	ReduceNone ReduceOp = 2 // Accelerate's "none": the sum, not averaged
)

// Reduce sums or averages the tensor across processes. Collective.
func (a *Accelerator) Reduce(t *Tensor, op ReduceOp) (*Tensor, error) {
	return a.tensorOp(t, func(h core.Accelerator, x core.Tensor) core.Tensor {
		return h.Reduce(x, core.Accel_reduce_op(op))
	})
}

// Broadcast sends fromProcess's tensor to every process. Collective.
func (a *Accelerator) Broadcast(t *Tensor, fromProcess int) (*Tensor, error) {
	return a.tensorOp(t, func(h core.Accelerator, x core.Tensor) core.Tensor { return h.Broadcast(x, fromProcess) })
}

// PadAcrossProcesses pads dim to the largest size on any process. Collective.
func (a *Accelerator) PadAcrossProcesses(t *Tensor, dim int64, padValue float64, padFirst bool) (*Tensor, error) {
	return a.tensorOp(t, func(h core.Accelerator, x core.Tensor) core.Tensor {
		return h.Pad_across_processes(x, dim, padValue, padFirst)
	})
}

// SplitBetweenProcesses is this process's share of t's first dimension.
func (a *Accelerator) SplitBetweenProcesses(t *Tensor, applyPadding bool) (*Tensor, error) {
	return a.tensorOp(t, func(h core.Accelerator, x core.Tensor) core.Tensor {
		return h.Split_between_processes(x, applyPadding)
	})
}

// GatherObject is every process's bytes, in rank order. Collective.
func (a *Accelerator) GatherObject(data []byte) ([][]byte, error) {
	v, err := accelValue(a, func(h core.Accelerator) core.StringVector { return h.Gather_object(string(data)) })
	if err != nil {
		return nil, err
	}
	defer core.DeleteStringVector(v)
	out := make([][]byte, v.Size())
	for i := range out {
		out[i] = []byte(v.Get(i))
	}
	return out, nil
}

// SetTrigger raises this process's breakpoint flag (CheckTrigger sees it on every process).
func (a *Accelerator) SetTrigger() error { return a.do(func(h core.Accelerator) { h.Set_trigger() }) }

// CheckTrigger tells whether any process called SetTrigger, and resets it. Collective.
func (a *Accelerator) CheckTrigger() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Check_trigger() })
}
