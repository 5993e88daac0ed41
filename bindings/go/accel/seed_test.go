package accel

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// initialWeights is the output of a fresh Linear model on a fixed input: it
// depends only on LibTorch's generator, which SetSeed seeds.
func initialWeights(t *testing.T) []float32 {
	t.Helper()
	model := must[*Model](t)(ModelFromJSON(linear))
	defer model.Close()
	probe := must[*Tensor](t)(NewTensor([]float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 4, 4))
	return must[[]float32](t)(must[*Tensor](t)(model.Forward(probe)).Float32s())
}

func TestSetSeedSeedsLibTorchAndRand(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	ok(t, acc.SetSeed(42))
	weights, draw := initialWeights(t), Rand.Int63()
	ok(t, acc.SetSeed(42))
	if !equal(weights, initialWeights(t)) || Rand.Int63() != draw {
		t.Fatal("the same seed gave different numbers")
	}
	ok(t, acc.SetSeed(43))
	if equal(weights, initialWeights(t)) || Rand.Int63() == draw {
		t.Fatal("another seed gave the same numbers")
	}
	// One process: device-specific adds process index 0.
	ok(t, acc.SetSeed(42, SeedOptions{DeviceSpecific: true}))
	if !equal(weights, initialWeights(t)) || Rand.Int63() != draw {
		t.Fatal("device-specific seeding on process 0 differs from plain seeding")
	}
	wantError(t, acc.SetSeed(1, SeedOptions{}, SeedOptions{}), ErrInvalidArgument, "at most one SeedOptions, got 2")
	// The package's SetSeed (accelerate.utils.set_seed) seeds the same generators without the accelerator.
	ok(t, SetSeed(42))
	if !equal(weights, initialWeights(t)) || Rand.Int63() != draw {
		t.Fatal("SetSeed(42) differs from the accelerator's SetSeed(42)")
	}
	ok(t, SetSeed(42, SeedOptions{DeviceSpecific: true}))
	if !equal(weights, initialWeights(t)) || Rand.Int63() != draw {
		t.Fatal("device-specific SetSeed on process 0 differs from plain seeding")
	}
	wantError(t, SetSeed(1, SeedOptions{}, SeedOptions{}), ErrInvalidArgument, "at most one SeedOptions, got 2")
	acc.Close()
	wantClosed(t, acc.SetSeed(1), "Accelerator")
}

// Across processes: with DeviceSpecific, rank r draws what seed + r draws, so
// ranks differ; without it they agree. TestSeedWorker runs in every rank.
func TestSetSeedDeviceSpecificThroughAccelLaunch(t *testing.T) {
	launcher := os.Getenv("ACCEL_CLI")
	if launcher == "" {
		t.Skip("ACCEL_CLI (the accel command) is not set; run through CTest")
	}
	cmd := exec.Command(launcher, "launch", "--nproc_per_node", "2", "--master_port", "0",
		os.Args[0], "-test.run=^TestSeedWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ACCEL_GO_SEED_WORKER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "[rank 0] seed ok") {
		t.Fatalf("no \"seed ok\" in\n%s", out)
	}
}

func TestSeedWorker(t *testing.T) {
	if os.Getenv("ACCEL_GO_SEED_WORKER") == "" {
		t.Skip("run by TestSetSeedDeviceSpecificThroughAccelLaunch")
	}
	acc := newCPU(t, AcceleratorOptions{})
	rank := uint64(must[int](t)(acc.ProcessIndex()))
	ok(t, acc.SetSeed(7+rank))
	ownWeights, ownDraw := initialWeights(t), Rand.Int63()
	ok(t, acc.SetSeed(7, SeedOptions{DeviceSpecific: true}))
	weights, draw := initialWeights(t), Rand.Int63()
	if !equal(weights, ownWeights) || draw != ownDraw {
		t.Fatalf("rank %d: device-specific seed 7 is not seed %d", rank, 7+rank)
	}
	mine := must[*Tensor](t)(NewTensor(weights[:1]))
	first := must[[]float32](t)(must[*Tensor](t)(acc.Gather(mine)).Float32s())
	if first[0] == first[1] {
		t.Fatalf("device-specific seeds gave both ranks %v", first)
	}
	ok(t, acc.SetSeed(7))
	same := must[[]float32](t)(must[*Tensor](t)(acc.Gather(must[*Tensor](t)(NewTensor(initialWeights(t)[:1])))).Float32s())
	if same[0] != same[1] {
		t.Fatalf("the same seed gave the ranks %v", same)
	}
	fmt.Println("seed ok")
}

func TestGetStateDictNamesEveryTensorInOrder(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	model := must[*Model](t)(ModelFromJSON(linear))
	defer model.Close()
	state := must[[]NamedTensor](t)(acc.GetStateDict(model))
	if len(state) != 2 || state[0].Name != "0.weight" || state[1].Name != "0.bias" {
		t.Fatalf("state dict %v", state)
	}
	if n := must[int64](t)(state[0].Tensor.Numel()); n != 12 {
		t.Fatalf("0.weight has %d elements", n)
	}
	for _, e := range state {
		e.Tensor.Close()
	}
	model.Close()
	_, err := acc.GetStateDict(model)
	wantClosed(t, err, "Model")
}

func TestProcessFactsReadAsMethods(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	if !must[bool](t)(acc.IsLastProcess()) || acc.ProjectDir() != "." || acc.LoggingDir() != "logs" {
		t.Fatalf("last %v, project %q, logging %q", must[bool](t)(acc.IsLastProcess()), acc.ProjectDir(), acc.LoggingDir())
	}
	other := newCPU(t, AcceleratorOptions{ProjectDir: "/tmp/p"})
	if other.ProjectDir() != "/tmp/p" || other.LoggingDir() != "/tmp/p/logs" {
		t.Fatalf("project %q, logging %q", other.ProjectDir(), other.LoggingDir())
	}
	acc.Close()
	_, err := acc.IsLastProcess()
	wantClosed(t, err, "Accelerator")
}
