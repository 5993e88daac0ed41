package accel

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestAcceleratorPropertiesSingleProcess(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{GradientAccumulationSteps: 3, Timeout: 90 * time.Second})
	if n := must[int](t)(acc.NumProcesses()); n != 1 {
		t.Fatalf("%d processes", n)
	}
	if i := must[int](t)(acc.ProcessIndex()); i != 0 {
		t.Fatalf("index %d", i)
	}
	if i := must[int](t)(acc.LocalProcessIndex()); i != 0 {
		t.Fatalf("local index %d", i)
	}
	if !must[bool](t)(acc.IsMainProcess()) || !must[bool](t)(acc.IsLocalMainProcess()) {
		t.Fatal("not the main process")
	}
	if d := must[string](t)(acc.Device()); d != "cpu" {
		t.Fatalf("device %q", d)
	}
	if p := must[string](t)(acc.MixedPrecision()); p != "no" {
		t.Fatalf("precision %q", p)
	}
	if d := must[string](t)(acc.DistributedType()); d != "NO" {
		t.Fatalf("distributed type %q", d)
	}
	if n := must[int64](t)(acc.GradientAccumulationSteps()); n != 3 {
		t.Fatalf("accumulation steps %d", n)
	}
	if d := must[time.Duration](t)(acc.Timeout()); d != 90*time.Second {
		t.Fatalf("timeout %v", d)
	}
	ok(t, acc.SetSeed(1))
	ok(t, acc.WaitForEveryone())
	ok(t, acc.Print("hello from", "go"))
	ok(t, acc.FreeMemory())
	if s := must[float64](t)(acc.LossScale()); s != 1 {
		t.Fatalf("loss scale %v", s)
	}
}

func TestAcceleratorRejectsBadOptions(t *testing.T) {
	_, err := NewAccelerator(AcceleratorOptions{MixedPrecision: "fp64"})
	wantError(t, err, ErrInvalidArgument, `MixedPrecision "fp64"`)
	_, err = NewAccelerator(AcceleratorOptions{CommHook: "int4"})
	wantError(t, err, ErrInvalidArgument, `CommHook "int4"`)
	_, err = NewAccelerator(AcceleratorOptions{ShardingStrategy: "ZERO_9"})
	wantError(t, err, ErrInvalidArgument, `ShardingStrategy "ZERO_9"`)
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, ShardingStrategy: "HYBRID_SHARD", CommHook: "fp16"})
	wantError(t, err, ErrUnsupported, "HYBRID_SHARD")
	hybrid := newCPU(t, AcceleratorOptions{ShardingStrategy: "HYBRID_SHARD"})
	if s := must[string](t)(hybrid.ShardingStrategy()); s != "HYBRID_SHARD" {
		t.Fatalf("ShardingStrategy() = %q", s)
	}
	sharded := newCPU(t, AcceleratorOptions{ShardingStrategy: "SHARD_GRAD_OP"})
	if s := must[string](t)(sharded.ShardingStrategy()); s != "SHARD_GRAD_OP" {
		t.Fatalf("sharding strategy %q", s)
	}
	_, err = NewAccelerator(AcceleratorOptions{BucketCapMB: -1})
	wantError(t, err, ErrInvalidArgument, "bucket_cap_mb")
	_, err = NewAccelerator(AcceleratorOptions{Timeout: -time.Second})
	wantError(t, err, ErrInvalidArgument, "negative")
	acc := newCPU(t, AcceleratorOptions{})
	wantError(t, acc.Prepare("a string"), ErrInvalidArgument, "cannot prepare a string")
}

// Accelerate's accelerator.step counts micro-steps; step_scheduler_with_optimizer
// decides whether a prepared scheduler waits for the optimizer.
func TestAccumulationStepAndStepSchedulerWithOptimizer(t *testing.T) {
	stepsInFourMicroSteps := func(withOptimizer *bool) int64 {
		acc := newCPU(t, AcceleratorOptions{GradientAccumulationSteps: 2, StepSchedulerWithOptimizer: withOptimizer})
		model := must[*Model](t)(ModelFromJSON(linear))
		opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: SGD, LR: 1}))
		sched := must[*Scheduler](t)(NewScheduler(opt, SchedulerOptions{Kind: ExponentialLR, Gamma: 0.5}))
		ok(t, acc.Prepare(model, opt, sched))
		var counted []int64
		for i := 0; i < 4; i++ {
			ok(t, acc.Accumulate(model, func() error {
				counted = append(counted, must[int64](t)(acc.AccumulationStep()))
				if err := opt.Step(); err != nil {
					return err
				}
				return sched.Step()
			}))
		}
		if !equal(counted, []int64{1, 2, 3, 4}) {
			t.Fatalf("accumulation steps %v", counted)
		}
		return must[int64](t)(sched.LastEpoch())
	}
	no := false
	if got := stepsInFourMicroSteps(nil); got != 2 {
		t.Fatalf("with the optimizer: %d scheduler steps, want 2", got)
	}
	if got := stepsInFourMicroSteps(&no); got != 4 {
		t.Fatalf("without: %d scheduler steps, want 4", got)
	}
	if n := must[int](t)(CUDADeviceCount()); n < 0 {
		t.Fatalf("CUDADeviceCount %d", n)
	}
}

func TestAccumulateSyncsEveryNthStepAndScopesAlwaysEnd(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{GradientAccumulationSteps: 2})
	model := must[*Model](t)(ModelFromJSON(linear))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: SGD, LR: 0.1}))
	ok(t, acc.Prepare(model, opt))
	x := must[*Tensor](t)(NewTensor(make([]float32, 8), 2, 4))
	y := must[*Tensor](t)(NewTensor([]int64{0, 1}))
	var syncs []bool
	var skipped []bool
	for i := 0; i < 4; i++ {
		err := acc.Accumulate(model, func() error {
			loss, err := must[*Tensor](t)(model.Forward(x)).Loss(CrossEntropy, y)
			if err != nil {
				return err
			}
			if err := acc.Backward(loss); err != nil {
				return err
			}
			syncs = append(syncs, must[bool](t)(acc.SyncGradients()))
			if err := opt.Step(); err != nil {
				return err
			}
			skipped = append(skipped, must[bool](t)(opt.StepWasSkipped()))
			return opt.ZeroGrad()
		})
		ok(t, err)
	}
	// StepWasSkipped is about fp16 overflow only, as in Accelerate.
	if !equal(syncs, []bool{false, true, false, true}) || contains(skipped, true) {
		t.Fatalf("syncs %v skipped %v", syncs, skipped)
	}
	// The body's error comes back and the scope still ends: the next Accumulate works.
	sentinel := errors.New("body failed")
	if err := acc.Accumulate(model, func() error { return sentinel }); !errors.Is(err, sentinel) {
		t.Fatalf("got %v", err)
	}
	ok(t, acc.Accumulate(model, func() error { return nil }))
	// Explicit begin/end with defer.
	func() {
		ok(t, acc.AccumulateBegin(model))
		defer func() { ok(t, acc.AccumulateEnd(model)) }()
	}()
	ok(t, acc.NoSync(model, func() error { return nil }))
	ok(t, acc.Autocast(true, func() error { return nil }))
	ok(t, acc.MainProcessFirst(func() error { return nil }))
	ok(t, acc.LocalMainProcessFirst(func() error { return nil }))
	ok(t, acc.JoinUnevenInputs(func() error { return nil }))
	norm := must[float64](t)(acc.ClipGradNorm(model, 1, 2))
	if norm < 0 {
		t.Fatalf("norm %v", norm)
	}
	ok(t, acc.ClipGradValue(model, 0.5))
	ok(t, acc.UnscaleGradients(opt))
}

func TestCollectivesSingleProcess(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	x := must[*Tensor](t)(NewTensor([]float32{1, 2, 3, 4}, 2, 2))
	g := must[[]float32](t)(must[*Tensor](t)(acc.Gather(x)).Float32s())
	if !equal(g, []float32{1, 2, 3, 4}) {
		t.Fatalf("gather %v", g)
	}
	m := must[[]float32](t)(must[*Tensor](t)(acc.Reduce(x, ReduceMean)).Float32s())
	if !equal(m, []float32{1, 2, 3, 4}) {
		t.Fatalf("reduce %v", m)
	}
	b := must[[]float32](t)(must[*Tensor](t)(acc.Broadcast(x, 0)).Float32s())
	if !equal(b, g) {
		t.Fatalf("broadcast %v", b)
	}
	_ = must[*Tensor](t)(acc.PadAcrossProcesses(x, 0, 0, false))
	_ = must[*Tensor](t)(acc.SplitBetweenProcesses(x, false))
	_, err := acc.Broadcast(x, 3)
	wantError(t, err, ErrInvalidArgument, "3")
	objs := must[[][]byte](t)(acc.GatherObject([]byte("a\x00b")))
	if len(objs) != 1 || string(objs[0]) != "a\x00b" {
		t.Fatalf("gather object %q", objs)
	}
	ok(t, acc.SetTrigger())
	if !must[bool](t)(acc.CheckTrigger()) || must[bool](t)(acc.CheckTrigger()) {
		t.Fatal("trigger not seen once")
	}
	closed := must[*Tensor](t)(NewTensor([]float32{1}))
	closed.Close()
	_, err = acc.Gather(closed)
	wantClosed(t, err, "Tensor")
}

// stdoutOf runs f with the process's file descriptor 1 (where the library
// prints) redirected into a pipe, and returns what was written.
func stdoutOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	ok(t, err)
	saved, err := syscall.Dup(1)
	ok(t, err)
	ok(t, syscall.Dup3(int(w.Fd()), 1, 0))
	f()
	ok(t, syscall.Dup3(saved, 1, 0))
	ok(t, syscall.Close(saved))
	ok(t, w.Close())
	out, err := io.ReadAll(r)
	ok(t, err)
	return string(out)
}

func TestPrintfEndsTheLineOnce(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	out := stdoutOf(t, func() {
		ok(t, acc.Printf("step %d\n", 1))
		ok(t, acc.Printf("step %d", 2))
		ok(t, acc.Print("step", 3))
	})
	if out != "step 1\nstep 2\nstep 3\n" {
		t.Fatalf("printed %q", out)
	}
}
