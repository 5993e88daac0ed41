package accel

import (
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// tinyGPT: two causal pre-norm blocks of width 16, 2 heads, 32 byte ids, the head tied to wte.
const tinyGPTBlock = `"type": "TransformerEncoderLayer", "d_model": 16, "nhead": 2, "dim_feedforward": 32,
  "dropout": 0.0, "activation": "gelu", "batch_first": true, "norm_first": true, "causal": true`

const tinyGPT = `{"inputs": ["input_ids", {"name": "labels", "optional": true}], "nodes": [
  {"name": "wte", "type": "Embedding", "num_embeddings": 32, "embedding_dim": 16},
  {"name": "wpe", "type": "PositionalEmbedding", "num_positions": 8, "embedding_dim": 16, "batch_first": true},
  {"name": "h0", ` + tinyGPTBlock + `}, {"name": "h1", ` + tinyGPTBlock + `},
  {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 16},
  {"name": "logits", "type": "Linear", "in_features": 16, "out_features": 32, "weight": "wte.weight"},
  {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}], "outputs": ["loss"]}`

// sequencePlan adds Megatron-style sequence parallelism to tinyGPT (docs/parallelism.md):
// the norms, residual adds and ln_f run on each rank's block of the sequence.
const sequencePlan = `, "tp_plan": {"*.self_attn": "colwise", "*.self_attn.out_proj": "rowwise",
  "*.linear1": "colwise", "*.linear2": "rowwise", "*.norm1": "sequence_parallel",
  "*.norm2": "sequence_parallel", "ln_f": "sequence_parallel"}}`

func TestParallelismConfigIsCheckedAgainstTheWorld(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	if got := must[ParallelismConfig](t)(acc.ParallelismConfig()); got != (ParallelismConfig{1, 1, 1, 1}) {
		t.Fatalf("one process without a mesh: %+v", got)
	}
	if got := must[ParallelismRanks](t)(acc.ParallelismRanks()); got != (ParallelismRanks{}) {
		t.Fatalf("one process's place in the mesh: %+v", got)
	}
	_, err := NewAccelerator(AcceleratorOptions{CPU: true, ParallelismConfig: &ParallelismConfig{TPSize: 2}})
	if err == nil || !strings.Contains(err.Error(), "the world has 1 processes") {
		t.Fatalf("tp_size 2 on one process: %v", err)
	}
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, ParallelismConfig: &ParallelismConfig{TPSize: -1}})
	if err == nil || !strings.Contains(err.Error(), "parallelism_tp_size must be 0 (default) or a positive size, got -1") {
		t.Fatalf("tp_size -1: %v", err)
	}
}

// Tensor parallelism across real processes: the test binary runs itself under
// `accel launch`, and TestTensorParallelWorker runs in every rank.
func TestTensorParallelThroughAccelLaunch(t *testing.T) {
	launcher := os.Getenv("ACCEL_CLI")
	if launcher == "" {
		t.Skip("ACCEL_CLI (the accel command) is not set; run through CTest")
	}
	for _, mode := range []string{"tp", "sp", "cp"} {
		cmd := exec.Command(launcher, "launch", "--nproc_per_node", "2", "--master_port", "0",
			os.Args[0], "-test.run=^TestTensorParallelWorker$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ACCEL_GO_TP_WORKER="+mode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, out)
		}
		if want := "[rank 0] ok " + mode + " 2"; !strings.Contains(string(out), want) {
			t.Fatalf("no %q in\n%s", want, out)
		}
	}
}

func TestTensorParallelWorker(t *testing.T) {
	mode := os.Getenv("ACCEL_GO_TP_WORKER") // "tp", "sp" for sequence parallelism too, "cp" for context parallelism
	if mode == "" {
		t.Skip("run by TestTensorParallelThroughAccelLaunch")
	}
	spec := tinyGPT
	if mode == "sp" {
		spec = tinyGPT[:len(tinyGPT)-1] + sequencePlan
	}
	mesh := ParallelismConfig{1, 1, 2, 1}
	if mode == "cp" {
		mesh = ParallelismConfig{1, 1, 1, 2}
	}
	acc := newCPU(t, AcceleratorOptions{ParallelismConfig: &mesh})
	if got := must[ParallelismConfig](t)(acc.ParallelismConfig()); got != mesh {
		t.Fatalf("mesh %+v", got)
	}
	// Two ranks along tp or cp: this process's index is its rank along that dimension.
	rank := int64(must[int](t)(acc.ProcessIndex()))
	want := ParallelismRanks{TPRank: rank}
	if mode == "cp" {
		want = ParallelismRanks{CPRank: rank}
	}
	if got := must[ParallelismRanks](t)(acc.ParallelismRanks()); got != want {
		t.Fatalf("place in the mesh %+v, want %+v", got, want)
	}
	ok(t, acc.SetSeed(0))
	model := must[*Model](t)(ModelFromJSON(spec))
	opt := must[*Optimizer](t)(NewOptimizer(model, OptimizerOptions{Kind: AdamW, LR: 1e-3}))
	ok(t, acc.Prepare(model, opt))
	shapes := map[string][]int64{}
	for _, p := range must[[]NamedTensor](t)(model.NamedParameters()) {
		shapes[p.Name] = must[[]int64](t)(p.Tensor.Shape())
	}
	if linear1 := shapes["h0.linear1.weight"][0]; linear1 != 32/mesh.TPSize || !equal(shapes["ln_f.weight"], []int64{16}) {
		t.Fatalf("split shapes %v, %v", shapes["h0.linear1.weight"], shapes["ln_f.weight"])
	}
	ids := make([]int64, 32)
	for i := range ids {
		ids[i] = int64(i*7+3) % 32
	}
	batch := must[*Tensor](t)(NewTensor(ids, 4, 8))
	lossOf := func(m *Model) float64 {
		out := must[map[string]*Tensor](t)(m.ForwardNamed(map[string]*Tensor{"input_ids": batch, "labels": batch}))
		return must[float64](t)(out["loss"].Item())
	}
	out := must[map[string]*Tensor](t)(model.ForwardNamed(map[string]*Tensor{"input_ids": batch, "labels": batch}))
	ok(t, acc.Backward(out["loss"]))
	ok(t, opt.Step())
	ok(t, opt.ZeroGrad())

	whole := map[string]*Tensor{}
	for _, e := range must[[]NamedTensor](t)(acc.GetStateDict(model)) { // collective: every rank gathers
		whole[e.Name] = e.Tensor
	}
	if got := must[[]int64](t)(whole["h0.linear1.weight"].Shape()); !equal(got, []int64{32, 16}) {
		t.Fatalf("gathered shape %v", got)
	}
	reference := must[*Model](t)(ModelFromJSON(spec))
	must[IncompatibleKeys](t)(reference.LoadStateDict(whole, true))
	split, full := lossOf(model), lossOf(reference)
	// The same function with sums reassociated: the mean of 28 token losses of
	// about 3.5 moves by at most 28 * 6e-8 * 3.5 = 5.9e-6 (float32's unit
	// roundoff); the products inside add 16 or 32 terms, less again.
	if math.Abs(split-full) > 1e-5 {
		t.Fatalf("split model's loss %v, whole model's %v", split, full)
	}
	if mode == "cp" {
		// The blocks are real: each rank reads its block of the sequence only
		// (chunks r and 3 - r of 4 chunks of 2), so ids changed elsewhere leave
		// its result the whole model's.
		rank := must[int](t)(acc.ProcessIndex())
		mine := make([]int64, len(ids))
		for i := range ids {
			mine[i] = ids[i]
			if chunk := (i % 8) / 2; chunk != rank && chunk != 3-rank {
				mine[i] = (ids[i] + 1) % 32
			}
		}
		changed := must[*Tensor](t)(NewTensor(mine, 4, 8))
		out := must[map[string]*Tensor](t)(model.ForwardNamed(map[string]*Tensor{"input_ids": changed, "labels": batch}))
		if got := must[float64](t)(out["loss"].Item()); math.Abs(got-full) > 1e-5 {
			t.Fatalf("with the other block's ids changed: loss %v, whole model's %v", got, full)
		}
	}
	if mode == "sp" {
		// The blocks are real: a sequence of 7 does not split over 2 ranks, and h0 says so
		// (plain tensor parallelism takes it).
		odd := must[*Tensor](t)(NewTensor(ids[:28], 4, 7))
		_, err := model.ForwardNamed(map[string]*Tensor{"input_ids": odd, "labels": odd})
		if err == nil || !strings.Contains(err.Error(), "h0") {
			t.Fatalf("a sequence of 7 under sequence parallelism: %v", err)
		}
	}
	if must[int](t)(acc.ProcessIndex()) == 0 {
		os.Stdout.WriteString("ok " + mode + " 2\n")
	}
}
