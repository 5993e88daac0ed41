package accel

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// Status is libaccel's accel_status: the kind of a failure.
type Status int

const (
	StatusOK           Status = 0
	ErrInvalidArgument Status = 1 // a bad value from the caller
	ErrState           Status = 2 // the call is not valid now
	ErrIO              Status = 3 // a file could not be read or written, or is malformed
	ErrDistributed     Status = 4 // a process group or collective failed
	ErrTimeout         Status = 5 // a collective or rendezvous timed out
	ErrUnsupported     Status = 6 // the build or device cannot do it
	ErrInternal        Status = 7 // a bug in libaccel or LibTorch
	ErrResource        Status = 8 // the system refused a resource (a thread): retry with less
)

// String is the C name of the status ("ACCEL_ERR_STATE").
func (s Status) String() string {
	var name string
	_ = withThread(func() { name = core.Status_name(int(s)) })
	return name
}

// Error is a failed libaccel call: its status and the C layer's message.
// Test for a kind with errors.As, or errors.Is(err, accel.ErrState) and the like.
type Error struct {
	Code Status
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, accel.ErrInvalidArgument) match on the status.
func (e *Error) Is(target error) bool {
	s, ok := target.(Status)
	return ok && e.Code == s
}

// Error makes a Status usable as an errors.Is target.
func (s Status) Error() string { return s.String() }

// ErrClosed is returned (wrapped, naming the type) by every method of a closed object.
var ErrClosed = errors.New("accel: object is closed")

func closedError(what string) error { return fmt.Errorf("accel: %s is closed: %w", what, ErrClosed) }

// withThread runs f with the goroutine pinned to its OS thread and returns the
// failure f's wrapper calls left in that thread's error slot (accel_go.i).
func withThread(f func()) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	yieldNowAndThen()
	if core.Take_error_code() != 0 { // stale: from a wrapper call made outside withThread
		core.Take_error_message()
	}
	f()
	return takeError()
}

// call runs one wrapper call that returns a value; the value is meaningless when the error is not nil.
func call[T any](f func() T) (T, error) {
	var v T
	err := withThread(func() { v = f() })
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func takeError() error {
	code := core.Take_error_code()
	if code == 0 {
		return nil
	}
	return &Error{Code: Status(code), Msg: core.Take_error_message()}
}

// panicText is the message a recovered panic becomes inside a callback.
func panicText(r any) string {
	if err, ok := r.(error); ok {
		return "panic: " + err.Error()
	}
	return fmt.Sprintf("panic: %v", r)
}

// callbackResult turns what a Go callback did into the director's message ("" = OK).
func callbackResult(err error) string {
	if err == nil {
		return ""
	}
	if msg := err.Error(); msg != "" {
		return msg
	}
	return "callback failed"
}

// yieldNowAndThen passes through Go's scheduler every few milliseconds of
// wrapper calls. A training loop spends its time in cgo calls and never
// blocks in Go, so its processor's scheduling tick stands still; after 10 ms
// of that the runtime's monitor thread takes the processor away at the next
// long call and then polls every 20 us for a while. On a 2-core machine with
// 2 ranks that polling takes the core a peer is waiting on: Go ran the
// 2-process `tiny` loop at about 0.75x of C++. Yielding every 5 ms keeps the
// tick moving. The caller holds its OS thread while it yields, so the
// goroutine comes back to the same thread: moving to another one would give
// LibTorch's OpenMP a second thread team (one per calling thread), whose
// spinning workers halved `tiny` at 1 process x 2 threads (docs/benchmarks.md).
func yieldNowAndThen() {
	now := int64(time.Since(clockBase))
	if last := lastYield.Load(); now-last >= int64(yieldEvery) && lastYield.CompareAndSwap(last, now) {
		runtime.Gosched()
	}
}

const yieldEvery = 5 * time.Millisecond

var (
	clockBase = time.Now() // time.Since reads the monotonic clock
	lastYield atomic.Int64
)
