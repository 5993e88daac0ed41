package accel

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// squares: x = [i, i*i] (float32), y = i % 3 (int64).
type squares struct {
	n     int64
	calls atomic.Int64
}

func (s *squares) Len() int64 { return s.n }

func (s *squares) Get(i int64, out *Sample) error {
	s.calls.Add(1)
	if err := out.SetFloat32(0, float32(i), float32(i*i)); err != nil {
		return err
	}
	return out.SetInt64(1, i%3)
}

var squareFields = []Field{{DType: Float32, Shape: []int64{2}}, {DType: Int64}}

// collect reads one epoch: the first column of x, and y.
func collect(t *testing.T, loader *DataLoader) ([]float32, []int64, error) {
	t.Helper()
	var xs []float32
	var ys []int64
	for {
		batch, err := loader.Next()
		if err != nil || batch == nil {
			return xs, ys, err
		}
		x := must[[]float32](t)(batch[0].Float32s())
		for i := 0; i < len(x); i += 2 {
			xs = append(xs, x[i])
			if x[i+1] != x[i]*x[i] {
				t.Fatalf("sample %v: x[1] = %v", x[i], x[i+1])
			}
		}
		ys = append(ys, must[[]int64](t)(batch[1].Int64s())...)
		CloseAll(batch...)
	}
}

func TestMapDatasetYieldsEverySampleInOrder(t *testing.T) {
	ds := must[*Dataset](t)(NewMapDataset(&squares{n: 10}, squareFields...))
	if n := must[int64](t)(ds.Len()); n != 10 {
		t.Fatalf("len %d", n)
	}
	if must[bool](t)(ds.IsIterable()) {
		t.Fatal("a map dataset is iterable")
	}
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 4}))
	if n := must[int64](t)(loader.Len()); n != 3 {
		t.Fatalf("%d batches", n)
	}
	for epoch := 0; epoch < 2; epoch++ {
		xs, ys, err := collect(t, loader)
		ok(t, err)
		for i := 0; i < 10; i++ {
			if xs[i] != float32(i) || ys[i] != int64(i%3) {
				t.Fatalf("epoch %d sample %d: x %v y %v", epoch, i, xs[i], ys[i])
			}
		}
	}
}

func TestWorkerThreadsCallGoAndKeepTheOrder(t *testing.T) {
	read := func(workers int) ([]float32, []int64) {
		ds := must[*Dataset](t)(NewMapDataset(&squares{n: 50}, squareFields...))
		loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 4, Shuffle: true, Seed: 7, NumWorkers: workers}))
		defer loader.Close()
		xs, ys, err := collect(t, loader)
		ok(t, err)
		return xs, ys
	}
	plainX, plainY := read(0)
	for _, workers := range []int{1, 3} {
		x, y := read(workers)
		if !equal(x, plainX) || !equal(y, plainY) {
			t.Fatalf("%d workers read another order", workers)
		}
	}
	sorted := append([]float32(nil), plainX...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i, v := range sorted {
		if v != float32(i) {
			t.Fatalf("shuffled epoch is not a permutation: %v", sorted)
		}
	}
}

type broken struct {
	squares
	panics bool
}

func (b *broken) Get(i int64, out *Sample) error {
	if i == 5 {
		if b.panics {
			panic(fmt.Sprintf("sample %d exploded", i))
		}
		return errors.New("sample five is missing")
	}
	return b.squares.Get(i, out)
}

func TestErrorsAndPanicsInGetBecomeLoaderErrors(t *testing.T) {
	for _, panics := range []bool{false, true} {
		for _, workers := range []int{0, 2} {
			ds := must[*Dataset](t)(NewMapDataset(&broken{squares: squares{n: 8}, panics: panics}, squareFields...))
			loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2, NumWorkers: workers}))
			_, _, err := collect(t, loader)
			want := "sample five is missing"
			if panics {
				want = "panic: sample 5 exploded"
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Msg, want) {
				t.Fatalf("panics=%v workers=%d: got %v", panics, workers, err)
			}
			ok(t, loader.Close())
		}
	}
}

type wrongSample struct{ squares }

func (w *wrongSample) Get(i int64, out *Sample) error {
	switch i {
	case 0:
		return out.SetFloat32(0, 1, 2, 3) // three values for a [2] field
	case 1:
		return out.SetFloat64(0, 1, 2) // float64 for a float32 field
	case 2:
		return out.SetBytes(0, make([]byte, 3))
	default:
		return out.SetInt64(7, 1)
	}
}

// keeper stashes the Sample it gets, which is wrong: it dies with the call.
type keeper struct {
	squares
	kept *Sample
}

func (k *keeper) Get(i int64, out *Sample) error {
	k.kept = out
	return k.squares.Get(i, out)
}

func TestASampleUsedAfterItsCallIsAnErrorNotACrash(t *testing.T) {
	k := &keeper{squares: squares{n: 2}}
	ds := must[*Dataset](t)(NewMapDataset(k, squareFields...))
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2}))
	_, _, err := collect(t, loader)
	ok(t, err)
	wantError(t, k.kept.SetFloat32(0, 1, 2), ErrState, "only valid during")
}

func TestSamplesOfTheWrongSizeOrDTypeAreErrors(t *testing.T) {
	wants := []string{"takes 2 values", "dtype float32, got float64", "takes 8 bytes, got 3", "field index 7"}
	for i, want := range wants {
		ds := must[*Dataset](t)(NewMapDataset(&wrongSample{squares{n: 4}}, squareFields...))
		loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{}))
		loader2 := must[*DataLoader](t)(loader.SkipFirstBatches(int64(i)))
		_, err := loader2.Next()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("sample %d: want %q, got %v", i, want, err)
		}
	}
	_, err := NewMapDataset(&squares{n: 4})
	wantError(t, err, ErrInvalidArgument, "at least one Field")
	_, err = NewMapDataset(&squares{n: 4}, Field{DType: DType(77)})
	wantError(t, err, ErrInvalidArgument, "")
	_, err = NewMapDataset(nil, squareFields...)
	wantError(t, err, ErrInvalidArgument, "nil")
}

// counter streams 0..n-1 (+ 100*epoch), as x (float32 scalar) and y (int64 scalar).
type counter struct {
	n, next, epoch int64
	resets         []uint64
	failAt         int64
}

func (c *counter) Reset(epoch uint64) error {
	c.resets = append(c.resets, epoch)
	c.next, c.epoch = 0, int64(epoch)
	return nil
}

func (c *counter) Next(s *Sample) (bool, error) {
	if c.next == c.failAt {
		return false, errors.New("the stream broke")
	}
	if c.next >= c.n {
		return false, nil
	}
	v := c.next + 100*c.epoch
	c.next++
	if err := Set(s, 0, float32(v)); err != nil {
		return false, err
	}
	return true, Set(s, 1, v)
}

func TestIterableDatasetWithEpochs(t *testing.T) {
	stream := &counter{n: 5, failAt: -1}
	ds := must[*Dataset](t)(NewIterableDataset(stream, Field{DType: Float32}, Field{DType: Int64}))
	if !must[bool](t)(ds.IsIterable()) {
		t.Fatal("not iterable")
	}
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2}))
	for epoch := uint64(0); epoch < 2; epoch++ {
		ok(t, loader.SetEpoch(epoch))
		var ys []int64
		for _, batch := range readEpoch(t, loader) {
			ys = append(ys, must[[]int64](t)(batch[1].Int64s())...)
		}
		base := int64(100 * epoch)
		if !equal(ys, []int64{base, base + 1, base + 2, base + 3, base + 4}) {
			t.Fatalf("epoch %d: %v (resets %v)", epoch, ys, stream.resets)
		}
	}
	failing := must[*Dataset](t)(NewIterableDataset(&counter{n: 5, failAt: 3}, Field{DType: Float32}, Field{DType: Int64}))
	fl := must[*DataLoader](t)(NewDataLoader(failing, DataLoaderOptions{BatchSize: 2}))
	_, err := fl.Next()
	ok(t, err)
	_, err = fl.Next()
	if err == nil || !strings.Contains(err.Error(), "the stream broke") {
		t.Fatalf("want the stream's error, got %v", err)
	}
}

func TestClosingHandsTheGoSourceBackOnce(t *testing.T) {
	ds := must[*Dataset](t)(NewMapDataset(&squares{n: 4}, squareFields...))
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2}))
	source := ds.source
	ok(t, ds.Close()) // the loader still reads it
	if source.Swigcptr() == 0 {
		t.Fatal("the source was deleted while a loader uses the dataset")
	}
	_, _, err := collect(t, loader)
	ok(t, err)
	ok(t, loader.Close())
	if source.Swigcptr() != 0 {
		t.Fatal("libaccel did not delete the Go source with the dataset")
	}
	_, err = ds.Len()
	wantClosed(t, err, "Dataset")
	_, err = loader.Next()
	wantClosed(t, err, "DataLoader")
	_, err = NewDataLoader(ds, DataLoaderOptions{})
	wantClosed(t, err, "Dataset")
}

func TestTensorDatasetSkipAndPreparedLoaderGather(t *testing.T) {
	xs := make([]float32, 10*2)
	ys := make([]int64, 10)
	for i := range ys {
		xs[2*i], xs[2*i+1] = float32(i), float32(i*i)
		ys[i] = int64(i % 3)
	}
	ds := must[*Dataset](t)(DatasetFromTensors(must[*Tensor](t)(NewTensor(xs, 10, 2)), must[*Tensor](t)(NewTensor(ys))))
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 4}))
	acc := newCPU(t, AcceleratorOptions{})
	ok(t, acc.Prepare(loader))
	skipped := must[*DataLoader](t)(loader.SkipFirstBatches(1))
	got, _, err := collect(t, skipped)
	ok(t, err)
	if !equal(got, []float32{4, 5, 6, 7, 8, 9}) {
		t.Fatalf("after skipping one batch: %v", got)
	}
	total := 0
	for _, batch := range readEpoch(t, loader) {
		all := must[*Tensor](t)(acc.GatherForMetrics(batch[1]))
		total += int(must[int64](t)(all.Numel()))
	}
	if total != 10 {
		t.Fatalf("gathered %d labels", total)
	}
	_, err = DatasetFromIDX("/nonexistent-images", "/nonexistent-labels", 0, 1)
	wantError(t, err, ErrIO, "nonexistent")
	_, err = DatasetFromCSV("/nonexistent.csv", "label", Int64)
	wantError(t, err, ErrIO, "nonexistent")
}

// Accelerate's test_dataloader_break: 80 and 96 samples in batches of 16, the
// second loader iterated whole inside the first's second batch.
func TestInDataloaderFollowsNestedLoaders(t *testing.T) {
	acc := must[*Accelerator](t)(NewAccelerator(AcceleratorOptions{CPU: true}))
	defer acc.Close()
	first := must[*DataLoader](t)(NewDataLoader(must[*Dataset](t)(NewMapDataset(&squares{n: 80}, squareFields...)),
		DataLoaderOptions{BatchSize: 16}))
	defer first.Close()
	second := must[*DataLoader](t)(NewDataLoader(must[*Dataset](t)(NewMapDataset(&squares{n: 96}, squareFields...)),
		DataLoaderOptions{BatchSize: 16}))
	defer second.Close()
	ok(t, acc.Prepare(first, second))
	if must[bool](t)(acc.InDataloader()) {
		t.Fatal("in a dataloader before any batch")
	}
	iteration := 0
	for {
		batch := must[[]*Tensor](t)(first.Next())
		if batch == nil {
			break
		}
		CloseAll(batch...)
		if !must[bool](t)(acc.InDataloader()) || must[int64](t)(first.OpenIndex()) != 0 {
			t.Fatalf("iteration %d: the first loader is not the open one", iteration)
		}
		if end := must[bool](t)(acc.EndOfDataloader()); end != (iteration == 4) {
			t.Fatalf("iteration %d: end_of_dataloader %v", iteration, end)
		}
		if iteration == 1 {
			inner := 0
			for {
				b := must[[]*Tensor](t)(second.Next())
				if b == nil {
					break
				}
				CloseAll(b...)
				if i := must[int64](t)(second.OpenIndex()); i != 1 {
					t.Fatalf("inner batch %d: open index %d", inner, i)
				}
				if end := must[bool](t)(acc.EndOfDataloader()); end != (inner == 5) {
					t.Fatalf("inner batch %d: end_of_dataloader %v", inner, end)
				}
				inner++
			}
			if inner != 6 || must[int64](t)(second.OpenIndex()) != -1 || must[bool](t)(acc.EndOfDataloader()) {
				t.Fatalf("after the inner loop: %d batches, open index %d", inner, must[int64](t)(second.OpenIndex()))
			}
		}
		iteration++
	}
	if iteration != 5 || must[bool](t)(acc.InDataloader()) {
		t.Fatalf("%d batches; still in a dataloader after the loop", iteration)
	}
}
