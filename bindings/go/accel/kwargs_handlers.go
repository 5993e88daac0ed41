package accel

import (
	"fmt"
	"strings"
	"time"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// KwargsHandler is one of Accelerate's kwargs handlers, given in
// AcceleratorOptions.KwargsHandlers: DistributedDataParallelKwargs,
// InitProcessGroupKwargs, GradScalerKwargs or AutocastKwargs, at most one of
// each. Only the fields a handler sets (non-zero) apply, as Accelerate's
// to_kwargs passes only what differs from the defaults.
type KwargsHandler interface {
	applyTo(n core.AcceleratorOptions) error
	handlerName() string
}

// DistributedDataParallelKwargs is how prepared models sync gradients
// (docs/gradient-sync.md). CommHook is "", "no", "fp16" or "bf16"; PowerSGD
// hooks are refused.
type DistributedDataParallelKwargs struct {
	BucketCapMB          float64
	FindUnusedParameters bool
	BroadcastBuffers     *bool // nil: true
	GradientAsBucketView *bool // nil: libaccel's default, true
	StaticGraph          bool
	CommHook             string
}

// InitProcessGroupKwargs is the process group's backend ("gloo" on the CPU,
// "nccl" on CUDA; "": the device's), init method ("env://" or
// "tcp://HOST:PORT") and timeout (0: unchanged).
type InitProcessGroupKwargs struct {
	Backend    string
	InitMethod string
	Timeout    time.Duration
}

// GradScalerKwargs is fp16 dynamic loss scaling; Enabled false trains fp16
// without scaling.
type GradScalerKwargs struct {
	InitScale      float64
	GrowthFactor   float64
	BackoffFactor  float64
	GrowthInterval int64
	Enabled        *bool // nil: true
}

// AutocastKwargs: Enabled false runs prepared models' forward, and Autocast
// scopes begun with AutocastDefault, in float32 under a mixed precision;
// CacheEnabled switches LibTorch's autocast cast cache (nil: as is).
type AutocastKwargs struct {
	Enabled      *bool // nil: true
	CacheEnabled *bool
}

func (DistributedDataParallelKwargs) handlerName() string { return "DistributedDataParallelKwargs" }
func (InitProcessGroupKwargs) handlerName() string        { return "InitProcessGroupKwargs" }
func (GradScalerKwargs) handlerName() string              { return "GradScalerKwargs" }
func (AutocastKwargs) handlerName() string                { return "AutocastKwargs" }

func (k DistributedDataParallelKwargs) applyTo(n core.AcceleratorOptions) error {
	switch strings.ToLower(k.CommHook) {
	case "", "no":
	case "fp16":
		n.SetComm_hook(core.Accel_comm_hook(1))
	case "bf16":
		n.SetComm_hook(core.Accel_comm_hook(2))
	case "power_sgd", "batched_power_sgd":
		return invalid(fmt.Sprintf("DistributedDataParallelKwargs.CommHook %q is not supported by libaccel (no PowerSGD): use no, fp16 or bf16", k.CommHook))
	default:
		return invalid(fmt.Sprintf("DistributedDataParallelKwargs.CommHook %q is not one of no, fp16, bf16", k.CommHook))
	}
	setIf(k.BucketCapMB, n.SetBucket_cap_mb)
	if k.FindUnusedParameters {
		n.SetFind_unused_parameters(1)
	}
	if k.BroadcastBuffers != nil {
		n.SetBroadcast_buffers(boolInt(*k.BroadcastBuffers))
	}
	if k.GradientAsBucketView != nil {
		n.SetGradient_as_bucket_view(boolInt(*k.GradientAsBucketView))
	}
	if k.StaticGraph {
		n.SetStatic_graph(1)
	}
	return nil
}

func (k InitProcessGroupKwargs) applyTo(n core.AcceleratorOptions) error {
	if k.Timeout < 0 {
		return invalid(fmt.Sprintf("InitProcessGroupKwargs.Timeout %v is negative", k.Timeout))
	}
	setIf(k.Backend, n.SetBackend)
	setIf(k.InitMethod, n.SetInit_method)
	setIf(k.Timeout.Milliseconds(), n.SetTimeout_ms)
	return nil
}

func (k GradScalerKwargs) applyTo(n core.AcceleratorOptions) error {
	setIf(k.InitScale, n.SetScaler_init_scale)
	setIf(k.GrowthFactor, n.SetScaler_growth_factor)
	setIf(k.BackoffFactor, n.SetScaler_backoff_factor)
	setIf(k.GrowthInterval, n.SetScaler_growth_interval)
	if k.Enabled != nil {
		n.SetScaler_enabled(boolInt(*k.Enabled))
	}
	return nil
}

func (k AutocastKwargs) applyTo(n core.AcceleratorOptions) error {
	if k.Enabled != nil {
		n.SetAutocast_enabled(boolInt(*k.Enabled))
	}
	if k.CacheEnabled != nil {
		n.SetAutocast_cache_enabled(boolInt(*k.CacheEnabled))
	}
	return nil
}

// DataLoaderConfiguration is Accelerate's: how prepared loaders shard. nil
// fields keep Accelerate's defaults. NonBlocking and UseStatefulDataloader
// are reported as given (batches already reach a GPU without blocking;
// SaveState always records loader positions).
type DataLoaderConfiguration struct {
	SplitBatches          bool
	DispatchBatches       *bool // nil: iterable datasets are dispatched
	EvenBatches           *bool // nil: true
	UseSeedableSampler    bool
	DataSeed              *int64
	NonBlocking           bool
	UseStatefulDataloader bool
}

// ProjectConfiguration is Accelerate's: where checkpoints and logs go
// (LoggingDir "": ProjectDir/logs), automatic naming, how many automatic
// checkpoints to keep (0: all), the number of the next one and saving on
// each node.
type ProjectConfiguration struct {
	ProjectDir                string
	LoggingDir                string
	AutomaticCheckpointNaming bool
	TotalLimit                int64
	Iteration                 int64
	SaveOnEachNode            bool
}

func invalid(msg string) error { return &Error{Code: ErrInvalidArgument, Msg: msg} }

// applyConfigurations folds DataLoaderConfig and ProjectConfig into the flat
// options, refusing a value given both ways.
func (o AcceleratorOptions) applyConfigurations() (AcceleratorOptions, error) {
	if c := o.DataLoaderConfig; c != nil {
		if o.SplitBatches || o.EvenBatches != nil || o.DispatchBatches != nil || o.UseSeedableSampler || o.DataSeed != nil {
			return o, invalid("DataLoaderConfig and the flat data loader options (SplitBatches, EvenBatches, DispatchBatches, UseSeedableSampler, DataSeed) are both set; use one")
		}
		o.SplitBatches, o.EvenBatches, o.DispatchBatches = c.SplitBatches, c.EvenBatches, c.DispatchBatches
		o.UseSeedableSampler, o.DataSeed = c.UseSeedableSampler, c.DataSeed
	}
	if c := o.ProjectConfig; c != nil {
		if o.ProjectDir != "" || o.LoggingDir != "" || o.AutomaticCheckpointNaming || o.TotalLimit != 0 || o.SaveOnEachNode {
			return o, invalid("ProjectConfig and the flat project options (ProjectDir, LoggingDir, AutomaticCheckpointNaming, TotalLimit, SaveOnEachNode) are both set; use one")
		}
		if c.Iteration < 0 {
			return o, invalid(fmt.Sprintf("ProjectConfig.Iteration must be >= 0, got %d", c.Iteration))
		}
		o.ProjectDir, o.LoggingDir, o.AutomaticCheckpointNaming = c.ProjectDir, c.LoggingDir, c.AutomaticCheckpointNaming
		o.TotalLimit, o.SaveOnEachNode = c.TotalLimit, c.SaveOnEachNode
	}
	return o, nil
}

// applyHandlers writes the kwargs handlers, the RNG types and the data loader
// configuration's reported flags to the native options.
func (o AcceleratorOptions) applyHandlers(n core.AcceleratorOptions) error {
	seen := map[string]bool{}
	for _, h := range o.KwargsHandlers {
		if h == nil {
			return invalid("KwargsHandlers: a handler is nil")
		}
		if seen[h.handlerName()] {
			return invalid("You can only pass one " + h.handlerName() + " in KwargsHandlers")
		}
		seen[h.handlerName()] = true
		if err := h.applyTo(n); err != nil {
			return err
		}
	}
	if o.RNGTypes != nil {
		n.SetRng_types(strings.Join(o.RNGTypes, ","))
	}
	if c := o.DataLoaderConfig; c != nil {
		n.SetNon_blocking(boolInt(c.NonBlocking))
		n.SetUse_stateful_dataloader(boolInt(c.UseStatefulDataloader))
	}
	return nil
}

// SetSyncGradients is Accelerate's `accelerator.sync_gradients = sync`: whether
// this micro-step ends a window for the optimizer step and clipping.
func (a *Accelerator) SetSyncGradients(sync bool) error {
	return a.do(func(h core.Accelerator) { h.Set_sync_gradients(sync) })
}

// SetGradientAccumulationSteps is Accelerate's `accelerator.gradient_accumulation_steps = n`,
// from the next Accumulate on.
func (a *Accelerator) SetGradientAccumulationSteps(steps int64) error {
	return a.do(func(h core.Accelerator) { h.Set_gradient_accumulation_steps(steps) })
}

// SetEvenBatches is Accelerate's `accelerator.even_batches = even`, for
// loaders prepared from now on.
func (a *Accelerator) SetEvenBatches(even bool) error {
	return a.do(func(h core.Accelerator) { h.Set_even_batches(even) })
}

// DataLoaderConfig is the DataLoaderConfiguration in use.
func (a *Accelerator) DataLoaderConfig() (DataLoaderConfiguration, error) {
	var c DataLoaderConfiguration
	err := a.do(func(h core.Accelerator) {
		c.SplitBatches = h.Split_batches()
		even := h.Even_batches()
		c.EvenBatches = &even
		if d := h.Dispatch_batches(); d >= 0 {
			dispatch := d == 1
			c.DispatchBatches = &dispatch
		}
		c.UseSeedableSampler = h.Use_seedable_sampler()
		if s := h.Data_seed(); s >= 0 {
			c.DataSeed = &s
		}
		c.NonBlocking = h.Non_blocking()
		c.UseStatefulDataloader = h.Use_stateful_dataloader()
	})
	return c, err
}

// SynchronizeRNGStates is Accelerate's synchronize_rng_states: every process
// takes process 0's state of the named generators ("torch", "cuda";
// "generator" has no global state here). Collective.
func (a *Accelerator) SynchronizeRNGStates(rngTypes ...string) error {
	return a.do(func(h core.Accelerator) { h.Synchronize_rng_states(strings.Join(rngTypes, ",")) })
}

// MultiDevice is Accelerate's multi_device: several processes, each on its own GPU.
func (a *Accelerator) MultiDevice() (bool, error) {
	distributed, err := a.UseDistributed()
	if err != nil {
		return false, err
	}
	t, err := a.DistributedType()
	return distributed && t == "MULTI_GPU", err
}
