package accel

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestNestedCollectivesKeepTheirShape(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	x := must[*Tensor](t)(NewTensor([]float32{1, 3}, 1, 2))
	defer x.Close()
	data := map[string]any{"a": x, "b": []any{x, map[string]*Tensor{"c": x}}}
	got := must[any](t)(acc.ReduceNested(data, ReduceNone, 0.5)).(map[string]any)
	inner := got["b"].([]any)[1].(map[string]*Tensor)["c"]
	if v := must[[]float32](t)(inner.Float32s()); !equal(v, []float32{0.5, 1.5}) {
		t.Fatalf("reduce none with scale 0.5: %v", v)
	}
	for _, op := range []func(any) (any, error){
		acc.GatherNested, acc.GatherForMetricsNested,
		func(d any) (any, error) { return acc.BroadcastNested(d, 0) },
		func(d any) (any, error) { return acc.PadAcrossProcessesNested(d, 0, 0, false) },
	} {
		out := must[any](t)(op([]*Tensor{x, x})).([]*Tensor)
		if len(out) != 2 || !equal(must[[]float32](t)(out[1].Float32s()), []float32{1, 3}) {
			t.Fatalf("list result %v", out)
		}
		CloseAll(out...)
	}
	_, err := acc.GatherNested([]any{x, "text"})
	wantError(t, err, ErrInvalidArgument, "string")
	_, err = acc.ReduceNested(x, ReduceSum, math.NaN())
	wantError(t, err, ErrInvalidArgument, "scale")
}

func TestSplitBetweenProcessesOneProcess(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	if got := must[[]string](t)(SplitBetweenProcesses(acc, []string{"a", "b", "c"}, true)); !equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("split %v", got)
	}
	_, err := SplitMapBetweenProcesses(acc, map[string][]int{"a": {1}, "b": {1, 2}}, false)
	wantError(t, err, ErrInvalidArgument, "same length")
	got := must[[]string](t)(GatherForMetricsObjects(acc, []string{"x", "y"}))
	if !equal(got, []string{"x", "y"}) {
		t.Fatalf("objects %v", got)
	}
	b := must[[]byte](t)(acc.BroadcastObject([]byte("hi"), 0))
	if string(b) != "hi" {
		t.Fatalf("broadcast object %q", b)
	}
	if os.Getenv("ACCELERATE_DEBUG_MODE") == "" && must[bool](t)(acc.DebugMode()) {
		t.Fatal("DebugMode is on without ACCELERATE_DEBUG_MODE")
	}
}

// Accelerate's split and nested-operation expectations across real processes.
func TestCollectivesThroughAccelLaunch(t *testing.T) {
	launcher := os.Getenv("ACCEL_CLI")
	if launcher == "" {
		t.Skip("ACCEL_CLI (the accel command) is not set; run through CTest")
	}
	for _, nproc := range []int{2, 3} {
		cmd := exec.Command(launcher, "launch", "--nproc_per_node", fmt.Sprint(nproc), "--master_port", "0",
			os.Args[0], "-test.run=^TestCollectivesWorker$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ACCEL_GO_COLLECTIVES_WORKER=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%d processes: %v\n%s", nproc, err, out)
		}
		if want := fmt.Sprintf("[rank 0] collectives ok %d", nproc); !strings.Contains(string(out), want) {
			t.Fatalf("no %q in\n%s", want, out)
		}
	}
}

func TestCollectivesWorker(t *testing.T) {
	if os.Getenv("ACCEL_GO_COLLECTIVES_WORKER") == "" {
		t.Skip("run by TestCollectivesThroughAccelLaunch")
	}
	acc := newCPU(t, AcceleratorOptions{})
	n := must[int](t)(acc.NumProcesses())
	rank := must[int](t)(acc.ProcessIndex())

	// Fewer items than processes: the surplus process gets nothing, or the last item padded.
	items := make([]int, n-1)
	for i := range items {
		items[i] = 10 * i
	}
	share := must[[]int](t)(SplitBetweenProcesses(acc, items, false))
	padded := must[[]int](t)(SplitBetweenProcesses(acc, items, true))
	if rank < n-1 && (!equal(share, []int{10 * rank}) || !equal(padded, share)) ||
		rank == n-1 && (len(share) != 0 || !equal(padded, []int{10 * (n - 2)})) {
		t.Fatalf("rank %d: share %v, padded %v", rank, share, padded)
	}
	m := must[map[string][]string](t)(SplitMapBetweenProcesses(acc, map[string][]string{
		"a": make([]string, 3*n-1), "b": make([]string, 3*n-1)}, true))
	if len(m["a"]) != 3 || len(m["b"]) != 3 {
		t.Fatalf("rank %d: padded map shares %d and %d, want 3", rank, len(m["a"]), len(m["b"]))
	}

	rows := must[*Tensor](t)(NewTensor(make([]float32, 2*(rank+1)), int64(rank+1), 2))
	vec := must[*Tensor](t)(NewTensor([]float32{float32(rank), 1}, 2))
	gathered := must[any](t)(acc.GatherNested(map[string]any{"rows": rows, "more": []*Tensor{vec}})).(map[string]any)
	if shape := must[[]int64](t)(gathered["rows"].(*Tensor).Shape()); shape[0] != int64(n*(n+1)/2) {
		t.Fatalf("gathered rows %v", shape)
	}
	total := float32(n * (n - 1) / 2)
	reduced := must[any](t)(acc.ReduceNested([]*Tensor{vec}, ReduceSum, 2)).([]*Tensor)
	if v := must[[]float32](t)(reduced[0].Float32s()); !equal(v, []float32{2 * total, 2 * float32(n)}) {
		t.Fatalf("reduce sum scale 2: %v", v)
	}
	sent := must[any](t)(acc.BroadcastNested(map[string]*Tensor{"v": vec}, n-1)).(map[string]*Tensor)
	if v := must[[]float32](t)(sent["v"].Float32s()); !equal(v, []float32{float32(n - 1), 1}) {
		t.Fatalf("broadcast %v", v)
	}
	pad := must[any](t)(acc.PadAcrossProcessesNested([]any{rows}, 0, -1, false)).([]any)
	if shape := must[[]int64](t)(pad[0].(*Tensor).Shape()); shape[0] != int64(n) {
		t.Fatalf("padded %v", shape)
	}
	word := []byte(nil)
	if rank == 1 {
		word = []byte("from one")
	}
	if got := must[[]byte](t)(acc.BroadcastObject(word, 1)); string(got) != "from one" {
		t.Fatalf("broadcast object %q", got)
	}
	ok(t, acc.WaitForEveryone())
	fmt.Printf("[rank %d] collectives ok %d\n", rank, n)
}
