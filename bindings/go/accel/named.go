package accel

import (
	"runtime"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// ModelFromTorchScriptOutputs loads a TorchScript module whose forward returns
// a plain tuple (or one tensor), naming its outputs for ForwardNamed.
func ModelFromTorchScriptOutputs(path string, outputNames []string) (*Model, error) {
	return withOutputNames(outputNames, func(names core.StringVector) core.Model {
		return core.ModelFrom_torchscript_outputs(path, names)
	})
}

// ModelFromTorchScriptEmpty loads a TorchScript file with its parameters on
// the meta device, never read from the file (Accelerate's init_empty_weights):
// its code, constants and buffers are loaded. outputNames as
// ModelFromTorchScriptOutputs (nil: the model's own). Fill it with Materialize
// or LoadCheckpointAndDispatch; ForwardNamed fails until then.
func ModelFromTorchScriptEmpty(path string, outputNames []string) (*Model, error) {
	return withOutputNames(outputNames, func(names core.StringVector) core.Model {
		return core.ModelFrom_torchscript_empty(path, names)
	})
}

// withOutputNames loads a model through load, handing it the names as SWIG's vector.
func withOutputNames(outputNames []string, load func(core.StringVector) core.Model) (*Model, error) {
	names := core.NewStringVector()
	defer core.DeleteStringVector(names)
	for _, name := range outputNames {
		names.Add(name)
	}
	return newModel(call(func() core.Model { return load(names) }))
}

// ForwardNamed runs the model on named inputs, as a Hugging Face model is
// called (input_ids, attention_mask, labels), and returns its named outputs
// (loss, logits). A TorchScript model binds each input to the forward argument
// of that name; outputs are named by the dict's keys, the NamedTuple's fields,
// the names given at load, "0", "1", ... for a plain tuple, or "output". A
// missing, unknown or mistyped input is an *Error (ErrInvalidArgument) naming
// it with the expected and the given names. The caller closes the outputs.
func (m *Model) ForwardNamed(inputs map[string]*Tensor) (map[string]*Tensor, error) {
	h, err := m.handle()
	if err != nil {
		return nil, err
	}
	in, err := call(core.NewTensorMap)
	if err != nil {
		return nil, err
	}
	defer core.DeleteTensorMap(in)
	for name, t := range inputs {
		th, err := t.handle()
		if err != nil {
			return nil, err
		}
		if _, err := call(func() int { in.Set(name, th); return 0 }); err != nil {
			return nil, err
		}
	}
	defer runtime.KeepAlive(inputs)
	defer runtime.KeepAlive(m)
	out, err := call(func() core.TensorMap { return h.Forward_named(in) })
	if err != nil {
		return nil, err
	}
	entries, err := readTensorMap(out)
	if err != nil {
		return nil, err
	}
	result := make(map[string]*Tensor, len(entries))
	for _, e := range entries {
		result[e.Name] = e.Tensor
	}
	return result, nil
}

// NamedParameters lists the model's parameters by PyTorch name, each tensor
// once (tied weights under their first name). The tensors are the parameters
// themselves, not copies; the caller closes the handles.
func (m *Model) NamedParameters() ([]NamedTensor, error) {
	h, err := m.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(m)
	out, err := call(func() core.TensorMap { return h.Named_parameters() })
	if err != nil {
		return nil, err
	}
	return readTensorMap(out)
}

// NamedBuffers lists the model's buffers the same way.
func (m *Model) NamedBuffers() ([]NamedTensor, error) {
	h, err := m.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(m)
	out, err := call(func() core.TensorMap { return h.Named_buffers() })
	if err != nil {
		return nil, err
	}
	return readTensorMap(out)
}

// readTensorMap takes every entry of a map a wrapper returned, in order, and frees the map.
func readTensorMap(tm core.TensorMap) ([]NamedTensor, error) {
	defer core.DeleteTensorMap(tm)
	count, err := call(tm.Count)
	if err != nil {
		return nil, err
	}
	out := make([]NamedTensor, 0, count)
	for i := int64(0); i < count; i++ {
		name, err := call(func() string { return tm.Name_at(i) })
		if err == nil {
			var t *Tensor
			t, err = tensorResult(call(func() core.Tensor { return tm.Get(name) }))
			if err == nil {
				out = append(out, NamedTensor{Name: name, Tensor: t})
				continue
			}
		}
		for _, done := range out {
			done.Tensor.Close()
		}
		return nil, err
	}
	return out, nil
}
