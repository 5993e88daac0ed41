package accel

import (
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// DType is a tensor's element type (accel_dtype).
type DType int

const (
	Float32  DType = 1
	Float64  DType = 2
	Int32    DType = 3
	Int64    DType = 4
	Uint8    DType = 5
	Int8     DType = 6
	Int16    DType = 7
	Bool     DType = 8
	Float16  DType = 9
	BFloat16 DType = 10
)

var dtypeNames = map[DType]string{Float32: "float32", Float64: "float64", Int32: "int32", Int64: "int64",
	Uint8: "uint8", Int8: "int8", Int16: "int16", Bool: "bool", Float16: "float16", BFloat16: "bfloat16"}

func (d DType) String() string {
	if name, ok := dtypeNames[d]; ok {
		return name
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// Size is the size of one element in bytes (0 for an unknown dtype).
func (d DType) Size() int {
	n, _ := call(func() int64 { return core.Dtype_size(core.Accel_dtype(d)) })
	return int(n)
}

// Element is a Go type a tensor can be built from or copied into.
type Element interface {
	~float32 | ~float64 | ~int32 | ~int64 | ~uint8 | ~int8 | ~int16 | ~bool
}

// DTypeOf is the dtype of Go element type T.
func DTypeOf[T Element]() DType {
	switch reflect.TypeOf((*T)(nil)).Elem().Kind() {
	case reflect.Float32:
		return Float32
	case reflect.Float64:
		return Float64
	case reflect.Int32:
		return Int32
	case reflect.Int64:
		return Int64
	case reflect.Uint8:
		return Uint8
	case reflect.Int8:
		return Int8
	case reflect.Int16:
		return Int16
	default:
		return Bool
	}
}

// asBytes views a slice's memory as bytes, without copying.
func asBytes[T Element](data []T) []byte {
	if len(data) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*int(unsafe.Sizeof(zero)))
}

// LossKind selects the loss of Tensor.Loss.
type LossKind int

const (
	CrossEntropy  LossKind = 1 // logits [N,C], int64 class targets [N]
	MSE           LossKind = 2 // same shapes
	NLL           LossKind = 3 // log-probabilities [N,C], int64 targets [N]
	BCEWithLogits LossKind = 4 // logits and float targets of the same shape
	CausalLM      LossKind = 5 // logits [N,L,V], labels [N,L]: Hugging Face's shifted LM loss
)

// Tensor is a libaccel tensor (CPU or the accelerator's device). Close frees it
// at once; otherwise the garbage collector does. A closed tensor returns ErrClosed.
type Tensor struct {
	tensorHandle
}

type tensorHandle = owned[core.Tensor]

var tensorKind = handleKind[core.Tensor]{name: "Tensor", free: core.DeleteTensor}

func newTensor(h core.Tensor) *Tensor {
	if h == nil || h.Swigcptr() == 0 {
		return nil
	}
	return own(&Tensor{}, h)
}

// tensorResult wraps a tensor a wrapper call returned.
func tensorResult(h core.Tensor, err error) (*Tensor, error) {
	if err != nil {
		return nil, err
	}
	if t := newTensor(h); t != nil {
		return t, nil
	}
	return nil, &Error{Code: ErrInternal, Msg: "libaccel returned no tensor"}
}

func (t *Tensor) handle() (core.Tensor, error) { return live(t, &tensorKind) }

// Close frees the tensor now; closing twice is fine.
func (t *Tensor) Close() error { return release(t, &tensorKind) }

// NewTensor copies data into a new CPU tensor of data's dtype. With no shape it
// is 1-D; otherwise the shape's product must equal len(data).
func NewTensor[T Element](data []T, shape ...int64) (*Tensor, error) {
	if len(shape) == 0 {
		shape = []int64{int64(len(data))}
	}
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	if n != int64(len(data)) {
		return nil, &Error{Code: ErrInvalidArgument,
			Msg: fmt.Sprintf("shape %v holds %d elements but the slice has %d", shape, n, len(data))}
	}
	defer runtime.KeepAlive(data)
	return TensorFromBytes(asBytes(data), DTypeOf[T](), shape...)
}

// TensorFromBytes copies raw little-endian elements (any dtype, float16 and
// bfloat16 included) into a new CPU tensor.
func TensorFromBytes(data []byte, dtype DType, shape ...int64) (*Tensor, error) {
	dims := newInt64Vector(shape)
	defer core.DeleteInt64Vector(dims)
	return tensorResult(call(func() core.Tensor { return core.TensorFrom_buffer(data, core.Accel_dtype(dtype), dims) }))
}

// Shape is the tensor's size in each dimension.
func (t *Tensor) Shape() ([]int64, error) {
	h, err := t.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(t)
	v, err := call(func() core.Int64Vector { return h.Shape() })
	if err != nil {
		return nil, err
	}
	return takeInt64Vector(v), nil
}

// DType is the tensor's element type.
func (t *Tensor) DType() (DType, error) {
	h, err := t.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(t)
	d, err := call(func() core.Accel_dtype { return h.Dtype() })
	return DType(d), err
}

// Numel is the number of elements.
func (t *Tensor) Numel() (int64, error) {
	h, err := t.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(t)
	return call(h.Numel)
}

// Item is the value of a one-element tensor.
func (t *Tensor) Item() (float64, error) {
	h, err := t.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(t)
	return call(h.Item)
}

// Bytes copies the elements (row-major, any device) into a new byte slice.
func (t *Tensor) Bytes() ([]byte, error) {
	h, err := t.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(t)
	n, err := call(h.Nbytes)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	return out, withThread(func() { h.Copy_to(out) })
}

// CopyTo copies t's elements into dst, whose type must match t's dtype and
// whose length must equal t's element count.
func CopyTo[T Element](t *Tensor, dst []T) error {
	h, err := t.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(t)
	d, err := t.DType()
	if err != nil {
		return err
	}
	if want := DTypeOf[T](); d != want {
		return &Error{Code: ErrInvalidArgument, Msg: fmt.Sprintf("tensor has dtype %v, not %v", d, want)}
	}
	buf := asBytes(dst)
	err = withThread(func() { h.Copy_to(buf) })
	runtime.KeepAlive(dst)
	return err
}

// ToSlice copies t's elements into a new slice of T (which must match t's dtype).
func ToSlice[T Element](t *Tensor) ([]T, error) {
	n, err := t.Numel()
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	if err := CopyTo(t, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Float32s copies a float32 tensor's elements.
func (t *Tensor) Float32s() ([]float32, error) { return ToSlice[float32](t) }

// Float64s copies a float64 tensor's elements.
func (t *Tensor) Float64s() ([]float64, error) { return ToSlice[float64](t) }

// Int64s copies an int64 tensor's elements.
func (t *Tensor) Int64s() ([]int64, error) { return ToSlice[int64](t) }

// Int32s copies an int32 tensor's elements.
func (t *Tensor) Int32s() ([]int32, error) { return ToSlice[int32](t) }

// unary runs a tensor-producing method of t.
func (t *Tensor) unary(f func(core.Tensor) core.Tensor) (*Tensor, error) {
	h, err := t.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(t)
	return tensorResult(call(func() core.Tensor { return f(h) }))
}

// binary runs a tensor-producing method of t with another tensor.
func (t *Tensor) binary(other *Tensor, f func(a, b core.Tensor) core.Tensor) (*Tensor, error) {
	h, err := t.handle()
	if err != nil {
		return nil, err
	}
	o, err := other.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(t)
	defer runtime.KeepAlive(other)
	return tensorResult(call(func() core.Tensor { return f(h, o) }))
}

// Argmax is the index of the largest element along dim.
func (t *Tensor) Argmax(dim int64) (*Tensor, error) {
	return t.unary(func(h core.Tensor) core.Tensor { return h.Argmax(dim) })
}

// Sum is the sum of all elements.
func (t *Tensor) Sum() (*Tensor, error) {
	return t.unary(func(h core.Tensor) core.Tensor { return h.Sum() })
}

// Eq compares element-wise (a bool tensor).
func (t *Tensor) Eq(other *Tensor) (*Tensor, error) {
	return t.binary(other, func(a, b core.Tensor) core.Tensor { return a.Eq(b) })
}

// Loss is the mean loss of these predictions against target.
func (t *Tensor) Loss(kind LossKind, target *Tensor) (*Tensor, error) {
	return t.binary(target, func(a, b core.Tensor) core.Tensor { return a.Loss(core.Accel_loss_kind(kind), b) })
}

// String describes the tensor ("Tensor(shape=[2 3], dtype=float32)").
func (t *Tensor) String() string {
	shape, err := t.Shape()
	if err != nil {
		return "Tensor(closed)"
	}
	d, _ := t.DType()
	return fmt.Sprintf("Tensor(shape=%v, dtype=%v)", shape, d)
}

func newInt64Vector(values []int64) core.Int64Vector {
	v := core.NewInt64Vector()
	for _, x := range values {
		v.Add(x)
	}
	return v
}

// takeInt64Vector copies and frees a vector a wrapper returned.
func takeInt64Vector(v core.Int64Vector) []int64 {
	defer core.DeleteInt64Vector(v)
	out := make([]int64, v.Size())
	for i := range out {
		out[i] = v.Get(i)
	}
	return out
}
