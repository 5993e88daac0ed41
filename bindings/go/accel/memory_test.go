package accel

import (
	"errors"
	"testing"
)

func TestFindExecutableBatchSizeFollowsAccelerate(t *testing.T) {
	// Accelerate 1.x's tests/test_memory_utils.py: int(batch_size * 0.9) from 128 down to 8.
	want := []int64{128, 115, 103, 92, 82, 73, 65, 58, 52, 46, 41, 36, 32, 28, 25, 22, 19, 17, 15, 13, 11, 9, 8}
	var tried []int64
	found, err := FindExecutableBatchSize(128, func(batchSize int64) error {
		tried = append(tried, batchSize)
		if batchSize != 8 {
			return &Error{Code: ErrResource, Msg: "CPU out of memory."}
		}
		return nil
	})
	ok(t, err)
	if found != 8 || !equal(tried, want) {
		t.Fatalf("found %d after %v", found, tried)
	}
	_, err = FindExecutableBatchSize(128, func(int64) error { return &Error{Code: ErrResource, Msg: "oom"} })
	wantError(t, err, ErrResource, "No executable batch size found, reached zero.")
	other := errors.New("Oops, we had an error!")
	tried = nil
	if _, err = FindExecutableBatchSize(16, func(b int64) error { tried = append(tried, b); return other }); err != other || len(tried) != 1 {
		t.Fatalf("err %v after %v", err, tried)
	}
	_, err = FindExecutableBatchSize(-1, func(int64) error { return nil })
	wantError(t, err, ErrInvalidArgument, "startingBatchSize must be >= 0, got -1")
}
