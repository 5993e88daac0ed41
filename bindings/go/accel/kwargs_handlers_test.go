package accel

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

const linear64 = `[{"type": "Linear", "in_features": 64, "out_features": 4}]`

func TestKwargsHandlersReachTheAccelerator(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{KwargsHandlers: []KwargsHandler{
		InitProcessGroupKwargs{Backend: "gloo", InitMethod: "env://", Timeout: 800 * time.Second},
		DistributedDataParallelKwargs{BucketCapMB: 15, FindUnusedParameters: true, CommHook: "bf16"},
		GradScalerKwargs{Enabled: new(bool)},
	}})
	if got := must[time.Duration](t)(acc.Timeout()); got != 800*time.Second {
		t.Fatalf("timeout %v, want 800s", got)
	}
	if must[bool](t)(acc.UseDistributed()) || must[bool](t)(acc.MultiDevice()) {
		t.Fatal("one process reports use_distributed or multi_device")
	}
}

func TestKwargsHandlersRefusals(t *testing.T) {
	_, err := NewAccelerator(AcceleratorOptions{CPU: true, KwargsHandlers: []KwargsHandler{GradScalerKwargs{}, GradScalerKwargs{}}})
	wantError(t, err, ErrInvalidArgument, "You can only pass one GradScalerKwargs in KwargsHandlers")
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, KwargsHandlers: []KwargsHandler{DistributedDataParallelKwargs{CommHook: "power_sgd"}}})
	wantError(t, err, ErrInvalidArgument, "no PowerSGD")
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, KwargsHandlers: []KwargsHandler{InitProcessGroupKwargs{Backend: "nccl"}}})
	wantError(t, err, ErrInvalidArgument, `backend "nccl" needs CUDA devices`)
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, KwargsHandlers: []KwargsHandler{InitProcessGroupKwargs{Backend: "mpi"}}})
	wantError(t, err, ErrUnsupported, `backend "mpi"`)
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, RNGTypes: []string{"torch", "dice"}})
	wantError(t, err, ErrInvalidArgument, `"dice" is not one of torch, cuda, generator`)
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, SplitBatches: true, DataLoaderConfig: &DataLoaderConfiguration{}})
	wantError(t, err, ErrInvalidArgument, "DataLoaderConfig and the flat data loader options")
}

func forward64(t *testing.T, options AcceleratorOptions) []float32 {
	t.Helper()
	options.CPU = true
	acc := newCPU(t, options)
	ok(t, acc.SetSeed(3))
	model := must[*Model](t)(ModelFromJSON(linear64))
	defer model.Close()
	ok(t, acc.Prepare(model))
	input := make([]float32, 64)
	for i := range input {
		input[i] = 0.37*float32(i) - 11.1
	}
	x := must[*Tensor](t)(NewTensor(input, 1, 64))
	return must[[]float32](t)(must[*Tensor](t)(model.Forward(x)).Float32s())
}

func TestAutocastKwargsTurnAutocastOff(t *testing.T) {
	off := false
	fp32 := forward64(t, AcceleratorOptions{MixedPrecision: "no"})
	bf16 := forward64(t, AcceleratorOptions{MixedPrecision: "bf16"})
	disabled := forward64(t, AcceleratorOptions{MixedPrecision: "bf16", KwargsHandlers: []KwargsHandler{AutocastKwargs{Enabled: &off}}})
	// Off: float32 kernels, bit for bit; on: bfloat16 changes low bits (tests/capi/test_kwargs_api.c).
	if !equal(fp32, disabled) || equal(fp32, bf16) {
		t.Fatalf("fp32 %v, bf16 %v, bf16 with autocast off %v", fp32, bf16, disabled)
	}
}

func TestDataLoaderConfigurationAndSetters(t *testing.T) {
	even, seed := false, int64(7)
	acc := newCPU(t, AcceleratorOptions{GradientAccumulationSteps: 2, DataLoaderConfig: &DataLoaderConfiguration{
		SplitBatches: true, EvenBatches: &even, UseSeedableSampler: true, DataSeed: &seed, NonBlocking: true, UseStatefulDataloader: true}})
	c := must[DataLoaderConfiguration](t)(acc.DataLoaderConfig())
	if !c.SplitBatches || *c.EvenBatches || c.DispatchBatches != nil || !c.UseSeedableSampler || *c.DataSeed != 7 || !c.NonBlocking || !c.UseStatefulDataloader {
		t.Fatalf("DataLoaderConfig %+v", c)
	}
	ok(t, acc.SetEvenBatches(true))
	if c = must[DataLoaderConfiguration](t)(acc.DataLoaderConfig()); !*c.EvenBatches {
		t.Fatal("SetEvenBatches(true) did not apply")
	}
	model := must[*Model](t)(ModelFromJSON(linear64))
	defer model.Close()
	ok(t, acc.Prepare(model))
	seen := ""
	window := func(n int) {
		for i := 0; i < n; i++ {
			ok(t, acc.Accumulate(model, func() error {
				if must[bool](t)(acc.SyncGradients()) {
					seen += "1"
				} else {
					seen += "0"
				}
				return nil
			}))
		}
	}
	window(4)
	ok(t, acc.SetGradientAccumulationSteps(3))
	window(5)
	// Accelerate's _do_sync: the micro-step counter runs on across the change.
	if seen != "010101001" {
		t.Fatalf("sync_gradients over the micro-steps: %s", seen)
	}
	wantError(t, acc.SetGradientAccumulationSteps(0), ErrInvalidArgument, "gradient_accumulation_steps must be >= 1, got 0")
	ok(t, acc.Accumulate(model, func() error {
		ok(t, acc.SetSyncGradients(true))
		if !must[bool](t)(acc.SyncGradients()) {
			t.Fatal("SetSyncGradients(true) did not apply")
		}
		return nil
	}))
	ok(t, acc.SynchronizeRNGStates("torch", "generator")) // one process: nothing to take
}

func TestProjectConfiguration(t *testing.T) {
	dir := t.TempDir()
	acc := newCPU(t, AcceleratorOptions{ProjectConfig: &ProjectConfiguration{ProjectDir: dir, AutomaticCheckpointNaming: true, Iteration: 3}})
	model := must[*Model](t)(ModelFromJSON(linear64))
	defer model.Close()
	ok(t, acc.Prepare(model))
	must[string](t)(acc.SaveState(""))
	if _, err := os.Stat(filepath.Join(dir, "checkpoints", "checkpoint_3")); err != nil {
		t.Fatal(err)
	}
	if acc.ProjectDir() != dir || acc.LoggingDir() != filepath.Join(dir, "logs") {
		t.Fatalf("ProjectDir %q LoggingDir %q", acc.ProjectDir(), acc.LoggingDir())
	}
}
