package accel

import (
	"fmt"
	"runtime"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// Dataset is a source of samples: files (IDX, CSV), tensors, or Go code
// (NewMapDataset, NewIterableDataset).
type Dataset struct {
	datasetHandle
	// The director of a Go dataset, which libaccel owns and deletes with the
	// dataset (its Swigcptr is then 0: tests check that).
	source interface{ Swigcptr() uintptr }
}

func newDataset(h core.Dataset, err error) (*Dataset, error) {
	if err != nil {
		return nil, err
	}
	return own(&Dataset{}, h), nil
}

type datasetHandle = owned[core.Dataset]

var datasetKind = handleKind[core.Dataset]{name: "Dataset", free: core.DeleteDataset}

// DatasetFromTensors pairs inputs[i] with targets[i] (first dimensions must match).
func DatasetFromTensors(inputs, targets *Tensor) (*Dataset, error) {
	in, err := inputs.handle()
	if err != nil {
		return nil, err
	}
	tg, err := targets.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(inputs)
	defer runtime.KeepAlive(targets)
	return newDataset(call(func() core.Dataset { return core.DatasetFrom_tensors(in, tg) }))
}

// DatasetFromIDX reads MNIST-style IDX files (gzipped or not); images are
// scaled to [0,1] and normalised with mean and std.
func DatasetFromIDX(imagesPath, labelsPath string, mean, std float64) (*Dataset, error) {
	return newDataset(call(func() core.Dataset { return core.DatasetFrom_idx(imagesPath, labelsPath, mean, std) }))
}

// DatasetFromCSV reads a CSV file with a header; labelColumn becomes the target of labelDType.
func DatasetFromCSV(path, labelColumn string, labelDType DType) (*Dataset, error) {
	return newDataset(call(func() core.Dataset {
		return core.DatasetFrom_csv(path, labelColumn, core.Accel_dtype(labelDType))
	}))
}

// DatasetFromSafetensors reads every *.safetensors file of dir, concatenated in
// file-name order; each of fields (tensor names, rows on dim 0) becomes one
// field of a sample.
func DatasetFromSafetensors(dir string, fields ...string) (*Dataset, error) {
	names := core.NewStringVector()
	defer core.DeleteStringVector(names)
	for _, field := range fields {
		names.Add(field)
	}
	return newDataset(call(func() core.Dataset { return core.DatasetFrom_safetensors(dir, names) }))
}

func (d *Dataset) handle() (core.Dataset, error) { return live(d, &datasetKind) }

// Close frees the dataset now (loaders over it keep what they need); closing twice is fine.
func (d *Dataset) Close() error { return release(d, &datasetKind) }

// Len is the number of samples (an error for an iterable dataset).
func (d *Dataset) Len() (int64, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(d)
	return call(h.Size)
}

// IsIterable tells an iterable (stream) dataset from a map-style one.
func (d *Dataset) IsIterable() (bool, error) {
	h, err := d.handle()
	if err != nil {
		return false, err
	}
	defer runtime.KeepAlive(d)
	return call(h.Is_iterable)
}

// DataLoaderOptions: zero values are the defaults (batch size 1, no shuffle,
// seed 0, keep the last batch, no worker threads, prefetch factor 2).
type DataLoaderOptions struct {
	BatchSize      int64
	Shuffle        bool
	Seed           uint64 // the loader's shuffling seed; 0: each epoch draws one from the generator seeded by SetSeed
	DropLast       bool
	NumWorkers     int // threads that read samples ahead (they call Go datasets too)
	PrefetchFactor int // batches read ahead per worker
}

// DataLoader yields batches of a dataset; Prepare it to shard it across processes.
// It keeps its dataset alive.
type DataLoader struct {
	dataLoaderHandle
	dataset     *Dataset
	accelerator *Accelerator // once prepared
}

// NewDataLoader makes a loader over dataset.
func NewDataLoader(dataset *Dataset, options DataLoaderOptions) (*DataLoader, error) {
	return buildDataLoader(dataset, options, func(dh core.Dataset, opts core.DataLoaderOptions) core.DataLoader {
		return core.NewDataLoader(dh, opts)
	})
}

// NewDataLoaderFromBatches makes a loader over a user's batch sampler: these
// batches of dataset indices every epoch until SetBatches replaces them, in order (e.g. length-bucketed,
// of varying sizes). Prepared, they are sharded as Accelerate's
// BatchSamplerShard does. options.BatchSize is the sampler's nominal batch
// size (0: sizes vary, which needs EvenBatches false with several
// processes), options.DropLast its drop_last; Shuffle must be false.
func NewDataLoaderFromBatches(dataset *Dataset, batches [][]int64, options DataLoaderOptions) (*DataLoader, error) {
	indices, lengths := batchVectors(batches)
	defer core.DeleteInt64Vector(indices)
	defer core.DeleteInt64Vector(lengths)
	return buildDataLoader(dataset, options, func(dh core.Dataset, opts core.DataLoaderOptions) core.DataLoader {
		opts.SetBatch_size(options.BatchSize) // 0 is meaningful here: sizes vary
		return core.NewDataLoader(dh, indices, lengths, opts)
	})
}

// batchVectors lays batches out as the C calls take them: the indices in
// order, and each batch's length. The caller deletes both.
func batchVectors(batches [][]int64) (indices, lengths core.Int64Vector) {
	indices = core.NewInt64Vector()
	lengths = core.NewInt64Vector()
	for _, batch := range batches {
		for _, i := range batch {
			indices.Add(i)
		}
		lengths.Add(int64(len(batch)))
	}
	return indices, lengths
}

// buildDataLoader converts options to the C struct and makes the loader with
// build, keeping dataset alive through the call.
func buildDataLoader(dataset *Dataset, options DataLoaderOptions,
	build func(core.Dataset, core.DataLoaderOptions) core.DataLoader) (*DataLoader, error) {
	dh, err := dataset.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(dataset)
	opts := core.NewDataLoaderOptions()
	defer core.DeleteDataLoaderOptions(opts)
	setIf(options.BatchSize, opts.SetBatch_size)
	opts.SetShuffle(boolInt(options.Shuffle))
	opts.SetSeed(options.Seed)
	opts.SetDrop_last(boolInt(options.DropLast))
	opts.SetNum_workers(options.NumWorkers)
	setIf(options.PrefetchFactor, opts.SetPrefetch_factor)
	h, err := call(func() core.DataLoader { return build(dh, opts) })
	return newDataLoader(h, err, dataset)
}

func newDataLoader(h core.DataLoader, err error, dataset *Dataset) (*DataLoader, error) {
	if err != nil {
		return nil, err
	}
	return own(&DataLoader{dataset: dataset}, h), nil
}

type dataLoaderHandle = owned[core.DataLoader]

var dataLoaderKind = handleKind[core.DataLoader]{name: "DataLoader", free: core.DeleteDataLoader}

func (l *DataLoader) handle() (core.DataLoader, error) { return live(l, &dataLoaderKind) }

// Close frees the loader now (and stops its worker threads); closing twice is fine.
func (l *DataLoader) Close() error {
	if l != nil {
		l.dataset, l.accelerator = nil, nil
	}
	return release(l, &dataLoaderKind)
}

// Dataset is the dataset the loader reads.
func (l *DataLoader) Dataset() *Dataset { return l.dataset }

// Next is the next batch, one tensor per sample field (inputs, targets, ...),
// or nil at the end of the epoch; the call after that starts the next epoch.
// A failing Go dataset's error comes back here. Use each batch before reading
// the next: the loader's end-of-epoch state drives Accumulate and
// GatherForMetrics, as in Accelerate.
func (l *DataLoader) Next() ([]*Tensor, error) {
	h, err := l.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(l)
	batch, err := call(h.Next_batch)
	if err != nil || batch == nil || batch.Swigcptr() == 0 {
		return nil, err
	}
	defer core.DeleteBatch(batch)
	fields := make([]*Tensor, batch.Size())
	for i := range fields {
		t, err := tensorResult(call(func() core.Tensor { return batch.Take(i) }))
		if err != nil {
			closeAll(fields)
			return nil, err
		}
		fields[i] = t
	}
	return fields, nil
}

// Len is the number of batches per epoch (on this process, once prepared).
func (l *DataLoader) Len() (int64, error) {
	h, err := l.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(l)
	return call(h.Num_batches)
}

// SkipFirstBatches is a loader whose next epoch starts after n batches
// (resuming mid-epoch after LoadState).
func (l *DataLoader) SkipFirstBatches(n int64) (*DataLoader, error) {
	h, err := l.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(l)
	s, err := call(func() core.DataLoader { return h.Skip_first_batches(n) })
	skipped, err := newDataLoader(s, err, l.dataset)
	if err == nil {
		skipped.accelerator = l.accelerator
	}
	return skipped, err
}

// SetEpoch sets the epoch the next pass shuffles for.
func (l *DataLoader) SetEpoch(epoch uint64) error {
	h, err := l.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(l)
	return withThread(func() { h.Set_epoch(epoch) })
}

// OpenIndex is this loader's place among its accelerator's loaders in an
// epoch, in the order their epochs opened (0 for the first, 1 for a loader
// iterated inside that epoch, ...: Accelerate's dataloader_references without
// its leading None); -1 between epochs and for a loader not prepared.
func (l *DataLoader) OpenIndex() (int64, error) {
	h, err := l.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(l)
	return call(h.Open_index)
}

// Epoch is the epoch being iterated, or the next one between epochs (0 at
// first; SetEpoch and a resume by LoadState set it).
func (l *DataLoader) Epoch() (uint64, error) {
	h, err := l.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(l)
	return call(h.Epoch)
}

// SetBatches gives a loader over a batch sampler (NewDataLoaderFromBatches,
// or NewLengthGroupedDataLoader, which then stops regrouping) new batches from
// the next epoch on. Call it between epochs, before an epoch's first batch (a
// resumed epoch's too, with that epoch's batches: see Epoch), to follow a
// sampler that draws new batches each epoch. Every process must set the same
// batches. The error names a bad batch (nothing changes), or has the status
// ErrState during an epoch or for a loader made without a batch sampler.
func (l *DataLoader) SetBatches(batches [][]int64) error {
	h, err := l.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(l)
	indices, lengths := batchVectors(batches)
	defer core.DeleteInt64Vector(indices)
	defer core.DeleteInt64Vector(lengths)
	return withThread(func() { h.Set_batches(indices, lengths) })
}

// ShowProgress draws a progress bar per epoch on stderr of rank 0 only, as
// Accelerate users get from tqdm(loader, disable=not accelerator.is_local_main_process):
// redrawn in place on a terminal, a line every 10% on a pipe or file. description
// labels it; "" means "epoch N". Its total is Len, so an iterable dataset shows
// none. ACCEL_DISABLE_PROGRESS_BAR silences it.
func (l *DataLoader) ShowProgress(description string) error {
	h, err := l.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(l)
	return withThread(func() { h.Set_progress(description) })
}

// HideProgress turns the progress bar off again (the default).
func (l *DataLoader) HideProgress() error {
	h, err := l.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(l)
	return withThread(func() { h.Hide_progress() })
}

// closeAll closes every tensor in ts (nil ones are skipped).
func closeAll(ts []*Tensor) {
	for _, t := range ts {
		t.Close()
	}
}

// CloseAll closes tensors, such as a batch, once they are no longer needed.
func CloseAll(ts ...*Tensor) { closeAll(ts) }

// ---------------------------------------------------------------- Go datasets

// Field declares one field of every sample a Go dataset produces: its dtype
// and its per-sample shape (empty for a scalar).
type Field struct {
	DType DType
	Shape []int64
}

func (f Field) numel() int64 {
	n := int64(1)
	for _, d := range f.Shape {
		n *= d
	}
	return n
}

// Sample is where a Go dataset writes one sample; it is valid only during the call.
type Sample struct {
	w      core.SampleWriter
	fields []Field
	ended  bool
}

// NumFields is the number of declared fields.
func (s *Sample) NumFields() int { return len(s.fields) }

// Set writes field i of the sample. T must be the field's dtype and len(values)
// its element count.
func Set[T Element](s *Sample, field int, values ...T) error {
	if field < 0 || field >= len(s.fields) {
		return fmt.Errorf("field index %d out of range [0, %d)", field, len(s.fields))
	}
	f := s.fields[field]
	if want := DTypeOf[T](); f.DType != want {
		return fmt.Errorf("field %d has dtype %v, got %v values", field, f.DType, want)
	}
	if n := f.numel(); int64(len(values)) != n {
		return fmt.Errorf("field %d takes %d values (shape %v), got %d", field, n, f.Shape, len(values))
	}
	return s.SetBytes(field, asBytes(values))
}

// SetBytes writes field i from raw little-endian bytes (any dtype).
func (s *Sample) SetBytes(field int, data []byte) error {
	if s.w == nil {
		return &Error{Code: ErrState, Msg: "a Sample is only valid during the Get or Next call that received it"}
	}
	err := withThread(func() { s.w.Write(field, data) })
	runtime.KeepAlive(data)
	return err
}

// SetFloat32 is Set[float32].
func (s *Sample) SetFloat32(field int, values ...float32) error { return Set(s, field, values...) }

// SetInt64 is Set[int64].
func (s *Sample) SetInt64(field int, values ...int64) error { return Set(s, field, values...) }

// SetFloat64 is Set[float64].
func (s *Sample) SetFloat64(field int, values ...float64) error { return Set(s, field, values...) }

// SetInt32 is Set[int32].
func (s *Sample) SetInt32(field int, values ...int32) error { return Set(s, field, values...) }

// MapDataset is a dataset written in Go, read by index. Get may run on
// loader worker threads (NumWorkers > 0), concurrently for different indices.
// An error or a panic in Get becomes the loader call's error.
type MapDataset interface {
	Len() int64
	Get(index int64, sample *Sample) error
}

// IterableDataset is a stream written in Go. Reset starts the pass for an
// epoch (called before each pass, the first included); Next writes a sample
// and returns true, or returns false at the end.
type IterableDataset interface {
	Reset(epoch uint64) error
	Next(sample *Sample) (bool, error)
}

func fieldSpecs(fields []Field) (core.FieldSpecVector, error) {
	if len(fields) == 0 {
		return nil, &Error{Code: ErrInvalidArgument, Msg: "a Go dataset needs at least one Field"}
	}
	specs := core.NewFieldSpecVector()
	for _, f := range fields {
		spec := core.NewFieldSpec()
		spec.SetDtype(core.Accel_dtype(f.DType))
		shape := newInt64Vector(f.Shape)
		spec.SetShape(shape)
		core.DeleteInt64Vector(shape)
		specs.Add(spec)
		core.DeleteFieldSpec(spec)
	}
	return specs, nil
}

func copyFields(fields []Field) []Field {
	out := make([]Field, len(fields))
	for i, f := range fields {
		out[i] = Field{DType: f.DType, Shape: append([]int64(nil), f.Shape...)}
	}
	return out
}

// mapSource is the DatasetSource director over a MapDataset; libaccel owns it
// once the dataset exists and deletes it with the dataset.
type mapSource struct {
	data   MapDataset
	fields []Field
}

func (m *mapSource) Get_sample(index int64, out core.SampleWriter) (message string) {
	defer func() {
		if r := recover(); r != nil {
			message = panicText(r)
		}
	}()
	sample := &Sample{w: out, fields: m.fields}
	defer func() { sample.w = nil }() // the writer dies with this call
	return callbackResult(m.data.Get(index, sample))
}

// NewMapDataset makes a Dataset over a Go MapDataset whose samples have the given fields.
func NewMapDataset(data MapDataset, fields ...Field) (*Dataset, error) {
	if data == nil {
		return nil, &Error{Code: ErrInvalidArgument, Msg: "the Go dataset is nil"}
	}
	specs, err := fieldSpecs(fields)
	if err != nil {
		return nil, err
	}
	defer core.DeleteFieldSpecVector(specs)
	length := data.Len()
	source := core.NewDirectorDatasetSource(&mapSource{data: data, fields: copyFields(fields)})
	h, err := call(func() core.Dataset { return core.DatasetFrom_source(source, length, specs) })
	if err != nil {
		core.DeleteDirectorDatasetSource(source) // not handed over
		return nil, err
	}
	d, _ := newDataset(h, nil)
	d.source = source
	return d, nil
}

// streamSource is the StreamSource director over an IterableDataset (owned by libaccel, as mapSource).
type streamSource struct {
	data   IterableDataset
	fields []Field
}

func (s *streamSource) Next_sample(out core.SampleWriter) (message string) {
	defer func() {
		if r := recover(); r != nil {
			message = panicText(r)
		}
	}()
	sample := &Sample{w: out, fields: s.fields}
	defer func() { sample.w = nil }()
	ok, err := s.data.Next(sample)
	if err == nil && !ok {
		withThread(out.End_of_stream)
	}
	return callbackResult(err)
}

func (s *streamSource) Reset(epoch uint64) (message string) {
	defer func() {
		if r := recover(); r != nil {
			message = panicText(r)
		}
	}()
	return callbackResult(s.data.Reset(epoch))
}

// NewIterableDataset makes an iterable Dataset over a Go stream whose samples have the given fields.
func NewIterableDataset(data IterableDataset, fields ...Field) (*Dataset, error) {
	if data == nil {
		return nil, &Error{Code: ErrInvalidArgument, Msg: "the Go dataset is nil"}
	}
	specs, err := fieldSpecs(fields)
	if err != nil {
		return nil, err
	}
	defer core.DeleteFieldSpecVector(specs)
	source := core.NewDirectorStreamSource(&streamSource{data: data, fields: copyFields(fields)})
	h, err := call(func() core.Dataset { return core.DatasetFrom_stream(source, specs) })
	if err != nil {
		core.DeleteDirectorStreamSource(source)
		return nil, err
	}
	d, _ := newDataset(h, nil)
	d.source = source
	return d, nil
}
