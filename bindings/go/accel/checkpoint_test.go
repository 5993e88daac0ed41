package accel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type counterState struct{ value []byte }

func (c *counterState) StateDict() ([]byte, error) { return append([]byte(nil), c.value...), nil }
func (c *counterState) LoadStateDict(state []byte) error {
	c.value = append([]byte(nil), state...)
	return nil
}

type failingState struct{ panics bool }

func (f *failingState) StateDict() ([]byte, error) {
	if f.panics {
		panic("state exploded")
	}
	return nil, errors.New("cannot save this")
}
func (f *failingState) LoadStateDict([]byte) error { return nil }

func TestSaveAndLoadStateWithGoObjectsAndHooks(t *testing.T) {
	dir := t.TempDir()
	acc := newCPU(t, AcceleratorOptions{ProjectDir: dir})
	model := must[*Model](t)(ModelFromJSON(linear))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{}))
	ok(t, acc.Prepare(model, opt))
	state := &counterState{value: []byte("binary\x00state\xff")}
	ok(t, acc.RegisterForCheckpointing(state))
	var saved, loaded []string
	saveHook := must[*HookHandle](t)(acc.RegisterSaveStatePreHook(func(d string) error { saved = append(saved, d); return nil }))
	must[*HookHandle](t)(acc.RegisterLoadStatePreHook(func(d string) error { loaded = append(loaded, d); return nil }))

	ckpt := filepath.Join(dir, "ckpt")
	must[string](t)(acc.SaveState(ckpt))
	state.value = []byte("changed")
	ok(t, acc.LoadState(ckpt))
	if string(state.value) != "binary\x00state\xff" {
		t.Fatalf("restored %q", state.value)
	}
	if !equal(saved, []string{ckpt}) || !equal(loaded, []string{ckpt}) {
		t.Fatalf("hooks saw %v and %v", saved, loaded)
	}
	ok(t, saveHook.Remove())
	must[string](t)(acc.SaveState(ckpt))
	if len(saved) != 1 {
		t.Fatal("a removed hook ran")
	}
	failing := must[*HookHandle](t)(acc.RegisterSaveStatePreHook(func(string) error { return errors.New("disk is full") }))
	_, err := acc.SaveState(ckpt)
	if err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("want the hook's error, got %v", err)
	}
	ok(t, failing.Remove())
	panicking := must[*HookHandle](t)(acc.RegisterLoadStatePreHook(func(string) error { panic("hook panicked") }))
	err = acc.LoadState(ckpt)
	if err == nil || !strings.Contains(err.Error(), "panic: hook panicked") {
		t.Fatalf("want the hook's panic, got %v", err)
	}
	ok(t, panicking.Remove())
	_, err = acc.RegisterSaveStatePreHook(nil)
	wantError(t, err, ErrInvalidArgument, "nil")
	ok(t, acc.RegisterForCheckpointing(&failingState{}))
	_, err = acc.SaveState(ckpt)
	if err == nil || !strings.Contains(err.Error(), "cannot save this") {
		t.Fatalf("want the object's error, got %v", err)
	}
}

func TestPanicInStateDictIsAnError(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	ok(t, acc.RegisterForCheckpointing(&failingState{panics: true}))
	_, err := acc.SaveState(filepath.Join(t.TempDir(), "c"))
	if err == nil || !strings.Contains(err.Error(), "panic: state exploded") {
		t.Fatalf("want the panic's message, got %v", err)
	}
}

func TestSaveModelAndLoadCheckpointInModel(t *testing.T) {
	dir := t.TempDir()
	acc := newCPU(t, AcceleratorOptions{})
	model := must[*Model](t)(ModelFromJSON(linear))
	ok(t, acc.SaveModel(model, dir, ""))
	entries, _ := os.ReadDir(dir)
	if len(entries) == 0 {
		t.Fatal("SaveModel wrote nothing")
	}
	other := must[*Model](t)(ModelFromJSON(linear))
	file := filepath.Join(dir, "model.safetensors")
	missing, unexpected, err := acc.LoadCheckpointInModel(other, file, true)
	ok(t, err)
	if missing != 0 || unexpected != 0 {
		t.Fatalf("missing %d unexpected %d", missing, unexpected)
	}
	x := must[*Tensor](t)(NewTensor([]float32{1, 2, 3, 4}, 1, 4))
	a := must[[]float32](t)(must[*Tensor](t)(model.Forward(x)).Float32s())
	b := must[[]float32](t)(must[*Tensor](t)(other.Forward(x)).Float32s())
	if !equal(a, b) {
		t.Fatalf("loaded model differs: %v vs %v", a, b)
	}
	_, _, err = acc.LoadCheckpointInModel(other, filepath.Join(dir, "missing.safetensors"), true)
	wantError(t, err, ErrIO, "missing")
	bigger := must[*Model](t)(ModelFromJSON(`[{"type": "Linear", "in_features": 4, "out_features": 5}]`))
	_, _, err = acc.LoadCheckpointInModel(bigger, file, true)
	wantError(t, err, ErrInvalidArgument, "")
}

func TestSaveTensorsReadBackAsASafetensorsDataset(t *testing.T) {
	dir := t.TempDir()
	acc := newCPU(t, AcceleratorOptions{})
	x := must[*Tensor](t)(NewTensor([]float32{0, 1, 2, 3, 4, 5}, 3, 2))
	y := must[*Tensor](t)(NewTensor([]int64{7, 8, 9}, 3))
	ok(t, acc.SaveTensors(map[string]*Tensor{"x": x, "y": y}, filepath.Join(dir, "part-0.safetensors")))
	ok(t, acc.SaveTensors(map[string]*Tensor{"x": x, "y": y}, filepath.Join(dir, "part-1.safetensors")))
	data := must[*Dataset](t)(DatasetFromSafetensors(dir, "x", "y"))
	defer data.Close()
	if n := must[int64](t)(data.Len()); n != 6 {
		t.Fatalf("want 6 samples, got %d", n)
	}
	_, err := DatasetFromSafetensors(dir, "x", "label")
	wantError(t, err, ErrIO, "has no tensor 'label'")
	err = acc.SaveTensors(map[string]*Tensor{"x": x}, filepath.Join(dir, "no", "dir", "a.safetensors"))
	wantError(t, err, ErrIO, "a.safetensors")
	closed := must[*Tensor](t)(NewTensor([]float32{1}, 1))
	closed.Close()
	wantClosed(t, acc.SaveTensors(map[string]*Tensor{"gone": closed}, filepath.Join(dir, "b.safetensors")), "Tensor")
}

// As Accelerate's hooks: the save hook gets the prepared models and their
// weights, the load hook the models; after FreeMemory, none.
func TestStateHooksReceiveThePreparedModels(t *testing.T) {
	dir := t.TempDir()
	acc := newCPU(t, AcceleratorOptions{ProjectDir: dir})
	model := must[*Model](t)(ModelFromJSON(`[{"type": "Linear", "in_features": 3, "out_features": 2}]`))
	var calls []string
	must[*HookHandle](t)(acc.RegisterSaveStateModelsHook(func(models []*Model, weights [][]NamedTensor, d string) error {
		call := fmt.Sprintf("save %d %d", len(models), len(weights))
		if len(weights) > 0 {
			shape, err := weights[0][0].Tensor.Shape()
			if err != nil {
				return err
			}
			call += fmt.Sprintf(" %s %s %v", weights[0][0].Name, weights[0][1].Name, shape)
		}
		calls = append(calls, call)
		return nil
	}))
	must[*HookHandle](t)(acc.RegisterLoadStateModelsHook(func(models []*Model, d string) error {
		calls = append(calls, fmt.Sprintf("load %d %v", len(models), len(models) == 1 && models[0] == model))
		return nil
	}))
	ok(t, acc.Prepare(model))
	ckpt := filepath.Join(dir, "a")
	must[string](t)(acc.SaveState(ckpt))
	ok(t, acc.LoadState(ckpt))
	ok(t, acc.FreeMemory())
	must[string](t)(acc.SaveState(filepath.Join(dir, "b")))
	want := []string{"save 1 1 0.weight 0.bias [2 3]", "load 1 true", "save 0 0"}
	if !equal(calls, want) {
		t.Fatalf("hooks saw %q, want %q", calls, want)
	}
}
