package accel

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Python Accelerate 0.22 trains 50 micro-steps with 2 processes and saves;
// 2 Go processes (this test binary under `accel launch`) load that directory
// and train 50 more, which must equal 100 uninterrupted Accelerate micro-steps
// to 1e-6 (issue 20). The Python side is
// bindings/python/tests/programs/accelerate_trainer.py; the data are its
// formula, rank r taking global batch i*world + r.
func TestGoContinuesAnAccelerateCheckpoint(t *testing.T) {
	launcher, python := os.Getenv("ACCEL_CLI"), os.Getenv("ACCEL_TEST_PYTHON")
	if launcher == "" || python == "" {
		t.Skip("ACCEL_CLI and ACCEL_TEST_PYTHON are not set; run through CTest")
	}
	trainer, err := filepath.Abs("../../python/tests/programs/accelerate_trainer.py")
	ok(t, err)
	for _, c := range []struct{ kind, schedule string }{{"sgd", "warmup"}, {"adamw", "onecycle"}} {
		dir := t.TempDir()
		launch := []string{"launch", "--nproc_per_node", "2", "--master_port", "0"}
		py := exec.Command(launcher, append(launch, python, trainer, c.kind, "50", dir, c.schedule, "2")...)
		py.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
		if out, err := py.CombinedOutput(); err != nil {
			t.Fatalf("%s/%s: Accelerate: %v\n%s", c.kind, c.schedule, err, out)
		}
		worker := exec.Command(launcher, append(launch, os.Args[0], "-test.run=^TestAccelerateCheckpointWorker$",
			"-test.count=1")...)
		worker.Env = append(os.Environ(), "ACCEL_GO_ROUNDTRIP="+strings.Join([]string{dir, c.kind, c.schedule}, ","))
		out, err := worker.CombinedOutput()
		if err != nil {
			t.Fatalf("%s/%s: %v\n%s", c.kind, c.schedule, err, out)
		}
		if !strings.Contains(string(out), "[rank 0] accelerate checkpoint ok 2") {
			t.Fatalf("%s/%s: no success line in\n%s", c.kind, c.schedule, out)
		}
	}
}

// roundtripBatch is the trainer's data(): sample k, feature j.
func roundtripBatch(t *testing.T, b int64) (*Tensor, *Tensor) {
	x, y := make([]float32, 0, 16), make([]float32, 0, 8)
	for k := 4 * b; k < 4*b+4; k++ {
		for j := int64(0); j < 4; j++ {
			x = append(x, float32(float64((k*7+j*13)%29)/14.0-1.0))
		}
		for j := int64(0); j < 2; j++ {
			y = append(y, float32(float64((k*5+j*11)%23)/11.0-1.0))
		}
	}
	return must[*Tensor](t)(NewTensor(x, 4, 4)), must[*Tensor](t)(NewTensor(y, 4, 2))
}

func TestAccelerateCheckpointWorker(t *testing.T) {
	args := strings.Split(os.Getenv("ACCEL_GO_ROUNDTRIP"), ",")
	if len(args) != 3 {
		t.Skip("run by TestGoContinuesAnAccelerateCheckpoint")
	}
	dir, kind, schedule := args[0], args[1], args[2]
	const steps, spec = 50, `[{"type": "Linear", "in_features": 4, "out_features": 8}, {"type": "Tanh"},
		{"type": "Linear", "in_features": 8, "out_features": 2}]`
	acc := newCPU(t, AcceleratorOptions{GradientAccumulationSteps: 2})
	rank := int64(must[int](t)(acc.ProcessIndex()))
	world := int64(must[int](t)(acc.NumProcesses()))
	model := must[*Model](t)(ModelFromJSON(spec))
	options := OptimizerOptions{Kind: AdamW, LR: 0.01}
	if kind == "sgd" {
		options = OptimizerOptions{Kind: SGD, LR: 0.05, Momentum: 0.9}
	}
	opt := must[*Optimizer](t)(NewOptimizer(model, options))
	schedulerOptions := SchedulerOptions{Kind: LinearWarmup, NumWarmupSteps: 10, NumTrainingSteps: 1000}
	if schedule == "onecycle" {
		schedulerOptions = SchedulerOptions{Kind: OneCycleLR, MaxLR: 2 * options.LR, TotalSteps: 1000}
	}
	sched := must[*Scheduler](t)(NewScheduler(opt, schedulerOptions))
	ok(t, acc.Prepare(model, opt, sched))
	ok(t, acc.LoadState(filepath.Join(dir, "checkpoint")))
	for i := int64(steps); i < 2*steps; i++ {
		x, y := roundtripBatch(t, i*world+rank)
		ok(t, acc.Accumulate(model, func() error {
			out := must[*Tensor](t)(model.Forward(x))
			loss := must[*Tensor](t)(out.Loss(MSE, y))
			defer CloseAll(out, loss)
			if err := acc.Backward(loss); err != nil {
				return err
			}
			if err := opt.Step(); err != nil {
				return err
			}
			if err := sched.Step(); err != nil {
				return err
			}
			return opt.ZeroGrad()
		}))
		CloseAll(x, y)
	}
	// Accelerate's uninterrupted run, as safetensors (accelerate_trainer.py writes final.safetensors).
	expected := must[*Model](t)(ModelFromJSON(spec))
	missing, unexpected, err := acc.LoadCheckpointInModel(expected, filepath.Join(dir, "final.safetensors"), true)
	ok(t, err)
	if missing != 0 || unexpected != 0 {
		t.Fatalf("final.safetensors: %d missing, %d unexpected", missing, unexpected)
	}
	ours, want := must[[]NamedTensor](t)(acc.GetStateDict(model)), must[[]NamedTensor](t)(acc.GetStateDict(expected))
	worst := 0.0
	for i := range ours {
		a, b := must[[]float32](t)(ours[i].Tensor.Float32s()), must[[]float32](t)(want[i].Tensor.Float32s())
		for j := range a {
			worst = math.Max(worst, math.Abs(float64(a[j])-float64(b[j])))
		}
	}
	// Not yet within CONTRIBUTING's policy: 50 + 50 float32 steps by two
	// implementations to 1e-6. The same runs through the C ABI
	// (tests/checkpoint/test_accelerate_roundtrip.py, C continuing Accelerate,
	// SGD/warmup and AdamW/onecycle) measured 0 and 2.1e-7 on an AMD EPYC
	// (AVX-512): a 4x margin for AdamW (not measured from Go separately).
	// Float64 on both sides is the fix (issue 36).
	if worst > 1e-6 {
		t.Fatalf("rank %d: largest difference from Accelerate %g", rank, worst)
	}
	fmt.Printf("[rank %d] accelerate checkpoint ok %d %.1e\n", rank, world, worst)
}
