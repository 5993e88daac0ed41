package accel

import (
	"errors"
	"strings"
	"testing"
)

const linear = `[{"type": "Linear", "in_features": 4, "out_features": 3}]`

func must[T any](t *testing.T) func(T, error) T {
	t.Helper()
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantError checks that err is an *Error with the status whose message contains part.
func wantError(t *testing.T, err error, status Status, part string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *accel.Error (%v) containing %q, got %v", status, part, err)
	}
	if e.Code != status || !errors.Is(err, status) {
		t.Fatalf("want status %v, got %v (%q)", status, e.Code, e.Msg)
	}
	if !strings.Contains(e.Msg, part) {
		t.Fatalf("want a message containing %q, got %q", part, e.Msg)
	}
}

func wantClosed(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), what) {
		t.Fatalf("want ErrClosed naming %s, got %v", what, err)
	}
}

func newCPU(t *testing.T, options AcceleratorOptions) *Accelerator {
	t.Helper()
	options.CPU = true
	acc := must[*Accelerator](t)(NewAccelerator(options))
	t.Cleanup(func() { acc.Close() })
	return acc
}

func equal[T comparable](a, b []T) bool {
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

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// readEpoch reads the rest of the epoch with Next (Batches needs Go 1.23).
func readEpoch(t *testing.T, loader *DataLoader) [][]*Tensor {
	t.Helper()
	var out [][]*Tensor
	for {
		batch, err := loader.Next()
		ok(t, err)
		if batch == nil {
			return out
		}
		out = append(out, batch)
	}
}
