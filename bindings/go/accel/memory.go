package accel

import (
	"errors"
	"fmt"
)

// FindExecutableBatchSize is Accelerate's find_executable_batch_size: it calls
// fn(batchSize) from startingBatchSize on and, when fn fails for lack of
// memory (an error matching ErrResource, which libaccel's calls return when
// CUDA or host memory runs out), tries again with int64(batchSize * 0.9), as
// Accelerate 1.x does (128, 115, 103, ...). It returns the batch size for
// which fn returned nil. Other errors are returned at once; reaching 0 is an
// *Error with ErrResource, "No executable batch size found, reached zero.".
func FindExecutableBatchSize(startingBatchSize int64, fn func(batchSize int64) error) (int64, error) {
	if startingBatchSize < 0 {
		return 0, invalid(fmt.Sprintf("FindExecutableBatchSize: startingBatchSize must be >= 0, got %d", startingBatchSize))
	}
	if fn == nil {
		return 0, invalid("FindExecutableBatchSize: fn is nil")
	}
	for batchSize := startingBatchSize; batchSize > 0; batchSize = int64(float64(batchSize) * 0.9) {
		err := fn(batchSize)
		if err == nil {
			return batchSize, nil
		}
		if !errors.Is(err, ErrResource) {
			return 0, err
		}
	}
	return 0, &Error{Code: ErrResource, Msg: "No executable batch size found, reached zero."}
}
