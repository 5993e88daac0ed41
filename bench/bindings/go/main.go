// Contestant (e): libaccel from Go, the loop of accel_bench.cpp through the Go
// binding. bench/run.sh builds it into <build>/bin/accel_bench_go first:
//
//	OMP_NUM_THREADS=2 build/bin/accel_bench_go --workload-dir bench/workloads --workload tiny --steps 600
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/libaccel/libaccel/bindings/go/accel"
)

var sampleShape = map[string][]int64{
	"tiny": {32, 784}, "mlp": {64, 784}, "cnn": {32, 1, 28, 28}, "sync": {8, 4096},
}

const batches = 4

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "accel_bench_go:", err)
		os.Exit(1)
	}
}

func run() error {
	workload := flag.String("workload", "tiny", "tiny, mlp, cnn or sync")
	steps := flag.Int64("steps", 100, "timed steps")
	warmup := flag.Int64("warmup", 5, "untimed steps first")
	flag.Int("threads", 0, "recorded; set through OMP_NUM_THREADS")
	dir := flag.String("workload-dir", "bench/workloads", "where <workload>.json lives")
	traceDir := flag.String("trace-dir", "", "then profile --trace-steps more steps into it (bench/crossing.py)")
	traceSteps := flag.Int64("trace-steps", 50, "steps profiled into --trace-dir")
	flag.Parse()
	shape, found := sampleShape[*workload]
	if !found {
		return fmt.Errorf("unknown workload %q", *workload)
	}
	spec, err := os.ReadFile(filepath.Join(*dir, *workload+".json"))
	if err != nil {
		return err
	}

	acc, err := accel.NewAccelerator(accel.AcceleratorOptions{})
	if err != nil {
		return err
	}
	defer acc.Close()
	model, err := accel.ModelFromJSON(string(spec))
	if err != nil {
		return err
	}
	opt, err := accel.NewOptimizer(model, accel.OptimizerOptions{Kind: accel.AdamW, LR: 1e-3, WeightDecay: accel.Ptr(0.01)})
	if err != nil {
		return err
	}
	if err := acc.PrepareModel(model); err != nil {
		return err
	}
	if err := acc.PrepareOptimizer(opt); err != nil {
		return err
	}
	rank, err := acc.ProcessIndex()
	if err != nil {
		return err
	}
	world, err := acc.NumProcesses()
	if err != nil {
		return err
	}

	random := rand.New(rand.NewSource(int64(1234 + rank)))
	sample := int64(1)
	for _, d := range shape[1:] {
		sample *= d
	}
	var xs, ys [batches]*accel.Tensor
	for b := range xs {
		x := make([]float32, shape[0]*sample)
		for k := range x {
			x[k] = float32(random.NormFloat64())
		}
		y := make([]int64, shape[0])
		for k := range y {
			y[k] = int64(random.Intn(10))
		}
		if xs[b], err = accel.NewTensor(x, shape...); err != nil {
			return err
		}
		if ys[b], err = accel.NewTensor(y, shape[0]); err != nil {
			return err
		}
	}

	var start time.Time
	for step := -*warmup; step < *steps; step++ {
		if step == 0 {
			if err := acc.WaitForEveryone(); err != nil {
				return err
			}
			start = time.Now()
		}
		b := (step + *warmup) % batches
		if err := trainStep(acc, model, opt, xs[b], ys[b]); err != nil {
			return err
		}
	}
	seconds := time.Since(start).Seconds()
	if *traceDir != "" { // after the timed steps: the profiler slows what it records
		err := acc.Profile(*traceDir, func() error {
			for step := int64(0); step < *traceSteps; step++ {
				if err := trainStep(acc, model, opt, xs[step%batches], ys[step%batches]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	rate := float64(*steps) / seconds
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	threads, _ := strconv.Atoi(os.Getenv("OMP_NUM_THREADS"))
	fmt.Printf("BENCH_RESULT {\"contestant\":\"accel_go\",\"workload\":%q,\"rank\":%d,\"nproc\":%d,\"threads\":%d,"+
		"\"steps\":%d,\"seconds\":%.4f,\"steps_per_s\":%.3f,\"samples_per_s\":%.1f,\"peak_rss_mb\":%.1f}\n",
		*workload, rank, world, threads, *steps, seconds, rate, rate*float64(shape[0])*float64(world),
		float64(usage.Maxrss)/1024)
	accel.CloseAll(xs[:]...)
	accel.CloseAll(ys[:]...)
	return nil
}

func trainStep(acc *accel.Accelerator, model *accel.Model, opt *accel.Optimizer, x, y *accel.Tensor) error {
	if err := opt.ZeroGrad(); err != nil {
		return err
	}
	logits, err := model.Forward(x)
	if err != nil {
		return err
	}
	defer logits.Close()
	loss, err := logits.Loss(accel.CrossEntropy, y)
	if err != nil {
		return err
	}
	defer loss.Close()
	if err := acc.Backward(loss); err != nil {
		return err
	}
	return opt.Step()
}
