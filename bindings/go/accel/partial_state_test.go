package accel

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// Accelerate's PartialState on one process; tests/dist/dist_partial_state.c runs it on several.
func TestPartialStateDescribesTheProcessBesideAnAccelerator(t *testing.T) {
	state := must[*PartialState](t)(NewPartialState(PartialStateOptions{CPU: true}))
	defer state.Close()
	if i := must[int](t)(state.ProcessIndex()); i != 0 {
		t.Fatalf("ProcessIndex %d", i)
	}
	if n := must[int](t)(state.NumProcesses()); n != 1 {
		t.Fatalf("NumProcesses %d", n)
	}
	if !must[bool](t)(state.IsMainProcess()) || !must[bool](t)(state.IsLastProcess()) {
		t.Fatal("one process is the main and the last")
	}
	if d := must[string](t)(state.DistributedType()); d != "NO" {
		t.Fatalf("DistributedType %q", d)
	}
	if d := must[string](t)(state.Device()); d != "cpu" {
		t.Fatalf("Device %q", d)
	}
	share := must[[]string](t)(SplitBetweenProcessesOf(state, []string{"a", "b", "c"}, true))
	if !reflect.DeepEqual(share, []string{"a", "b", "c"}) {
		t.Fatalf("share %v", share)
	}
	ran := false
	ok(t, state.MainProcessFirst(func() error { ran = true; return nil }))
	if !ran {
		t.Fatal("MainProcessFirst did not run the body")
	}
	acc := newCPU(t, AcceleratorOptions{ProjectDir: t.TempDir()})
	ok(t, acc.WaitForEveryone())
	ok(t, state.WaitForEveryone())
}

func TestPartialStateBadTimeoutAndClosedUse(t *testing.T) {
	if _, err := NewPartialState(PartialStateOptions{CPU: true, Timeout: -time.Second}); err == nil ||
		!strings.Contains(err.Error(), "timeout_ms") {
		t.Fatalf("want an error naming timeout_ms, got %v", err)
	}
	state := must[*PartialState](t)(NewPartialState(PartialStateOptions{CPU: true}))
	ok(t, state.Close())
	ok(t, state.Close())
	if _, err := state.ProcessIndex(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("want a closed error, got %v", err)
	}
}
