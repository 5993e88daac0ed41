package accel

import (
	"fmt"
	"runtime"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// scope runs begin, body and end; end runs even when body fails or panics, and
// body's error comes first.
func scope(begin, end func() error, body func() error) (err error) {
	if err := begin(); err != nil {
		return err
	}
	defer func() {
		if endErr := end(); err == nil {
			err = endErr
		}
	}()
	return body()
}

// Accumulate runs one micro-step of gradient accumulation: inside, gradients
// sync and the optimizer really steps only every GradientAccumulationSteps-th
// time (or at the loader's end).
func (a *Accelerator) Accumulate(m *Model, body func() error) error {
	return scope(func() error { return a.AccumulateBegin(m) }, func() error { return a.AccumulateEnd(m) }, body)
}

// AccumulateBegin and AccumulateEnd bracket Accumulate's body (use defer).
func (a *Accelerator) AccumulateBegin(m *Model) error {
	return a.withModel(m, func(h core.Accelerator, mh core.Model) { h.Accumulate_begin(mh) })
}

// AccumulateEnd ends what AccumulateBegin started.
func (a *Accelerator) AccumulateEnd(m *Model) error {
	return a.withModel(m, func(h core.Accelerator, mh core.Model) { h.Accumulate_end(mh) })
}

// NoSync runs body without gradient synchronisation.
func (a *Accelerator) NoSync(m *Model, body func() error) error {
	return scope(func() error { return a.withModel(m, func(h core.Accelerator, mh core.Model) { h.No_sync_begin(mh) }) },
		func() error { return a.withModel(m, func(h core.Accelerator, mh core.Model) { h.No_sync_end(mh) }) }, body)
}

// AverageParameters replaces each of the model's parameters by its mean across
// the data-parallel processes (LocalSGD's synchronisation). Collective.
func (a *Accelerator) AverageParameters(m *Model) error {
	return a.withModel(m, func(h core.Accelerator, mh core.Model) { h.Average_parameters(mh) })
}

// LocalSGD is Accelerate's LocalSGD: body runs without gradient
// synchronisation and gets step, to call after each optimizer step; every
// localSGDSteps steps, and when body returns, the parameters are averaged
// across processes. On one process body just runs (step does nothing).
func (a *Accelerator) LocalSGD(m *Model, localSGDSteps int, body func(step func() error) error) error {
	if localSGDSteps < 1 {
		return &Error{Code: ErrInvalidArgument, Msg: fmt.Sprintf("LocalSGD localSGDSteps must be positive, got %d", localSGDSteps)}
	}
	n, err := a.NumProcesses()
	if err != nil {
		return err
	}
	if n == 1 {
		return body(func() error { return nil })
	}
	steps := 0
	step := func() error {
		steps++
		if steps%localSGDSteps == 0 {
			return a.AverageParameters(m)
		}
		return nil
	}
	return a.NoSync(m, func() error {
		if err := body(step); err != nil {
			return err
		}
		return a.AverageParameters(m)
	})
}

// TriggerSyncInBackward makes the next backward sync gradients even inside NoSync.
func (a *Accelerator) TriggerSyncInBackward(m *Model) error {
	return a.withModel(m, func(h core.Accelerator, mh core.Model) { h.Trigger_sync_in_backward(mh) })
}

// Autocast runs body in the mixed-precision autocast region (if enabled).
func (a *Accelerator) Autocast(enabled bool, body func() error) error {
	return scope(func() error { return a.AutocastBegin(enabled) }, a.AutocastEnd, body)
}

// AutocastDefault runs body in the autocast region, on unless an
// AutocastKwargs given at creation turned it off (Accelerate's autocast()).
func (a *Accelerator) AutocastDefault(body func() error) error {
	begin := func() error {
		return lockedBegin(func() error { return a.do(func(h core.Accelerator) { h.Autocast_begin_default() }) })
	}
	return scope(begin, a.AutocastEnd, body)
}

// AutocastBegin and AutocastEnd bracket Autocast's body (use defer). Autocast
// belongs to an OS thread, so AutocastBegin locks the goroutine to its thread
// until the matching AutocastEnd.
func (a *Accelerator) AutocastBegin(enabled bool) error {
	return lockedBegin(func() error { return a.do(func(h core.Accelerator) { h.Autocast_begin(enabled) }) })
}

// AutocastEnd ends what AutocastBegin started; without one it is an *Error (ErrState).
func (a *Accelerator) AutocastEnd() error {
	return lockedEnd(func() error { return a.do(func(h core.Accelerator) { h.Autocast_end() }) })
}

// lockedBegin runs begin with the goroutine locked to its OS thread, and
// keeps it locked when begin succeeds: the scope's mode lives on that thread.
func lockedBegin(begin func() error) error {
	runtime.LockOSThread()
	err := begin()
	if err != nil {
		runtime.UnlockOSThread()
	}
	return err
}

// lockedEnd runs end and releases lockedBegin's lock when the scope closed.
func lockedEnd(end func() error) error {
	err := end()
	if err == nil {
		runtime.UnlockOSThread()
	}
	return err
}

// MainProcessFirst runs body on the main process first, then on the others. Collective.
func (a *Accelerator) MainProcessFirst(body func() error) error {
	return scope(func() error { return a.do(func(h core.Accelerator) { h.Main_process_first_begin() }) },
		func() error { return a.do(func(h core.Accelerator) { h.Main_process_first_end() }) }, body)
}

// LocalMainProcessFirst runs body on each machine's main process first. Collective.
func (a *Accelerator) LocalMainProcessFirst(body func() error) error {
	return scope(func() error { return a.do(func(h core.Accelerator) { h.Local_main_process_first_begin() }) },
		func() error { return a.do(func(h core.Accelerator) { h.Local_main_process_first_end() }) }, body)
}

// JoinUnevenInputs lets processes with fewer batches finish body early.
func (a *Accelerator) JoinUnevenInputs(body func() error) error {
	return scope(func() error { return a.do(func(h core.Accelerator) { h.Join_uneven_inputs_begin() }) },
		func() error { return a.do(func(h core.Accelerator) { h.Join_uneven_inputs_end() }) }, body)
}

// EndOfDataloader tells whether the current batch is the loader's last.
func (a *Accelerator) EndOfDataloader() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.End_of_dataloader() })
}

// InDataloader tells whether a loader prepared by this accelerator is in an
// epoch: from the Next that opens it to the one that reports its end
// (Accelerate's gradient_state.in_dataloader). DataLoader.OpenIndex tells which.
func (a *Accelerator) InDataloader() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.In_dataloader() })
}

// Remainder is the number of real samples in the last gathered round.
func (a *Accelerator) Remainder() (int64, error) {
	return accelValue(a, func(h core.Accelerator) int64 { return h.Remainder() })
}

// SyncGradients tells whether this micro-step syncs gradients (and the optimizer steps).
func (a *Accelerator) SyncGradients() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Sync_gradients() })
}

// GradientAccumulationSteps is the number of micro-steps per optimizer step.
func (a *Accelerator) GradientAccumulationSteps() (int64, error) {
	return accelValue(a, func(h core.Accelerator) int64 { return h.Gradient_accumulation_steps() })
}

// AccumulationStep is Accelerate's accelerator.step: the micro-steps Accumulate
// has counted (a window ends at each multiple of GradientAccumulationSteps); 0
// at the start and again after a loader's last batch with SyncWithDataloader.
// SaveState keeps it and LoadState restores it.
func (a *Accelerator) AccumulationStep() (int64, error) {
	return accelValue(a, func(h core.Accelerator) int64 { return h.Accumulation_step() })
}

// ClipGradNorm clips the gradients' total norm to maxNorm and returns the norm before clipping.
func (a *Accelerator) ClipGradNorm(m *Model, maxNorm, normType float64) (float64, error) {
	var v float64
	err := a.withModel(m, func(h core.Accelerator, mh core.Model) { v = h.Clip_grad_norm(mh, maxNorm, normType) })
	return v, err
}

// ClipGradValue clamps every gradient to [-clipValue, clipValue].
func (a *Accelerator) ClipGradValue(m *Model, clipValue float64) error {
	return a.withModel(m, func(h core.Accelerator, mh core.Model) { h.Clip_grad_value(mh, clipValue) })
}

// UnscaleGradients divides the fp16 loss scale out of the optimizer's gradients.
func (a *Accelerator) UnscaleGradients(o *Optimizer) error {
	oh, err := o.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(o)
	return a.do(func(h core.Accelerator) { h.Unscale_gradients(oh) })
}

// LossScale is the current fp16 loss scale (1 without fp16).
func (a *Accelerator) LossScale() (float64, error) {
	return accelValue(a, func(h core.Accelerator) float64 { return h.Loss_scale() })
}

// HeldBytes is what Accelerator.HeldBytes counts.
type HeldBytes struct {
	Parameters, Gradients, OptimizerState int64
}

// HeldBytes returns the bytes this process holds for the prepared model's
// parameters and gradients and the optimizer's state (o may be nil), counted
// from the tensors' storages: what sharding saves. Not collective.
func (a *Accelerator) HeldBytes(m *Model, o *Optimizer) (HeldBytes, error) {
	var held []int64
	var oh core.Optimizer
	if o != nil {
		var err error
		if oh, err = o.handle(); err != nil {
			return HeldBytes{}, err
		}
		defer runtime.KeepAlive(o)
	}
	err := a.withModel(m, func(h core.Accelerator, mh core.Model) {
		if oh != nil {
			held = takeInt64Vector(h.Held_bytes(mh, oh))
		} else {
			held = takeInt64Vector(h.Held_bytes(mh))
		}
	})
	if err != nil || len(held) != 3 {
		return HeldBytes{}, err
	}
	return HeldBytes{Parameters: held[0], Gradients: held[1], OptimizerState: held[2]}, nil
}
