package accel

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// fixture is a TorchScript file of tests/model/files (make_torchscript_fixture.py).
func fixture(name string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "tests", "model", "files", name)
}

func TestForwardNamedBindsInputsAndNamesOutputs(t *testing.T) {
	model := must[*Model](t)(ModelFromTorchScript(fixture("named_dict.pt")))
	defer model.Close()
	x := must[*Tensor](t)(NewTensor(make([]float32, 12), 3, 4))
	mask := must[*Tensor](t)(NewTensor([]float32{1, 1, 1, 1, 1, 1}, 3, 2))
	out := must[map[string]*Tensor](t)(model.ForwardNamed(map[string]*Tensor{"x": x, "mask": mask}))
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	if !equalStrings(names, []string{"logits", "loss"}) {
		t.Fatalf("outputs %v", names)
	}
	logits := must[[]float32](t)(out["logits"].Float32s())
	var sum float64
	for _, v := range logits {
		sum += float64(v)
	}
	if loss := must[float64](t)(out["loss"].Item()); math.Abs(loss-2*sum) > 1e-5 { // scale defaults to 2
		t.Fatalf("loss %v, logits sum %v", loss, sum)
	}
	_, err := model.ForwardNamed(map[string]*Tensor{"x": x})
	wantError(t, err, ErrInvalidArgument, `missing input "mask"`)
	_, err = model.ForwardNamed(map[string]*Tensor{"x": x, "mask": mask, "labels": x})
	wantError(t, err, ErrInvalidArgument, `unknown input "labels"`)

	tuple := must[*Model](t)(ModelFromTorchScriptOutputs(fixture("plain_tuple.pt"), []string{"loss", "logits"}))
	defer tuple.Close()
	if out := must[map[string]*Tensor](t)(tuple.ForwardNamed(map[string]*Tensor{"x": x, "mask": mask})); out["loss"] == nil {
		t.Fatalf("plain tuple outputs %v", out)
	}
}

func TestNamedParametersListATiedTensorOnceAndTrain(t *testing.T) {
	acc := must[*Accelerator](t)(NewAccelerator(AcceleratorOptions{CPU: true}))
	defer acc.Close()
	model := must[*Model](t)(ModelFromTorchScript(fixture("tied_lm.pt")))
	defer model.Close()
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: SGD, LR: 0.5}))
	defer opt.Close()
	if err := acc.Prepare(model, opt); err != nil {
		t.Fatal(err)
	}
	params := must[[]NamedTensor](t)(model.NamedParameters())
	if len(params) != 1 || params[0].Name != "wte.weight" {
		t.Fatalf("parameters %v", params)
	}
	buffers := must[[]NamedTensor](t)(model.NamedBuffers())
	if len(buffers) != 2 || buffers[0].Name != "mask" {
		t.Fatalf("buffers %v", buffers)
	}
	before := must[[]float32](t)(params[0].Tensor.Float32s())
	ids := must[*Tensor](t)(NewTensor([]int64{1, 2, 3}, 1, 3))
	labels := must[*Tensor](t)(NewTensor([]int64{2, 3, 4}, 1, 3))
	out := must[map[string]*Tensor](t)(model.ForwardNamed(map[string]*Tensor{"input_ids": ids, "labels": labels}))
	if err := acc.Backward(out["loss"]); err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	// The handle is the parameter itself: it sees the step.
	after := must[[]float32](t)(params[0].Tensor.Float32s())
	if equalFloats(before, after) {
		t.Fatal("the step did not change wte.weight")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// readInt64s reads a raw little-endian int64 file of tests/hf/export_hf_models.py.
func readInt64s(t *testing.T, path string) []int64 {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(raw)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out
}

// The GPT-2 that tests/hf exports with transformers (CTest go_hf_gpt2_step sets
// ACCEL_HF_GPT2 to its folder): named forward and AdamW steps from Go.
func TestExportedGPT2NamedForwardAndSteps(t *testing.T) {
	dir := os.Getenv("ACCEL_HF_GPT2")
	if dir == "" {
		t.Skip("ACCEL_HF_GPT2 is not set (CTest go_hf_gpt2_step sets it)")
	}
	const rows, length = 2, 16
	batch := map[string]*Tensor{}
	for _, name := range []string{"input_ids", "attention_mask", "labels"} {
		values := readInt64s(t, filepath.Join(dir, name+".bin"))[:rows*length]
		batch[name] = must[*Tensor](t)(NewTensor(values, rows, length))
	}
	acc := must[*Accelerator](t)(NewAccelerator(AcceleratorOptions{CPU: true}))
	defer acc.Close()
	model := must[*Model](t)(ModelFromTorchScript(filepath.Join(dir, "model.pt")))
	defer model.Close()
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: AdamW, LR: 3e-3}))
	defer opt.Close()
	if err := acc.Prepare(model, opt); err != nil {
		t.Fatal(err)
	}
	for _, p := range must[[]NamedTensor](t)(model.NamedParameters()) {
		if p.Name == "lm_head.weight" {
			t.Fatal("the tied lm_head.weight is listed beside transformer.wte.weight")
		}
	}
	var losses []float64
	for step := 0; step < 3; step++ {
		out := must[map[string]*Tensor](t)(model.ForwardNamed(batch))
		if shape := must[[]int64](t)(out["logits"].Shape()); !equal(shape, []int64{rows, length, 256}) {
			t.Fatalf("logits shape %v", shape)
		}
		losses = append(losses, must[float64](t)(out["loss"].Item()))
		if err := acc.Backward(out["loss"]); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
	}
	if !(losses[2] < losses[0]) {
		t.Fatalf("losses %v do not fall", losses)
	}
}

// ModelFromTorchScriptEmpty (init_empty_weights for TorchScript) reads no
// weight; filled from what SaveModel wrote, in memory or streamed from disk
// around each call, it computes the loaded model's logits. A GPU in the map is
// refused.
func TestEmptyTorchScriptModelLoadsFromACheckpoint(t *testing.T) {
	acc := must[*Accelerator](t)(NewAccelerator(AcceleratorOptions{CPU: true}))
	defer acc.Close()
	full := must[*Model](t)(ModelFromTorchScript(fixture("tied_lm.pt")))
	defer full.Close()
	dir := t.TempDir()
	ok(t, acc.SaveModel(full, dir, ""))
	logits := func(m *Model) []float32 {
		ids := must[*Tensor](t)(NewTensor([]int64{1, 4, 7, 2, 9, 0}, 2, 3))
		labels := must[*Tensor](t)(NewTensor([]int64{4, 7, 2, 9, 0, 3}, 2, 3))
		out := must[map[string]*Tensor](t)(m.ForwardNamed(map[string]*Tensor{"input_ids": ids, "labels": labels}))
		return must[[]float32](t)(out["logits"].Float32s())
	}
	want := logits(full)
	streamed := must[*Model](t)(ModelFromTorchScriptEmpty(fixture("tied_lm.pt"), nil))
	defer streamed.Close()
	err := streamed.LoadCheckpointAndDispatch(dir, map[string]string{"": "cuda:0"}, "", "")
	wantError(t, err, ErrUnsupported, `"cuda:0"`)
	ok(t, streamed.LoadCheckpointAndDispatch(dir, map[string]string{"": "disk"}, "", ""))
	inMemory := must[*Model](t)(ModelFromTorchScriptEmpty(fixture("tied_lm.pt"), nil))
	defer inMemory.Close()
	ok(t, inMemory.Materialize(dir, ""))
	for name, got := range map[string][]float32{"streamed": logits(streamed), "in memory": logits(inMemory)} {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: logits[%d] %v, want %v", name, i, got[i], want[i])
			}
		}
	}
}
