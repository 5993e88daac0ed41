package accel

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// captureStderr runs f with file descriptor 2 (where the C++ core writes the
// bar) pointed at a temporary file and returns what was written there.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	file, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(saved)
	if err := syscall.Dup3(int(file.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	f()
	if err := syscall.Dup3(saved, 2, 0); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestProgressBarOnAFileAndOff(t *testing.T) {
	t.Setenv("RANK", "0")
	t.Setenv("ACCEL_DISABLE_PROGRESS_BAR", "")
	ds := must[*Dataset](t)(NewMapDataset(&squares{n: 20}, squareFields...))
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2}))
	defer loader.Close()
	if err := loader.ShowProgress("squares"); err != nil {
		t.Fatal(err)
	}
	shown := captureStderr(t, func() {
		if _, _, err := collect(t, loader); err != nil {
			t.Error(err)
		}
	})
	if !strings.Contains(shown, "squares") || !strings.Contains(shown, "10/10") || strings.Contains(shown, "\r") {
		t.Fatalf("a bar on a file prints plain lines up to 10/10, got %q", shown)
	}
	if err := loader.HideProgress(); err != nil {
		t.Fatal(err)
	}
	hidden := captureStderr(t, func() {
		if _, _, err := collect(t, loader); err != nil {
			t.Error(err)
		}
	})
	if strings.Contains(hidden, "squares") {
		t.Fatalf("a hidden bar printed %q", hidden)
	}
	loader.Close()
	if err := loader.ShowProgress(""); err == nil {
		t.Fatal("ShowProgress on a closed loader succeeded")
	}
}
