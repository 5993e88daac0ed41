package accel

import (
	"encoding/json"
	"runtime"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// What an evaluation loop needs around the model: no_grad scopes, loss
// options, the metric tensor operations, LoadStateDict and SendToDevice.

// NoGrad runs body as under torch.no_grad(): no autograd graph is recorded, so
// outputs cannot be passed to Backward. Grad mode belongs to an OS thread, so
// the goroutine stays on its thread for the body.
func (a *Accelerator) NoGrad(body func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return scope(a.NoGradBegin, a.NoGradEnd, body)
}

// NoGradBegin and NoGradEnd bracket NoGrad's body (use defer). NoGradBegin
// locks the goroutine to its OS thread until the matching NoGradEnd.
func (a *Accelerator) NoGradBegin() error {
	return lockedBegin(func() error { return a.do(func(h core.Accelerator) { h.No_grad_begin() }) })
}

// NoGradEnd ends what NoGradBegin started; without one it is an *Error (ErrState).
func (a *Accelerator) NoGradEnd() error {
	return lockedEnd(func() error { return a.do(func(h core.Accelerator) { h.No_grad_end() }) })
}

// SendToDevice returns t on the accelerator's device (Accelerate's
// send_to_device, for batches built by hand). The caller closes the result.
func (a *Accelerator) SendToDevice(t *Tensor) (*Tensor, error) {
	return a.tensorOp(t, func(h core.Accelerator, x core.Tensor) core.Tensor { return h.Send_to_device(x) })
}

// tensorMap copies tensors into a new core map the caller deletes.
func tensorMap(tensors map[string]*Tensor) (core.TensorMap, error) {
	m, err := call(core.NewTensorMap)
	if err != nil {
		return nil, err
	}
	for name, t := range tensors {
		th, err := t.handle()
		if err == nil {
			_, err = call(func() int { m.Set(name, th); return 0 })
		}
		if err != nil {
			core.DeleteTensorMap(m)
			return nil, err
		}
	}
	return m, nil
}

// IncompatibleKeys is what LoadStateDict returns, as PyTorch's
// load_state_dict does: the model's names the map lacked (in the model's
// order) and the map's names the model lacks (sorted). Both are empty after a
// strict load, where any mismatch is the error.
type IncompatibleKeys struct {
	MissingKeys    []string `json:"missing_keys"`
	UnexpectedKeys []string `json:"unexpected_keys"`
}

// AllMatched reports whether every name matched.
func (k IncompatibleKeys) AllMatched() bool {
	return len(k.MissingKeys) == 0 && len(k.UnexpectedKeys) == 0
}

// LoadStateDict copies each tensor into the model's parameter or buffer of
// that name (PyTorch's load_state_dict). strict: a name the model lacks, or a
// model name the map lacks, is an *Error listing them; otherwise they are
// skipped and returned. Everything is checked before anything is copied.
// Collective under FULL_SHARD (every process calls it).
func (m *Model) LoadStateDict(tensors map[string]*Tensor, strict bool) (IncompatibleKeys, error) {
	var keys IncompatibleKeys
	h, err := m.handle()
	if err != nil {
		return keys, err
	}
	in, err := tensorMap(tensors)
	if err != nil {
		return keys, err
	}
	defer core.DeleteTensorMap(in)
	defer runtime.KeepAlive(tensors)
	defer runtime.KeepAlive(m)
	report, err := call(func() string { return h.Load_state_dict_report_json(in, strict) })
	if err != nil {
		return keys, err
	}
	if err := json.Unmarshal([]byte(report), &keys); err != nil {
		return keys, err
	}
	return keys, nil
}

// LossOptions are torch.nn.CrossEntropyLoss's: targets equal to IgnoreIndex
// count for nothing; LabelSmoothing in [0, 1]. DefaultLossOptions has PyTorch's.
type LossOptions struct {
	IgnoreIndex    int64
	LabelSmoothing float64
}

// DefaultLossOptions returns ignore_index -100 and no label smoothing.
func DefaultLossOptions() LossOptions { return LossOptions{IgnoreIndex: -100} }

// LossWith is Loss with options (cross-entropy, NLL and CausalLM take them).
func (t *Tensor) LossWith(kind LossKind, target *Tensor, opts LossOptions) (*Tensor, error) {
	return t.binary(target, func(a, b core.Tensor) core.Tensor {
		return a.Loss_ext(core.Accel_loss_kind(kind), b, opts.IgnoreIndex, opts.LabelSmoothing)
	})
}

// Softmax along dim (negative counts from the end).
func (t *Tensor) Softmax(dim int64) (*Tensor, error) {
	return t.unary(func(h core.Tensor) core.Tensor { return h.Softmax(dim) })
}

// TopK returns the k largest entries along dim, largest first, and their int64 indices.
func (t *Tensor) TopK(k, dim int64) (values, indices *Tensor, err error) {
	h, err := t.handle()
	if err != nil {
		return nil, nil, err
	}
	defer runtime.KeepAlive(t)
	out, err := call(func() core.TensorMap { return h.Topk(k, dim) })
	if err != nil {
		return nil, nil, err
	}
	entries, err := readTensorMap(out)
	if err != nil {
		return nil, nil, err
	}
	return entries[0].Tensor, entries[1].Tensor, nil
}

// Mean of all elements (integers and bools average as float32: a bool mean is an accuracy).
func (t *Tensor) Mean() (*Tensor, error) {
	return t.unary(func(h core.Tensor) core.Tensor { return h.Mean() })
}

// MeanDim is the mean along dim, which leaves the shape.
func (t *Tensor) MeanDim(dim int64) (*Tensor, error) {
	return t.unary(func(h core.Tensor) core.Tensor { return h.Mean_dim(dim) })
}

// Reshape returns the same elements in shape (one entry may be -1).
func (t *Tensor) Reshape(shape ...int64) (*Tensor, error) {
	dims := core.NewInt64Vector()
	defer core.DeleteInt64Vector(dims)
	for _, d := range shape {
		dims.Add(d)
	}
	return t.unary(func(h core.Tensor) core.Tensor { return h.Reshape(dims) })
}

// Narrow returns length entries from start along dim, sharing storage.
func (t *Tensor) Narrow(dim, start, length int64) (*Tensor, error) {
	return t.unary(func(h core.Tensor) core.Tensor { return h.Narrow(dim, start, length) })
}

// CompareOp selects Tensor.Compare's comparison.
type CompareOp int

const (
	CompareEq CompareOp = 0
	CompareNe CompareOp = 1
	CompareLt CompareOp = 2
	CompareLe CompareOp = 3
	CompareGt CompareOp = 4
	CompareGe CompareOp = 5
)

// Compare is t <op> other element-wise, as a bool tensor (shapes broadcast).
func (t *Tensor) Compare(other *Tensor, op CompareOp) (*Tensor, error) {
	return t.binary(other, func(a, b core.Tensor) core.Tensor { return a.Compare(b, core.Accel_compare_op(op)) })
}
