package accel

import (
	"os"
	"path/filepath"
	"testing"
)

// Accelerate parity of accumulation options, checkpoints and model files
// (issue 17, items 14, 15, 18, 19).
func TestSaveStateReturnsTheFolderAndNeverReplacesAnAutomaticCheckpoint(t *testing.T) {
	dir := t.TempDir()
	acc := newCPU(t, AcceleratorOptions{ProjectDir: dir, AutomaticCheckpointNaming: true, SyncEachBatch: true,
		AdjustScheduler: true})
	model := must[*Model](t)(ModelFromJSON(linear))
	ok(t, acc.Prepare(model))
	if got := must[string](t)(acc.SaveState("")); got != filepath.Join(dir, "checkpoints", "checkpoint_0") {
		t.Fatalf("SaveState wrote %q", got)
	}
	ok(t, acc.SetSaveIteration(0)) // Accelerate's project_configuration.iteration = 0
	_, err := acc.SaveState("")
	wantError(t, err, ErrInvalidArgument, "checkpoint_0 (iteration 0) already exists")
	ok(t, acc.SetSaveIteration(3))
	if got := must[string](t)(acc.SaveState("")); got != filepath.Join(dir, "checkpoints", "checkpoint_3") {
		t.Fatalf("SaveState wrote %q", got)
	}
	wantError(t, acc.SetSaveIteration(-1), ErrInvalidArgument, "-1")

	// Clear (free_memory): the model is no longer saved.
	ok(t, acc.Clear())
	after := filepath.Join(dir, "after")
	if got := must[string](t)(acc.SaveState(after)); got != after {
		t.Fatalf("SaveState wrote %q", got)
	}
	if _, err := os.Stat(filepath.Join(after, "model.safetensors")); !os.IsNotExist(err) {
		t.Fatalf("a freed model was saved (%v)", err)
	}
}

func TestLaunchersAccumulationStepsWin(t *testing.T) {
	t.Setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4")
	acc := newCPU(t, AcceleratorOptions{GradientAccumulationSteps: 2})
	if steps := must[int64](t)(acc.GradientAccumulationSteps()); steps != 4 {
		t.Fatalf("gradient accumulation steps %d, want the launcher's 4", steps)
	}
}
