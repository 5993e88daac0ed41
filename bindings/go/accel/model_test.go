package accel

import (
	"math"
	"math/rand"
	"runtime"
	"testing"
)

func TestVersionAndFeatures(t *testing.T) {
	if v := Version(); len(v) < 5 {
		t.Fatalf("version %q", v)
	}
	if ABIVersion() != 0 || !HasFeature(FeatureGloo) {
		t.Fatal("abi version or gloo")
	}
	if StatusOK.String() != "ACCEL_OK" || ErrState.String() != "ACCEL_ERR_STATE" {
		t.Fatalf("status names %v %v", StatusOK, ErrState)
	}
}

func TestModelForwardAndLoss(t *testing.T) {
	model := must[*Model](t)(ModelFromJSON(linear))
	defer model.Close()
	if n := must[int64](t)(model.NumParameters(false)); n != 15 {
		t.Fatalf("parameters %d", n)
	}
	x := must[*Tensor](t)(NewTensor(make([]float32, 8), 2, 4))
	logits := must[*Tensor](t)(model.Forward(x))
	if shape := must[[]int64](t)(logits.Shape()); !equal(shape, []int64{2, 3}) {
		t.Fatalf("logits shape %v", shape)
	}
	loss := must[*Tensor](t)(logits.Loss(CrossEntropy, must[*Tensor](t)(NewTensor([]int64{0, 2}))))
	if shape := must[[]int64](t)(loss.Shape()); len(shape) != 0 {
		t.Fatalf("loss shape %v", shape)
	}
	if must[float64](t)(loss.Item()) <= 0 {
		t.Fatal("loss is not positive")
	}
	// int64 targets for MSE: an error from LibTorch, not a crash.
	_, err := logits.Loss(MSE, must[*Tensor](t)(NewTensor([]int64{0, 2})))
	if err == nil {
		t.Fatal("MSE against mismatched targets succeeded")
	}
}

func TestBadModelSpecAndInputsAreErrors(t *testing.T) {
	_, err := ModelFromJSON(`[{"type": "Linerar"}]`)
	wantError(t, err, ErrInvalidArgument, "Linerar")
	_, err = ModelFromTorchScript("/nonexistent/model.pt")
	if err == nil {
		t.Fatal("loading a missing TorchScript file succeeded")
	}
	model := must[*Model](t)(ModelFromJSON(linear))
	_, err = model.Forward(must[*Tensor](t)(NewTensor(make([]float32, 10), 2, 5)))
	if err == nil {
		t.Fatal("forward with 5 features into Linear(4) succeeded")
	}
	_, err = model.Forward(must[*Tensor](t)(NewTensor(make([]int64, 8), 2, 4)))
	if err == nil {
		t.Fatal("forward with int64 input succeeded")
	}
}

func TestTrainingReducesLoss(t *testing.T) {
	rng := rand.New(rand.NewSource(0))
	xs := make([]float32, 64*4)
	ys := make([]int64, 64)
	for i := range ys {
		for j := 0; j < 4; j++ {
			xs[i*4+j] = float32(rng.NormFloat64())
		}
		if xs[i*4] > 0 {
			ys[i] = 1
		}
	}
	acc := newCPU(t, AcceleratorOptions{})
	model := must[*Model](t)(ModelFromJSON(linear))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: AdamW, LR: 0.05}))
	ok(t, acc.Prepare(opt, model)) // any order: models are prepared first
	x := must[*Tensor](t)(NewTensor(xs, 64, 4))
	y := must[*Tensor](t)(NewTensor(ys))
	first, last := math.NaN(), 0.0
	for i := 0; i < 30; i++ {
		ok(t, opt.ZeroGrad())
		loss := must[*Tensor](t)(must[*Tensor](t)(model.Forward(x)).Loss(CrossEntropy, y))
		ok(t, acc.Backward(loss))
		ok(t, opt.Step())
		last = must[float64](t)(loss.Item())
		if i == 0 {
			first = last
		}
	}
	if last >= first*0.7 {
		t.Fatalf("loss went from %v to %v", first, last)
	}
}

func TestOptimizerOptionsAndLR(t *testing.T) {
	model := must[*Model](t)(ModelFromJSON(linear))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: SGD, LR: 0.1, Momentum: 0.9, Nesterov: true}))
	if lr := must[float64](t)(opt.LR()); math.Abs(lr-0.1) > 1e-12 {
		t.Fatalf("lr %v", lr)
	}
	ok(t, opt.SetLR(0.01))
	if lr := must[float64](t)(opt.LR()); math.Abs(lr-0.01) > 1e-12 {
		t.Fatalf("lr %v", lr)
	}
	_, err := NewOptimizer(model, OptimizerOptions{Kind: AdamW, LR: -1})
	wantError(t, err, ErrInvalidArgument, "lr")
	_, err = NewOptimizer(model, OptimizerOptions{Kind: OptimizerKind(42)})
	wantError(t, err, ErrInvalidArgument, "42")
	_, err = NewOptimizer(model, OptimizerOptions{WeightDecay: Ptr(-1.0)})
	wantError(t, err, ErrInvalidArgument, "weight_decay")
}

func TestSchedulerFollowsPyTorchSchedule(t *testing.T) {
	model := must[*Model](t)(ModelFromJSON(linear))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: SGD, LR: 1}))
	sched := must[*Scheduler](t)(NewScheduler(opt, SchedulerOptions{Kind: MultiStepLR, Milestones: []int64{2, 4}, Gamma: 0.5}))
	var lrs []float64
	for i := 0; i < 5; i++ {
		ok(t, opt.Step())
		ok(t, sched.Step())
		lrs = append(lrs, must[float64](t)(sched.LastLR()))
	}
	if !equal(lrs, []float64{1, 0.5, 0.5, 0.25, 0.25}) {
		t.Fatalf("lrs %v", lrs)
	}
	if e := must[int64](t)(sched.LastEpoch()); e != 5 {
		t.Fatalf("last epoch %d", e)
	}
	_, err := NewScheduler(opt, SchedulerOptions{Kind: ReduceLROnPlateau, Mode: "sideways"})
	wantError(t, err, ErrInvalidArgument, `Mode "sideways"`)
	plateau := must[*Scheduler](t)(NewScheduler(opt, SchedulerOptions{Kind: ReduceLROnPlateau, Patience: Ptr(int64(0)), Factor: 0.5}))
	ok(t, plateau.StepMetric(1))
	ok(t, plateau.StepMetric(2)) // worse, no patience: halve
	if lr := must[float64](t)(opt.LR()); math.Abs(lr-0.125) > 1e-12 {
		t.Fatalf("plateau lr %v", lr)
	}
}

func TestClosedObjectsAreErrors(t *testing.T) {
	model := must[*Model](t)(ModelFromJSON(linear))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{}))
	sched := must[*Scheduler](t)(NewScheduler(opt, SchedulerOptions{Kind: StepLR, StepSize: 1}))
	ok(t, sched.Close())
	ok(t, sched.Close())
	wantClosed(t, sched.Step(), "Scheduler")
	ok(t, opt.Close())
	wantClosed(t, opt.Step(), "Optimizer")
	_, err := NewScheduler(opt, SchedulerOptions{Kind: StepLR})
	wantClosed(t, err, "Optimizer")
	ok(t, model.Close())
	ok(t, model.Close())
	_, err = model.NumParameters(true)
	wantClosed(t, err, "Model")
	_, err = NewOptimizer(model, OptimizerOptions{})
	wantClosed(t, err, "Model")
	acc := newCPU(t, AcceleratorOptions{})
	wantClosed(t, acc.Prepare(model), "Model")
	ok(t, acc.Close())
	_, err = acc.NumProcesses()
	wantClosed(t, err, "Accelerator")
}

func TestOptimizerKeepsModelAliveAndFinalizersFree(t *testing.T) {
	opt := func() *Optimizer {
		model := must[*Model](t)(ModelFromJSON(linear))
		return must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{}))
	}()
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	ok(t, opt.ZeroGrad())
	ok(t, opt.Step())
	// Dropped objects are freed by their finalizers, without a double free on Close.
	for i := 0; i < 100; i++ {
		x, _ := NewTensor(make([]float32, 1000))
		if i%2 == 0 {
			x.Close()
		}
	}
	runtime.GC()
	runtime.GC()
}

func TestPreparedObjectsKeepTheirAcceleratorAlive(t *testing.T) {
	model := must[*Model](t)(ModelFromJSON(linear))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: SGD, LR: 0.1}))
	func() {
		acc := must[*Accelerator](t)(NewAccelerator(AcceleratorOptions{CPU: true}))
		ok(t, acc.Prepare(model, opt))
	}()
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	if model.accelerator == nil || opt.accelerator != model.accelerator || model.accelerator.h == nil {
		t.Fatal("the prepared objects let their accelerator go")
	}
	x := must[*Tensor](t)(NewTensor(make([]float32, 8), 2, 4))
	loss := must[*Tensor](t)(must[*Tensor](t)(model.Forward(x)).Loss(CrossEntropy, must[*Tensor](t)(NewTensor([]int64{0, 1}))))
	ok(t, model.accelerator.Backward(loss))
	ok(t, opt.Step())
}
