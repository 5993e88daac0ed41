package accel

import (
	"reflect"
	"testing"
)

// identityData: x = [i] (float32), y = i (int64).
type identityData struct{ n int64 }

func (d identityData) Len() int64 { return d.n }

func (d identityData) Get(i int64, out *Sample) error {
	if err := out.SetFloat32(0, float32(i)); err != nil {
		return err
	}
	return out.SetInt64(1, i)
}

var identityFields = []Field{{DType: Float32, Shape: []int64{1}}, {DType: Int64}}

func labelBatches(t *testing.T, loader *DataLoader) [][]int64 {
	t.Helper()
	var out [][]int64
	for _, batch := range readEpoch(t, loader) {
		out = append(out, must[[]int64](t)(batch[1].Int64s()))
	}
	return out
}

// Accelerate's test_batch_sampler_with_varying_batch_size through the Go
// binding, in one process (the batches as they are); the sharding across
// processes is tested in C++ and Python against Accelerate's table.
func TestDataLoaderFromVaryingBatches(t *testing.T) {
	ds := must[*Dataset](t)(NewMapDataset(identityData{14}, identityFields...))
	batches := [][]int64{{0, 1, 2}, {3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13}}
	loader := must[*DataLoader](t)(NewDataLoaderFromBatches(ds, batches, DataLoaderOptions{}))
	if n := must[int64](t)(loader.Len()); n != 5 {
		t.Fatalf("Len() = %d", n)
	}
	acc := newCPU(t, AcceleratorOptions{})
	ok(t, acc.Prepare(loader))
	for epoch := 0; epoch < 2; epoch++ {
		if got := labelBatches(t, loader); !reflect.DeepEqual(got, batches) {
			t.Fatalf("epoch %d: %v", epoch, got)
		}
	}
	if _, err := NewDataLoaderFromBatches(ds, [][]int64{{13, 14}}, DataLoaderOptions{}); err == nil {
		t.Fatal("index 14 of 14 samples accepted")
	}
}

func TestSetBatchesFollowsASamplerThatDrawsNewBatchesEachEpoch(t *testing.T) {
	ds := must[*Dataset](t)(NewMapDataset(identityData{5}, identityFields...))
	rotated := func(epoch uint64) [][]int64 { // the sampler's batches for an epoch
		var out [][]int64
		for start := int64(0); start < 5; start += 2 {
			var batch []int64
			for k := start; k < start+2 && k < 5; k++ {
				batch = append(batch, (k+int64(epoch))%5)
			}
			out = append(out, batch)
		}
		return out
	}
	loader := must[*DataLoader](t)(NewDataLoaderFromBatches(ds, rotated(0), DataLoaderOptions{BatchSize: 2}))
	acc := newCPU(t, AcceleratorOptions{})
	ok(t, acc.Prepare(loader))
	for want := uint64(0); want < 3; want++ {
		epoch := must[uint64](t)(loader.Epoch())
		if epoch != want {
			t.Fatalf("Epoch() = %d, want %d", epoch, want)
		}
		ok(t, loader.SetBatches(rotated(epoch)))
		if got := labelBatches(t, loader); !reflect.DeepEqual(got, rotated(epoch)) {
			t.Fatalf("epoch %d: %v, want %v", epoch, got, rotated(epoch))
		}
	}
	CloseAll(must[[]*Tensor](t)(loader.Next())...)
	wantError(t, loader.SetBatches(rotated(0)), ErrState, "an epoch is in progress")
	ok(t, loader.SetEpoch(0))
	wantError(t, loader.SetBatches([][]int64{{5}}), ErrInvalidArgument, "holds index 5")
	plain := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2}))
	wantError(t, plain.SetBatches(rotated(0)), ErrState, "not made from a batch sampler")
}

func TestSkipFirstBatchesLengthAndRemainderFromTheStart(t *testing.T) {
	ds := must[*Dataset](t)(NewMapDataset(identityData{10}, identityFields...))
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 4}))
	acc := newCPU(t, AcceleratorOptions{})
	ok(t, acc.Prepare(loader))
	skipped := must[*DataLoader](t)(loader.SkipFirstBatches(1))
	if n := must[int64](t)(skipped.Len()); n != 2 {
		t.Fatalf("Len() after skipping 1 of 3: %d", n)
	}
	for i := 0; i < 3; i++ {
		batch := must[[]*Tensor](t)(loader.Next())
		if r := must[int64](t)(acc.Remainder()); r != 2 {
			t.Fatalf("batch %d: remainder %d, want 10 %% 4", i, r)
		}
		CloseAll(batch...)
	}
}

func TestSeedableSamplerAndSetSeedDecideTheOrder(t *testing.T) {
	ds := must[*Dataset](t)(NewMapDataset(identityData{16}, identityFields...))
	first := func(options AcceleratorOptions, seed uint64, loaderSeed uint64) []int64 {
		acc := newCPU(t, options)
		loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 16, Shuffle: true, Seed: loaderSeed}))
		ok(t, acc.Prepare(loader))
		ok(t, acc.SetSeed(seed))
		return labelBatches(t, loader)[0]
	}
	if a, b := first(AcceleratorOptions{}, 42, 0), first(AcceleratorOptions{}, 42, 0); !reflect.DeepEqual(a, b) {
		t.Fatalf("set_seed(42) twice, two orders: %v %v", a, b)
	}
	if a, b := first(AcceleratorOptions{}, 42, 0), first(AcceleratorOptions{}, 43, 0); reflect.DeepEqual(a, b) {
		t.Fatalf("set_seed(42) and (43) give one order: %v", a)
	}
	seven := int64(7)
	seedable := first(AcceleratorOptions{UseSeedableSampler: true, DataSeed: &seven}, 1, 123)
	if own := first(AcceleratorOptions{}, 1, 7); !reflect.DeepEqual(seedable, own) {
		t.Fatalf("data_seed 7: %v, a loader seeded 7: %v", seedable, own)
	}
}
