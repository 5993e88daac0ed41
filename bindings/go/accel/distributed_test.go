package accel

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The Go binding across real processes: this test starts the test binary
// itself under `accel launch`, and TestDistributedWorker runs in every rank.
func TestDistributedThroughAccelLaunch(t *testing.T) {
	launcher := os.Getenv("ACCEL_CLI")
	if launcher == "" {
		t.Skip("ACCEL_CLI (the accel command) is not set; run through CTest")
	}
	for _, nproc := range []int{2, 3} {
		dir := t.TempDir()
		cmd := exec.Command(launcher, "launch", "--nproc_per_node", fmt.Sprint(nproc), "--master_port", "0",
			os.Args[0], "-test.run=^TestDistributedWorker$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ACCEL_GO_WORKER_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%d processes: %v\n%s", nproc, err, out)
		}
		if want := fmt.Sprintf("[rank 0] ok %d", nproc); !strings.Contains(string(out), want) {
			t.Fatalf("no %q in\n%s", want, out)
		}
	}
}

// samples21: x = [i/21, (i%5)/5, 1, -1], y = i % 3; 21 is not divisible by the
// process counts, so the last round is completed from the start.
type samples21 struct{}

func (samples21) Len() int64 { return 21 }
func (samples21) Get(i int64, s *Sample) error {
	if err := s.SetFloat32(0, float32(i)/21, float32(i%5)/5, 1, -1); err != nil {
		return err
	}
	return s.SetInt64(1, i%3)
}

// forEachBatch hands each batch to fn before reading the next: the loader's
// end-of-epoch state drives accumulation and GatherForMetrics.
func forEachBatch(t *testing.T, loader *DataLoader, fn func(batch []*Tensor)) {
	t.Helper()
	for {
		batch, err := loader.Next()
		ok(t, err)
		if batch == nil {
			return
		}
		fn(batch)
		CloseAll(batch...)
	}
}

func TestDistributedWorker(t *testing.T) {
	dir := os.Getenv("ACCEL_GO_WORKER_DIR")
	if dir == "" {
		t.Skip("run by TestDistributedThroughAccelLaunch")
	}
	acc := newCPU(t, AcceleratorOptions{GradientAccumulationSteps: 2, ProjectDir: dir})
	ok(t, acc.SetSeed(0))
	nproc := must[int](t)(acc.NumProcesses())
	rank := must[int](t)(acc.ProcessIndex())
	if d := must[string](t)(acc.DistributedType()); d != "MULTI_CPU" {
		t.Fatalf("distributed type %q", d)
	}
	model := must[*Model](t)(ModelFromJSON(linear))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: SGD, LR: 0.5}))
	ds := must[*Dataset](t)(NewMapDataset(samples21{}, Field{DType: Float32, Shape: []int64{4}}, Field{DType: Int64}))
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2, Shuffle: true, Seed: 1, NumWorkers: 1}))
	ok(t, acc.Prepare(model, opt, loader))
	forEachBatch(t, loader, func(batch []*Tensor) {
		ok(t, acc.Accumulate(model, func() error {
			logits, err := model.Forward(batch[0])
			if err != nil {
				return err
			}
			loss, err := logits.Loss(CrossEntropy, batch[1])
			if err != nil {
				return err
			}
			if err := acc.Backward(loss); err != nil {
				return err
			}
			if err := opt.Step(); err != nil {
				return err
			}
			return opt.ZeroGrad()
		}))
	})

	// Replicas stay identical: everyone's output on the same input.
	probe := must[*Tensor](t)(NewTensor([]float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 4, 4))
	outputs := must[[]float32](t)(must[*Tensor](t)(acc.Gather(must[*Tensor](t)(model.Forward(probe)))).Float32s())
	for r := 1; r < nproc; r++ {
		if !equal(outputs[:12], outputs[12*r:12*(r+1)]) {
			t.Fatalf("replica %d diverged", r)
		}
	}

	// GatherForMetrics sees every sample exactly once.
	var labels []int64
	forEachBatch(t, loader, func(batch []*Tensor) {
		labels = append(labels, must[[]int64](t)(must[*Tensor](t)(acc.GatherForMetrics(batch[1])).Int64s())...)
	})
	sort.Slice(labels, func(i, j int) bool { return labels[i] < labels[j] })
	var want []int64
	for i := int64(0); i < 21; i++ {
		want = append(want, i%3)
	}
	sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
	if !equal(labels, want) {
		t.Fatalf("gathered labels %v", labels)
	}

	// Collectives on Go values.
	objects := must[[][]byte](t)(acc.GatherObject([]byte(fmt.Sprintf("rank %d", rank))))
	for r, o := range objects {
		if string(o) != fmt.Sprintf("rank %d", r) || len(objects) != nproc {
			t.Fatalf("gather object %q", objects)
		}
	}
	mine := must[*Tensor](t)(NewTensor([]float64{float64(rank + 1)}))
	sum := must[[]float64](t)(must[*Tensor](t)(acc.Reduce(mine, ReduceSum)).Float64s())
	if sum[0] != float64(nproc*(nproc+1)/2) {
		t.Fatalf("reduce sum %v", sum)
	}
	from := must[[]float64](t)(must[*Tensor](t)(acc.Broadcast(mine, nproc-1)).Float64s())
	if from[0] != float64(nproc) {
		t.Fatalf("broadcast %v", from)
	}

	// A checkpoint with a Go object: as in Accelerate, the main process's state
	// is written and every process loads it.
	state := &counterState{value: []byte(fmt.Sprintf("state of rank %d", rank))}
	ok(t, acc.RegisterForCheckpointing(state))
	ckpt := filepath.Join(dir, "ckpt")
	must[string](t)(acc.SaveState(ckpt))
	state.value = nil
	ok(t, acc.LoadState(ckpt))
	if string(state.value) != "state of rank 0" {
		t.Fatalf("restored %q", state.value)
	}
	ok(t, acc.WaitForEveryone())
	ok(t, acc.Printf("ok %d", nproc))
}
