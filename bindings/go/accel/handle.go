package accel

import "runtime"

// Every wrapper of a SWIG object (Tensor, Model, Optimizer, Scheduler,
// Dataset, DataLoader, Sequences, ProgressBar, Accelerator) follows the one
// pattern written here once. It embeds owned[H], the SWIG object it owns,
// through an alias (type tensorHandle = owned[core.Tensor]: go doc lists an
// embedded generic instantiation among a struct's fields, an unexported name
// it hides), and names its handleKind; then
//   - own registers its Close as the finalizer, for a wrapper dropped unclosed;
//   - live is its handle() method: the SWIG object, or, for a closed or nil
//     wrapper, an error wrapping ErrClosed that names the type;
//   - release is its Close: frees the object once; closing twice, or a nil
//     wrapper, is fine;
//   - run is its do method, where it has one: a call on the SWIG object on a
//     pinned thread, the wrapper kept alive meanwhile.
// The wrapper keeps only what is its own: the objects it keeps alive, and
// what its Close does besides (the Accelerator's waits for an abandoned call).

// swigObject is a SWIG proxy: core.Tensor, core.Model, ...
type swigObject interface{ Swigcptr() uintptr }

// owned is the SWIG object a wrapper holds; h is nil once it is closed.
type owned[H swigObject] struct {
	h H
}

// ref is owned's address, promoted to the wrapper for the functions below.
func (o *owned[H]) ref() *owned[H] { return o }

// closed tells whether the object was released (or never held).
func (o *owned[H]) closed() bool { return any(o.h) == nil } // H is an interface type

// handleKind is what one wrapper type adds to the pattern.
type handleKind[H swigObject] struct {
	name string  // what its closed errors call it: "Tensor"
	free func(H) // SWIG's delete: core.DeleteTensor
}

// wrapper is a pointer to a type that embeds owned[H]: *Tensor, *Model, ...
type wrapper[W any, H swigObject] interface {
	*W
	ref() *owned[H]
	Close() error
}

// own makes w own h, with w's Close as its finalizer, and returns w.
func own[W any, H swigObject, P wrapper[W, H]](w P, h H) P {
	w.ref().h = h
	runtime.SetFinalizer(w, func(w P) { w.Close() })
	return w
}

// live is w's SWIG object, or an error wrapping ErrClosed naming w's kind
// when w is closed or nil.
func live[W any, H swigObject, P wrapper[W, H]](w P, kind *handleKind[H]) (H, error) {
	if w == nil || w.ref().closed() {
		var none H
		return none, closedError(kind.name)
	}
	return w.ref().h, nil
}

// take empties w and cancels its finalizer, and returns the SWIG object it
// held; ok is false when w was closed or nil already.
func take[W any, H swigObject, P wrapper[W, H]](w P) (h H, ok bool) {
	if w == nil || w.ref().closed() {
		return h, false
	}
	h = w.ref().h
	var none H
	w.ref().h = none
	runtime.SetFinalizer(w, nil)
	return h, true
}

// release is Close: it frees w's SWIG object the first time; closing twice,
// or a nil w, is fine.
func release[W any, H swigObject, P wrapper[W, H]](w P, kind *handleKind[H]) error {
	if h, ok := take[W, H](w); ok {
		kind.free(h)
	}
	return nil
}

// run calls f with w's SWIG object on a pinned thread (withThread), keeping w
// alive until f returns; handle is w's handle method. It is the do method of
// the wrappers that have one.
func run[H swigObject](w any, handle func() (H, error), f func(H)) error {
	h, err := handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(w)
	return withThread(func() { f(h) })
}
