package accel

import (
	"strings"
	"testing"
)

func roundTrip[T Element](t *testing.T, data []T) {
	t.Helper()
	x := must[*Tensor](t)(NewTensor(data, 3, 4))
	defer x.Close()
	if shape := must[[]int64](t)(x.Shape()); !equal(shape, []int64{3, 4}) {
		t.Fatalf("shape %v", shape)
	}
	if d := must[DType](t)(x.DType()); d != DTypeOf[T]() {
		t.Fatalf("dtype %v, want %v", d, DTypeOf[T]())
	}
	if back := must[[]T](t)(ToSlice[T](x)); !equal(back, data) {
		t.Fatalf("values %v, want %v", back, data)
	}
}

func seq[T Element](f func(i int) T) []T {
	out := make([]T, 12)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func TestTensorRoundTripKeepsDTypeShapeAndValues(t *testing.T) {
	roundTrip(t, seq(func(i int) float32 { return float32(i) / 2 }))
	roundTrip(t, seq(func(i int) float64 { return float64(i) / 3 }))
	roundTrip(t, seq(func(i int) int64 { return int64(i) << 40 }))
	roundTrip(t, seq(func(i int) int32 { return int32(-i) }))
	roundTrip(t, seq(func(i int) uint8 { return uint8(250 + i) }))
	roundTrip(t, seq(func(i int) int16 { return int16(i * 1000) }))
	roundTrip(t, seq(func(i int) bool { return i%3 == 0 }))

	one := must[*Tensor](t)(NewTensor([]float64{2.5}))
	if v := must[float64](t)(one.Item()); v != 2.5 {
		t.Fatalf("item %v", v)
	}
	if !strings.Contains(one.String(), "float64") {
		t.Fatalf("String() = %q", one.String())
	}
	raw := must[*Tensor](t)(TensorFromBytes([]byte{0, 0x3c, 0, 0x40}, Float16, 2)) // 1.0, 2.0 in IEEE half
	if b := must[[]byte](t)(raw.Bytes()); !equal(b, []byte{0, 0x3c, 0, 0x40}) {
		t.Fatalf("float16 bytes %v", b)
	}
	if Float32.Size() != 4 || BFloat16.Size() != 2 || Int64.String() != "int64" {
		t.Fatal("dtype helpers")
	}
}

func TestTensorSizeAndDTypeAreChecked(t *testing.T) {
	_, err := NewTensor([]float32{1, 2, 3, 4, 5}, 2, 3)
	wantError(t, err, ErrInvalidArgument, "6 elements but the slice has 5")
	_, err = TensorFromBytes(make([]byte, 20), Float32, 2, 3) // the C layer's own check
	wantError(t, err, ErrInvalidArgument, "bytes")
	_, err = TensorFromBytes(make([]byte, 4), DType(99), 1)
	wantError(t, err, ErrInvalidArgument, "99")

	x := must[*Tensor](t)(NewTensor([]float32{1, 2, 3, 4}))
	_, err = ToSlice[int64](x)
	wantError(t, err, ErrInvalidArgument, "dtype float32, not int64")
	wantError(t, CopyTo(x, make([]float32, 3)), ErrInvalidArgument, "")
	ok(t, CopyTo(x, make([]float32, 4)))
}

func TestTensorOps(t *testing.T) {
	a := must[*Tensor](t)(NewTensor([]float32{1, 5, 2, 7, 0, 1}, 2, 3))
	if idx := must[[]int64](t)(must[*Tensor](t)(a.Argmax(1)).Int64s()); !equal(idx, []int64{1, 0}) {
		t.Fatalf("argmax %v", idx)
	}
	if s := must[float64](t)(must[*Tensor](t)(a.Sum()).Item()); s != 16 {
		t.Fatalf("sum %v", s)
	}
	b := must[*Tensor](t)(NewTensor([]float32{1, 0, 2, 7, 0, 0}, 2, 3))
	same := must[[]bool](t)(ToSlice[bool](must[*Tensor](t)(a.Eq(b))))
	if !equal(same, []bool{true, false, true, true, true, false}) {
		t.Fatalf("eq %v", same)
	}
	_, err := a.Argmax(5)
	if err == nil {
		t.Fatal("argmax over a missing dimension succeeded")
	}
}

func TestClosedTensorIsAnErrorAndCloseTwiceIsFine(t *testing.T) {
	x := must[*Tensor](t)(NewTensor([]float32{1, 2, 3}))
	ok(t, x.Close())
	ok(t, x.Close())
	_, err := x.Numel()
	wantClosed(t, err, "Tensor")
	_, err = x.Float32s()
	wantClosed(t, err, "Tensor")
	y := must[*Tensor](t)(NewTensor([]float32{1, 2, 3}))
	_, err = y.Eq(x)
	wantClosed(t, err, "Tensor")
	var nilTensor *Tensor
	_, err = nilTensor.Shape()
	wantClosed(t, err, "Tensor")
	if x.String() != "Tensor(closed)" {
		t.Fatal(x.String())
	}
}
