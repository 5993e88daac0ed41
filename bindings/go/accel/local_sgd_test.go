package accel

import (
	"strings"
	"testing"
)

// Accelerate's LocalSGD on one process: body runs, step does nothing, nothing is averaged.
// Several processes: bindings/python/tests/test_distributed.py (the same core call).
func TestLocalSGDOnOneProcessRunsTheBodyAndRefusesBadArguments(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{ProjectDir: t.TempDir()})
	linear := `[{"type": "Linear", "in_features": 4, "out_features": 3}]`
	model := must[*Model](t)(ModelFromJSON(linear))
	ok(t, acc.PrepareModel(model))
	steps := 0
	ok(t, acc.LocalSGD(model, 2, func(step func() error) error {
		for i := 0; i < 3; i++ {
			if err := step(); err != nil {
				return err
			}
			steps++
		}
		return nil
	}))
	if steps != 3 {
		t.Fatalf("the body ran %d steps", steps)
	}
	if err := acc.LocalSGD(model, 0, func(func() error) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), "localSGDSteps") {
		t.Fatalf("want an error naming localSGDSteps, got %v", err)
	}
	unprepared := must[*Model](t)(ModelFromJSON(linear))
	if err := acc.AverageParameters(unprepared); err == nil || !strings.Contains(err.Error(), "not prepared") {
		t.Fatalf("want a not-prepared error, got %v", err)
	}
}
