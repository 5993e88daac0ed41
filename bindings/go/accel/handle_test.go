package accel

import (
	"runtime"
	"testing"
	"time"
)

// A nil wrapper behaves as a closed one: Close is a no-op and every other
// method returns ErrClosed naming the type (no panic), for every type that
// owns a SWIG object.
func TestNilWrappersAreClosed(t *testing.T) {
	var (
		tensor  *Tensor
		model   *Model
		opt     *Optimizer
		sched   *Scheduler
		dataset *Dataset
		loader  *DataLoader
		seqs    *Sequences
		bar     *ProgressBar
		acc     *Accelerator
	)
	for _, c := range []interface{ Close() error }{tensor, model, opt, sched, dataset, loader, seqs, bar, acc} {
		ok(t, c.Close())
	}
	wantEveryMethodClosed(t, tensor, model, opt, sched, dataset, loader, seqs, bar)
	wantClosed(t, acc.WaitForEveryone(), "Accelerator")
	// As an argument too.
	_, err := NewOptimizer(model, OptimizerOptions{})
	wantClosed(t, err, "Model")
	_, err = DatasetFromTensors(tensor, tensor)
	wantClosed(t, err, "Tensor")
}

// Closing twice is fine, and a closed wrapper's methods return ErrClosed.
func TestClosedWrappersStayClosed(t *testing.T) {
	x := must[*Tensor](t)(NewTensor([]float32{1, 2, 3, 4}, 4, 1))
	y := must[*Tensor](t)(NewTensor([]int64{0, 1, 0, 1}))
	model := must[*Model](t)(ModelFromJSON(`[{"type": "Linear", "in_features": 1, "out_features": 2}]`))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: SGD, LR: 0.1}))
	sched := must[*Scheduler](t)(NewScheduler(opt, SchedulerOptions{Kind: StepLR, StepSize: 1}))
	dataset := must[*Dataset](t)(DatasetFromTensors(x, y))
	loader := must[*DataLoader](t)(NewDataLoader(dataset, DataLoaderOptions{BatchSize: 2}))
	seqs := must[*Sequences](t)(SequencesFromLists([][]int64{{1, 2}, {3}}, 0))
	bar := must[*ProgressBar](t)(NewProgressBar(2, "test", true))
	for _, c := range []interface{ Close() error }{sched, opt, model, loader, dataset, seqs, bar, x, y} {
		ok(t, c.Close())
		ok(t, c.Close())
	}
	wantEveryMethodClosed(t, x, model, opt, sched, dataset, loader, seqs, bar)
	if s := x.String(); s != "Tensor(closed)" {
		t.Fatalf("closed tensor prints as %q", s)
	}
}

// finishSignal is a Tracker that says when it is finished.
type finishSignal struct{ finished chan struct{} }

func (f *finishSignal) StoreInitConfiguration(string, map[string]any) error { return nil }
func (f *finishSignal) Log(map[string]float64, int64) error                 { return nil }
func (f *finishSignal) Finish() error                                       { close(f.finished); return nil }

// A wrapper dropped unclosed is closed by its finalizer: an accelerator's
// Close finishes its Go trackers, so the tracker sees it.
func TestADroppedWrapperIsClosedByItsFinalizer(t *testing.T) {
	finished := make(chan struct{})
	func() {
		acc := must[*Accelerator](t)(NewAccelerator(AcceleratorOptions{CPU: true, ProjectDir: t.TempDir()}))
		ok(t, acc.AddTracker("signal", &finishSignal{finished}))
		ok(t, acc.InitTrackers("project", nil))
	}()
	deadline := time.After(30 * time.Second)
	for {
		runtime.GC()
		select {
		case <-finished:
			return
		case <-deadline:
			t.Fatal("the dropped accelerator was not closed by its finalizer")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// One method of each closed (or nil) wrapper returns ErrClosed naming its type.
func wantEveryMethodClosed(t *testing.T, tensor *Tensor, model *Model, opt *Optimizer, sched *Scheduler,
	dataset *Dataset, loader *DataLoader, seqs *Sequences, bar *ProgressBar) {
	t.Helper()
	_, err := tensor.Numel()
	wantClosed(t, err, "Tensor")
	_, err = model.NumParameters(false)
	wantClosed(t, err, "Model")
	wantClosed(t, opt.Step(), "Optimizer")
	wantClosed(t, sched.Step(), "Scheduler")
	_, err = dataset.Len()
	wantClosed(t, err, "Dataset")
	_, err = loader.Len()
	wantClosed(t, err, "DataLoader")
	_, err = seqs.Len()
	wantClosed(t, err, "Sequences")
	wantClosed(t, bar.Update(1), "ProgressBar")
}
