// hf_train.c in Go, through the binding's ForwardNamed:
//
//	hf_train_go DATA_DIR OUT_DIR STEPS
//
// run on every process of `accel launch` by check_hf_roundtrip.py; the same
// batches, checks and outputs (OUT_DIR/saved, logits.bin, losses.txt).
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/libaccel/libaccel/bindings/go/accel"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "hf_train_go: "+format+"\n", args...)
	os.Exit(1)
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

// field is one of data.json's tensors: int64 rows of width values each.
type field struct {
	values []int64
	shape  []int64
}

func readFields(dir string) map[string]field {
	raw, err := os.ReadFile(filepath.Join(dir, "data.json"))
	check(err)
	var shapes map[string][]int64
	check(json.Unmarshal(raw, &shapes))
	fields := map[string]field{}
	for name, shape := range shapes {
		bytes, err := os.ReadFile(filepath.Join(dir, name+".bin"))
		check(err)
		values := make([]int64, len(bytes)/8)
		for i := range values {
			values[i] = int64(binary.LittleEndian.Uint64(bytes[8*i:]))
		}
		fields[name] = field{values, shape}
	}
	return fields
}

// batch is count rows from first (wrapping), as new tensors.
func batch(fields map[string]field, first, count int64) map[string]*accel.Tensor {
	out := map[string]*accel.Tensor{}
	for name, f := range fields {
		rows := f.shape[0]
		width := int64(len(f.values)) / rows
		values := make([]int64, 0, count*width)
		for r := int64(0); r < count; r++ {
			row := (first + r) % rows
			values = append(values, f.values[row*width:(row+1)*width]...)
		}
		shape := append([]int64{count}, f.shape[1:]...)
		t, err := accel.NewTensor(values, shape...)
		check(err)
		out[name] = t
	}
	return out
}

func closeAll(tensors map[string]*accel.Tensor) {
	for _, t := range tensors {
		t.Close()
	}
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: hf_train_go DATA_DIR OUT_DIR STEPS")
		os.Exit(2)
	}
	dataDir, outDir := os.Args[1], os.Args[2]
	steps, err := strconv.Atoi(os.Args[3])
	check(err)
	fields := readFields(dataDir)
	rows := fields["input_ids"].shape[0]

	acc, err := accel.NewAccelerator(accel.AcceleratorOptions{CPU: true, ProjectDir: outDir})
	check(err)
	defer acc.Close()
	rank, err := acc.ProcessIndex()
	check(err)
	world, err := acc.NumProcesses()
	check(err)
	model, err := accel.ModelFromTorchScript(filepath.Join(dataDir, "model.pt"))
	check(err)
	defer model.Close()
	opt, err := accel.NewOptimizer(model, accel.OptimizerOptions{Kind: accel.AdamW, LR: 3e-3})
	check(err)
	defer opt.Close()
	check(acc.Prepare(model, opt))

	// evalLoss is the eval-mode loss over every row, and the logits.
	evalLoss := func() (float64, []float32) {
		inputs := batch(fields, 0, rows)
		defer closeAll(inputs)
		check(model.Eval())
		out, err := model.ForwardNamed(inputs)
		check(err)
		defer closeAll(out)
		check(model.Train(true))
		loss, err := out["loss"].Item()
		check(err)
		logits, err := out["logits"].Float32s()
		check(err)
		return loss, logits
	}

	first, _ := evalLoss()
	for step := 0; step < steps; step++ {
		inputs := batch(fields, int64(2*(step*world+rank)), 2)
		out, err := model.ForwardNamed(inputs)
		check(err)
		check(acc.Backward(out["loss"]))
		check(opt.Step())
		check(opt.ZeroGrad())
		closeAll(out)
		closeAll(inputs)
	}
	last, logits := evalLoss()

	// Replicas: every process's checksum of GetStateDict (whole tensors under
	// FULL_SHARD too, gathered collectively there), gathered, must be identical.
	state, err := acc.GetStateDict(model)
	check(err)
	checksum := 0.0
	for _, p := range state {
		values, err := p.Tensor.Float32s()
		check(err)
		for _, v := range values {
			checksum += float64(v)
		}
		p.Tensor.Close()
	}
	local, err := accel.NewTensor([]float64{checksum}, 1)
	check(err)
	gathered, err := acc.Gather(local)
	check(err)
	everyone, err := gathered.Float64s()
	check(err)
	held, err := acc.HeldBytes(model, opt)
	check(err)
	strategy, err := acc.ShardingStrategy()
	check(err)
	offload, err := acc.CPUOffload()
	check(err)
	strategies := map[string]int{"NO_SHARD": 0, "SHARD_OPTIMIZER": 1, "SHARD_GRAD_OP": 2, "FULL_SHARD": 3, "HYBRID_SHARD": 4}
	fmt.Printf("rank %d: eval loss %.5f -> %.5f, parameter checksum %.9g; sharding strategy %d holds %d + %d + %d bytes; cpu offload %d\n",
		rank, first, last, checksum, strategies[strategy], held.Parameters, held.Gradients, held.OptimizerState, boolDigit(offload))

	check(acc.SaveModel(model, filepath.Join(outDir, "saved"), "10GB"))
	if rank == 0 {
		bytes := make([]byte, 4*len(logits))
		for i, v := range logits {
			binary.LittleEndian.PutUint32(bytes[4*i:], math.Float32bits(v))
		}
		check(os.WriteFile(filepath.Join(outDir, "logits.bin"), bytes, 0o644))
		check(os.WriteFile(filepath.Join(outDir, "losses.txt"), []byte(fmt.Sprintf("%.6f %.6f\n", first, last)), 0o644))
	}
	if !(last < first*0.8) {
		fail("rank %d: the eval loss did not fall by 20%%: %.5f -> %.5f", rank, first, last)
	}
	for _, c := range everyone {
		if c != everyone[0] {
			fail("rank %d: the replicas differ: checksums %v", rank, everyone)
		}
	}
}

func boolDigit(b bool) int {
	if b {
		return 1
	}
	return 0
}
