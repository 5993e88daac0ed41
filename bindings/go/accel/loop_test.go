package accel

import (
	"math"
	"reflect"
	"testing"
)

// No grad inside the scope (nested scopes restore on the outer end), grad again after.
func TestNoGradScopes(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	model := must[*Model](t)(ModelFromJSON(`[{"type": "Linear", "in_features": 3, "out_features": 1}]`))
	x := must[*Tensor](t)(NewTensor([]float32{1, 1, 1}, 1, 3))
	ok(t, acc.NoGrad(func() error {
		ok(t, acc.NoGrad(func() error { return nil }))
		loss := must[*Tensor](t)(must[*Tensor](t)(model.Forward(x)).Sum())
		wantError(t, acc.Backward(loss), ErrInvalidArgument, "does not require grad")
		return nil
	}))
	ok(t, acc.Backward(must[*Tensor](t)(must[*Tensor](t)(model.Forward(x)).Sum())))
	wantError(t, acc.NoGradEnd(), ErrState, "no_grad_end without a matching no_grad_begin")
}

// Expected values from torch.nn.functional on the same inputs (see tests/capi/test_loop_api.c).
func TestLossOptionsAndMetricOps(t *testing.T) {
	data := make([]float32, 12)
	for i := range data {
		data[i] = float32((i*7)%5)*0.5 - 1
	}
	x := must[*Tensor](t)(NewTensor(data, 3, 4))
	target := must[*Tensor](t)(NewTensor([]int64{1, -100, 3}, 3))
	opts := DefaultLossOptions()
	opts.LabelSmoothing = 0.1
	loss := must[float64](t)(must[*Tensor](t)(x.LossWith(CrossEntropy, target, opts)).Item())
	if math.Abs(loss-1.435422658920288) > 1e-5 {
		t.Fatalf("smoothed cross-entropy %v", loss)
	}
	opts.LabelSmoothing = 2
	_, err := x.LossWith(CrossEntropy, target, opts)
	wantError(t, err, ErrInvalidArgument, "label_smoothing must be in [0, 1]")

	values, indices, err := x.TopK(2, 1)
	ok(t, err)
	if v := must[[]float32](t)(values.Float32s()); v[0] != 1 || v[5] != 0 {
		t.Fatalf("topk values %v", v)
	}
	if i := must[[]int64](t)(indices.Int64s()); !equal(i, []int64{2, 1, 3, 0, 1, 3}) {
		t.Fatalf("topk indices %v", i)
	}
	probs := must[[]float32](t)(must[*Tensor](t)(must[*Tensor](t)(x.Softmax(-1)).Narrow(0, 0, 1)).Float32s())
	if math.Abs(float64(probs[2])-0.5792585611343384) > 1e-6 {
		t.Fatalf("softmax %v", probs)
	}
	flat := must[*Tensor](t)(x.Reshape(-1))
	if s := must[[]int64](t)(flat.Shape()); !equal(s, []int64{12}) {
		t.Fatalf("reshape %v", s)
	}
	zero := must[*Tensor](t)(NewTensor([]float32{0}))
	positive := must[*Tensor](t)(x.Compare(zero, CompareGt))
	share := must[float64](t)(must[*Tensor](t)(positive.Mean()).Item())
	if math.Abs(share-1.0/3.0) > 1e-6 {
		t.Fatalf("share of positives %v", share)
	}
	_, err = x.Narrow(1, 3, 2)
	wantError(t, err, ErrInvalidArgument, "start 3 and length 2 do not fit dim 1")
}

func TestLoadStateDictAndSendToDevice(t *testing.T) {
	acc := newCPU(t, AcceleratorOptions{})
	model := must[*Model](t)(ModelFromJSON(`[{"type": "Linear", "in_features": 2, "out_features": 1}]`))
	w := must[*Tensor](t)(NewTensor([]float32{3, 4}, 1, 2))
	b := must[*Tensor](t)(NewTensor([]float32{5}, 1))
	_, err := model.LoadStateDict(map[string]*Tensor{"0.weight": w}, true)
	wantError(t, err, ErrInvalidArgument, "missing 0.bias")
	if keys := must[IncompatibleKeys](t)(model.LoadStateDict(map[string]*Tensor{"0.weight": w, "0.bias": b}, true)); !keys.AllMatched() {
		t.Fatalf("strict load reported %+v", keys)
	}
	x := must[*Tensor](t)(acc.SendToDevice(must[*Tensor](t)(NewTensor([]float32{1, 1}, 1, 2))))
	if y := must[float64](t)(must[*Tensor](t)(model.Forward(x)).Item()); y != 12 {
		t.Fatalf("forward after load %v", y)
	}
}

func TestNonStrictLoadStateDictReturnsTheSkippedNames(t *testing.T) {
	model := must[*Model](t)(ModelFromJSON(`[{"type": "Linear", "in_features": 2, "out_features": 1}]`))
	w := must[*Tensor](t)(NewTensor([]float32{3, 4}, 1, 2))
	extra := must[*Tensor](t)(NewTensor([]float32{0}, 1))
	keys := must[IncompatibleKeys](t)(model.LoadStateDict(map[string]*Tensor{"z.extra": extra, "0.weight": w, "a.extra": extra}, false))
	if !reflect.DeepEqual(keys, IncompatibleKeys{MissingKeys: []string{"0.bias"}, UnexpectedKeys: []string{"a.extra", "z.extra"}}) || keys.AllMatched() {
		t.Fatalf("non-strict load reported %+v", keys)
	}
	for _, p := range must[[]NamedTensor](t)(model.NamedParameters()) {
		if p.Name == "0.weight" {
			if got := must[[]float32](t)(p.Tensor.Float32s()); !reflect.DeepEqual(got, []float32{3, 4}) {
				t.Fatalf("0.weight after the load %v", got)
			}
		}
		p.Tensor.Close()
	}
}
