package accel

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// Context variants of the calls that wait for other processes or for I/O.
//
// What a context can do here: a context already done returns its error before
// anything starts, with nothing changed. A call in progress cannot be
// interrupted inside LibTorch, so it runs on its own goroutine; when ctx ends
// first, the method returns an error wrapping ctx.Err() at once and the call
// goes on in the background until it completes or fails (at the latest after
// the accelerator's Timeout, which stays the limit the backend enforces).
// Until then every other method of that accelerator fails with ErrState
// naming the call, so nothing runs concurrently with it; Close frees the
// accelerator once it ends. A context without a Done channel costs nothing.

// pendingCall is a context-abandoned call still running in the background.
type pendingCall struct {
	op   string
	done chan struct{} // closed when the call returns
}

// busyError reports a pending call, or forgets it once it has ended.
func (a *Accelerator) busyError() error {
	a.pendingMu.Lock()
	defer a.pendingMu.Unlock()
	if a.pending == nil {
		return nil
	}
	select {
	case <-a.pending.done:
		a.pending = nil
		return nil
	default:
		return &Error{Code: ErrState, Msg: fmt.Sprintf("accel: %s, abandoned when its context ended, "+
			"is still running; the accelerator is usable again once it ends (at the latest after its Timeout)", a.pending.op)}
	}
}

func (a *Accelerator) pendingDone() chan struct{} {
	a.pendingMu.Lock()
	defer a.pendingMu.Unlock()
	if a.pending == nil {
		return nil
	}
	return a.pending.done
}

// runContext runs call on its own pinned goroutine and waits for it or for
// ctx. discard frees call's result when the caller has gone (nil: nothing to free).
func runContext(ctx context.Context, op string, call func() error, discard func()) (err error, abandoned chan struct{}) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("accel: %s not started: %w", op, err), nil
	}
	if ctx.Done() == nil {
		return call(), nil
	}
	done := make(chan struct{})
	var callErr error
	go func() {
		defer close(done)
		callErr = call()
	}()
	select {
	case <-done:
		return callErr, nil
	case <-ctx.Done():
	}
	select {
	case <-done: // finished meanwhile: its result wins
		return callErr, nil
	default:
	}
	if discard != nil {
		go func() {
			<-done
			if callErr == nil {
				discard()
			}
		}()
	}
	return fmt.Errorf("accel: %s abandoned, still running in the background: %w", op, ctx.Err()), done
}

// doContext is do under ctx (see the comment at the top of this file).
func (a *Accelerator) doContext(ctx context.Context, op string, f func(core.Accelerator), discard func()) error {
	h, err := a.handle()
	if err != nil {
		return err
	}
	err, abandoned := runContext(ctx, op, func() error {
		defer runtime.KeepAlive(a)
		return withThread(func() { f(h) })
	}, discard)
	if abandoned != nil {
		a.pendingMu.Lock()
		a.pending = &pendingCall{op: op, done: abandoned}
		a.pendingMu.Unlock()
	}
	return err
}

// NewAcceleratorContext is NewAccelerator under ctx: the rendezvous with the
// other processes. When ctx ends first, the accelerator the background
// rendezvous may still create is freed, and the peers see this process leave.
func NewAcceleratorContext(ctx context.Context, options AcceleratorOptions) (*Accelerator, error) {
	var a *Accelerator
	var mu sync.Mutex // a is written by the rendezvous goroutine, read here or by discard
	err, _ := runContext(ctx, "NewAccelerator", func() error {
		created, err := NewAccelerator(options)
		mu.Lock()
		a = created
		mu.Unlock()
		return err
	}, func() {
		mu.Lock()
		defer mu.Unlock()
		a.Close()
	})
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	return a, nil
}

// WaitForEveryoneContext is WaitForEveryone under ctx. Collective.
func (a *Accelerator) WaitForEveryoneContext(ctx context.Context) error {
	return a.doContext(ctx, "WaitForEveryone", func(h core.Accelerator) { h.Wait_for_everyone() }, nil)
}

// tensorOpContext is tensorOp under ctx; an abandoned result is freed.
func (a *Accelerator) tensorOpContext(ctx context.Context, op string, t *Tensor,
	f func(core.Accelerator, core.Tensor) core.Tensor) (*Tensor, error) {
	th, err := t.handle()
	if err != nil {
		return nil, err
	}
	var out core.Tensor
	err = a.doContext(ctx, op, func(h core.Accelerator) {
		defer runtime.KeepAlive(t)
		out = f(h, th)
	}, func() {
		if out != nil && out.Swigcptr() != 0 {
			core.DeleteTensor(out)
		}
	})
	if err != nil { // out may still be written by an abandoned call
		return nil, err
	}
	return tensorResult(out, nil)
}

// GatherContext is Gather under ctx. Collective.
func (a *Accelerator) GatherContext(ctx context.Context, t *Tensor) (*Tensor, error) {
	return a.tensorOpContext(ctx, "Gather", t, func(h core.Accelerator, x core.Tensor) core.Tensor { return h.Gather(x) })
}

// GatherForMetricsContext is GatherForMetrics under ctx. Collective.
func (a *Accelerator) GatherForMetricsContext(ctx context.Context, t *Tensor) (*Tensor, error) {
	return a.tensorOpContext(ctx, "GatherForMetrics", t,
		func(h core.Accelerator, x core.Tensor) core.Tensor { return h.Gather_for_metrics(x) })
}

// SaveStateContext is SaveStateWith under ctx. Collective.
func (a *Accelerator) SaveStateContext(ctx context.Context, dir string, safeSerialization bool) (string, error) {
	var written string
	err := a.doContext(ctx, "SaveState", func(h core.Accelerator) { written = h.Save_state(dir, safeSerialization) }, nil)
	if err != nil {
		return "", err
	}
	return written, nil
}

// LoadStateContext is LoadState under ctx. Collective.
func (a *Accelerator) LoadStateContext(ctx context.Context, dir string) error {
	return a.doContext(ctx, "LoadState", func(h core.Accelerator) { h.Load_state(dir) }, nil)
}
