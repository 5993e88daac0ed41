package accel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type recorder struct {
	run    string
	config map[string]any
	logs   []map[string]float64
	steps  []int64
	done   bool
	fail   bool
}

func (r *recorder) StoreInitConfiguration(run string, config map[string]any) error {
	r.run, r.config = run, config
	return nil
}
func (r *recorder) Log(values map[string]float64, step int64) error {
	if r.fail {
		return errors.New("tracker is offline")
	}
	r.logs = append(r.logs, values)
	r.steps = append(r.steps, step)
	return nil
}
func (r *recorder) Finish() error { r.done = true; return nil }

func TestGoTrackerGetsConfigValuesAndFinish(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{ProjectDir: t.TempDir()})
	rec := &recorder{}
	ok(t, acc.AddTracker("recorder", rec))
	ok(t, acc.InitTrackers("project", map[string]any{"lr": 0.5, "name": "go"}))
	if !must[bool](t)(acc.HasTracker("recorder")) || must[bool](t)(acc.HasTracker("nope")) {
		t.Fatal("HasTracker")
	}
	ok(t, acc.Log(map[string]float64{"loss": 1.5, "acc": 0.25}, 3))
	ok(t, acc.Log(map[string]float64{"loss": 1}, -1))
	ok(t, acc.LogText("note", "hello", 4))
	ok(t, acc.EndTraining())
	if rec.run != "project" || rec.config["lr"] != 0.5 || rec.config["name"] != "go" {
		t.Fatalf("init got %q %v", rec.run, rec.config)
	}
	if len(rec.logs) != 2 || rec.logs[0]["loss"] != 1.5 || rec.logs[0]["acc"] != 0.25 || rec.steps[0] != 3 || rec.steps[1] >= 0 {
		t.Fatalf("logs %v steps %v", rec.logs, rec.steps)
	}
	if !rec.done {
		t.Fatal("Finish not called")
	}
	director := acc.trackers[0]
	ok(t, acc.Close())
	if director.Swigcptr() != 0 {
		t.Fatal("the accelerator did not delete the Go tracker's director")
	}
}

func TestInitKwargsReachTheBuiltinTrackers(t *testing.T) {
	dir := t.TempDir()
	acc := newCPU(t, AcceleratorOptions{LogWith: []string{"dvclive"}, LoggingDir: dir})
	err := acc.InitTrackersWith("run", nil, map[string]map[string]any{"dvclive": {"folder": "x"}})
	if err == nil || !strings.Contains(err.Error(), "'folder'") {
		t.Fatalf("want an error naming 'folder', got %v", err)
	}
	live := filepath.Join(dir, "live")
	ok(t, acc.InitTrackersWith("run", map[string]any{"lr": 0.5}, map[string]map[string]any{"dvclive": {"dir": live}}))
	ok(t, acc.Log(map[string]float64{"loss": 0.25}, 4))
	ok(t, acc.EndTraining())
	got, err := os.ReadFile(filepath.Join(live, "plots", "metrics", "loss.tsv"))
	if err != nil || string(got) != "step\tloss\n4\t0.25\n" {
		t.Fatalf("loss.tsv: %q %v", got, err)
	}
}

func TestClosingAcceleratorFinishesGoTrackers(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{ProjectDir: t.TempDir()})
	rec := &recorder{}
	ok(t, acc.AddTracker("recorder", rec))
	ok(t, acc.InitTrackers("project", nil))
	ok(t, acc.Close())
	if !rec.done || len(rec.config) != 0 {
		t.Fatalf("finish %v config %v", rec.done, rec.config)
	}
}

func TestTrackerErrorIsReturnedByLog(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{ProjectDir: t.TempDir()})
	ok(t, acc.AddTracker("offline", &recorder{fail: true}))
	ok(t, acc.InitTrackers("p", nil))
	err := acc.Log(map[string]float64{"loss": 1}, 1)
	if err == nil || !strings.Contains(err.Error(), "tracker is offline") {
		t.Fatalf("want the tracker's error, got %v", err)
	}
	wantError(t, acc.AddTracker("nil", nil), ErrInvalidArgument, "nil")
}

func TestProgressLoggerAndProfile(t *testing.T) {
	bar := must[*ProgressBar](t)(NewProgressBar(3, "steps", true))
	ok(t, bar.Update(2))
	ok(t, bar.Close())
	ok(t, bar.Close())
	wantClosed(t, bar.Update(1), "ProgressBar")
	ok(t, GetLogger("go-test").Info("a message"))
	ok(t, GetLogger("go-test").Log(LogWarning, "everywhere", false))

	acc := newCPU(t, AcceleratorOptions{})
	dir := t.TempDir()
	model := must[*Model](t)(ModelFromJSON(linear))
	ok(t, acc.Profile(dir, func() error {
		_, err := model.Forward(must[*Tensor](t)(NewTensor(make([]float32, 4), 1, 4)))
		return err
	}))
	trace, err := os.ReadFile(filepath.Join(dir, "trace_0.json"))
	ok(t, err)
	if !strings.Contains(string(trace), "aten::") {
		t.Fatal("the trace names no aten op")
	}
	if strings.Contains(string(trace), "Input Dims") {
		t.Fatal("a plain profile recorded shapes")
	}

	// ProfileKwargs: a bias-free Linear(3, 4) on [2, 3] runs aten::mm of [2, 3] x [3, 4], 48 flops.
	bare := must[*Model](t)(ModelFromJSON(`[{"type": "Linear", "in_features": 3, "out_features": 4, "bias": false}]`))
	withDir := t.TempDir()
	ok(t, acc.ProfileWith(ProfileKwargs{OutputTraceDir: withDir, RecordShapes: true, ProfileMemory: true, WithFlops: true},
		func() error {
			_, err := bare.Forward(must[*Tensor](t)(NewTensor(make([]float32, 6), 2, 3)))
			return err
		}))
	trace, err = os.ReadFile(filepath.Join(withDir, "trace_0.json"))
	ok(t, err)
	for _, want := range []string{`"Input Dims":[[2,3],[3,4]]`, `"flops":48`, `"[memory]"`} {
		if !strings.Contains(string(trace), want) {
			t.Fatalf("the trace lacks %s", want)
		}
	}

	// WithStack and WithModules on tests/model/files/tiny_mlp.pt (fc1, relu, fc2): fc1's product
	// ran in submodule fc1, the relu in TinyMlp's own forward, each with its TorchScript source line.
	mlp := must[*Model](t)(ModelFromTorchScript(fixture("tiny_mlp.pt")))
	modulesDir := t.TempDir()
	ok(t, acc.ProfileWith(ProfileKwargs{OutputTraceDir: modulesDir, WithStack: true, WithModules: true}, func() error {
		_, err := mlp.Forward(must[*Tensor](t)(NewTensor([]float32{1, 2, 3, 4}, 1, 4)))
		return err
	}))
	trace, err = os.ReadFile(filepath.Join(modulesDir, "trace_0.json"))
	ok(t, err)
	for _, want := range []string{`"Module Hierarchy":"TOP(TinyMlp)::forward.fc1(Linear)::forward."`,
		`"Module Hierarchy":"TOP(TinyMlp)::forward."`, `"Call stack":"code/__torch__.py(`} {
		if !strings.Contains(string(trace), want) {
			t.Fatalf("the trace lacks %s", want)
		}
	}

	// A schedule (wait 1, active 2, repeat 1): steps 1 and 2 recorded, the trace ready after step 2.
	scheduled := t.TempDir()
	var ready []int64
	kwargs := ProfileKwargs{OutputTraceDir: scheduled, RecordShapes: true, Schedule: &ProfileSchedule{Wait: 1, Active: 2, Repeat: 1},
		OnTraceReady: func(path string, stepNum int64) error { ready = append(ready, stepNum); return nil }}
	ok(t, acc.ProfileSteps(kwargs, func(step func() error) error {
		for i := 0; i < 4; i++ {
			if _, err := bare.Forward(must[*Tensor](t)(NewTensor(make([]float32, 3*(i+1)), int64(i+1), 3))); err != nil {
				return err
			}
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	}))
	trace, err = os.ReadFile(filepath.Join(scheduled, "trace_0.json"))
	ok(t, err)
	if len(ready) != 1 || ready[0] != 3 || !strings.Contains(string(trace), `"Input Dims":[[3,3],[3,4]]`) ||
		strings.Contains(string(trace), `"Input Dims":[[1,3],[3,4]]`) {
		t.Fatalf("ready %v, trace %s", ready, trace)
	}
}

func TestGetTrackerLogsToOneBuiltinTracker(t *testing.T) {
	dir := t.TempDir()
	acc := newCPU(t, AcceleratorOptions{LogWith: []string{"jsonl", "csv"}, LoggingDir: dir})
	rec := &recorder{}
	ok(t, acc.AddTracker("recorder", rec))
	// Nothing runs before InitTrackers: Accelerate's blank tracker, whatever the name.
	blank := must[Tracker](t)(acc.GetTracker("wandb"))
	ok(t, blank.Log(map[string]float64{"x": 1}, 1))
	if must[Tracker](t)(acc.GetTracker("recorder")) != rec {
		t.Fatal("GetTracker(recorder) is not the Go tracker added")
	}
	ok(t, acc.InitTrackers("run", nil))
	if names := BuiltinTrackerNames(); len(names) != 9 || names[0] != "jsonl" || names[8] != "comet_ml" {
		t.Fatalf("BuiltinTrackerNames() = %v", names)
	}
	jsonl, isBuiltin := must[Tracker](t)(acc.GetTracker("jsonl")).(*BuiltinTracker)
	if !isBuiltin || jsonl.Name() != "jsonl" {
		t.Fatalf("GetTracker(jsonl) = %v", jsonl)
	}
	ok(t, jsonl.Log(map[string]float64{"loss": 0.5}, 2))
	ok(t, jsonl.LogText("note", "warm-up", 3))
	ok(t, must[Tracker](t)(acc.GetTracker("csv")).Log(map[string]float64{"acc": 0.25}, -1))
	_, err := acc.GetTracker("wandb")
	wantError(t, err, ErrInvalidArgument, "wandb is not an available tracker stored inside the Accelerator")
	wantError(t, acc.LogTo("tensorboard", map[string]float64{"x": 1}, 1), ErrInvalidArgument,
		"no running tracker is called 'tensorboard' (running: jsonl, csv, recorder)")
	wantError(t, jsonl.Finish(), ErrState, "EndTraining")
	ok(t, acc.EndTraining())
	got, err := os.ReadFile(filepath.Join(dir, "run", "metrics.jsonl"))
	if err != nil || string(got) != "{\"loss\":0.5,\"step\":2}\n{\"note\":\"warm-up\",\"step\":3}\n" {
		t.Fatalf("metrics.jsonl: %q %v", got, err)
	}
	got, err = os.ReadFile(filepath.Join(dir, "run", "metrics.csv"))
	if err != nil || string(got) != "step,tag,value\n,acc,0.25\n" {
		t.Fatalf("metrics.csv: %q %v", got, err)
	}
	if len(rec.logs) != 0 {
		t.Fatalf("the Go tracker received %v", rec.logs)
	}
}
