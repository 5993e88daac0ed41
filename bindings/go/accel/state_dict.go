package accel

import (
	"fmt"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// NamedTensor is one entry of a state dict.
type NamedTensor struct {
	Name   string
	Tensor *Tensor
}

// GetStateDict is Accelerate's get_state_dict: the model's parameters, then
// its buffers, as CPU copies in the model's order. The caller closes the
// tensors. Not collective.
func (a *Accelerator) GetStateDict(m *Model) ([]NamedTensor, error) {
	var names core.StringVector
	if err := a.withModel(m, func(h core.Accelerator, mh core.Model) { names = h.State_dict_names(mh) }); err != nil {
		return nil, err
	}
	defer core.DeleteStringVector(names)
	var batch core.Batch
	if err := a.withModel(m, func(h core.Accelerator, mh core.Model) { batch = h.State_dict_tensors(mh) }); err != nil {
		return nil, err
	}
	defer core.DeleteBatch(batch)
	if int64(batch.Size()) != names.Size() {
		return nil, &Error{Code: ErrInternal, Msg: fmt.Sprintf("state dict has %d names but %d tensors", names.Size(), batch.Size())}
	}
	out := make([]NamedTensor, batch.Size())
	for i := range out {
		t, err := tensorResult(call(func() core.Tensor { return batch.Take(i) }))
		if err != nil {
			for _, done := range out[:i] {
				done.Tensor.Close()
			}
			return nil, err
		}
		out[i] = NamedTensor{Name: names.Get(i), Tensor: t}
	}
	return out, nil
}
