package accel

import (
	"fmt"
	"runtime"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// Sequences are variable-length int64 token sequences (language-model data),
// optionally with labels, validated at load. Make a Dataset over them with
// DatasetFromSequences (dynamic padding) or DatasetFromSequencesCollate (a Go
// collate function).
type Sequences struct {
	sequencesHandle
}

type sequencesHandle = owned[core.Sequences]

var sequencesKind = handleKind[core.Sequences]{name: "Sequences", free: core.DeleteSequences}

func newSequences(h core.Sequences, err error) (*Sequences, error) {
	if err != nil {
		return nil, err
	}
	return own(&Sequences{}, h), nil
}

func (s *Sequences) handle() (core.Sequences, error) { return live(s, &sequencesKind) }

// Close frees the sequences (datasets over them keep their own reference); closing twice is fine.
func (s *Sequences) Close() error { return release(s, &sequencesKind) }

// SequencesFromLists copies Go slices of ids. vocabSize > 0 refuses ids >= it.
func SequencesFromLists(ids [][]int64, vocabSize int64) (*Sequences, error) {
	flat := []int64{}
	offsets := []int64{0}
	for _, seq := range ids {
		flat = append(flat, seq...)
		offsets = append(offsets, int64(len(flat)))
	}
	fv, ov, lv := newInt64Vector(flat), newInt64Vector(offsets), newInt64Vector(nil)
	defer core.DeleteInt64Vector(fv)
	defer core.DeleteInt64Vector(ov)
	defer core.DeleteInt64Vector(lv)
	return newSequences(call(func() core.Sequences { return core.SequencesFrom_arrays(fv, ov, lv, vocabSize) }))
}

// SequencesFromJSONL reads one JSON object per line with the ids under idsKey
// ("" for bare arrays) and, when labelsKey is not "", labels (an integer or an
// array as long as the ids). Errors name the file, line and value.
func SequencesFromJSONL(path, idsKey, labelsKey string, vocabSize int64) (*Sequences, error) {
	return newSequences(call(func() core.Sequences {
		return core.SequencesFrom_jsonl(path, idsKey, labelsKey, vocabSize)
	}))
}

// TextSplit says how SequencesFromText cuts a file's bytes into samples.
type TextSplit int

const (
	TextLines      TextSplit = 0 // one sample per line, empty lines skipped
	TextParagraphs TextSplit = 1 // samples separated by empty lines
	TextSeparator  TextSplit = 2 // samples separated by lines holding only the separator (fortune's "%")
	TextChunks     TextSplit = 3 // windows of chunkLength bytes every stride bytes (0: chunkLength)
)

// SequencesFromText reads a text file as bytes (ids 0..255: a byte-level LM) cut by rule.
func SequencesFromText(path string, rule TextSplit, separator string, chunkLength, stride int64) (*Sequences, error) {
	return newSequences(call(func() core.Sequences {
		return core.SequencesFrom_text(path, core.Accel_text_split(rule), separator, chunkLength, stride)
	}))
}

// SequencesFromTextVocab splits a text file on whitespace and maps each token to
// its id in the vocabulary at vocabPath (a JSON token -> id object, or one token
// per line, id = line - 1); unknown tokens become "<unk>"'s id, and are an error
// naming the file, line and token when the vocabulary has none. rule as
// SequencesFromText, except that TextChunks counts tokens.
func SequencesFromTextVocab(path, vocabPath string, rule TextSplit, separator string, chunkLength, stride int64) (*Sequences, error) {
	return newSequences(call(func() core.Sequences {
		return core.SequencesFrom_text_vocab(path, vocabPath, core.Accel_text_split(rule), separator, chunkLength, stride)
	}))
}

// SequencesFromSafetensors reads a flat ids tensor and its offsets tensor (and labels when labelsName is not "").
func SequencesFromSafetensors(path, idsName, offsetsName, labelsName string, vocabSize int64) (*Sequences, error) {
	return newSequences(call(func() core.Sequences {
		return core.SequencesFrom_safetensors(path, idsName, offsetsName, labelsName, vocabSize)
	}))
}

// Len is the number of sequences.
func (s *Sequences) Len() (int64, error) {
	h, err := s.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(s)
	return call(h.Size)
}

// PaddingOptions of the dynamic padding collator; zero values are the defaults
// (pad id 0, no rounding, no length limit, causal LM labels).
type PaddingOptions struct {
	PadID           int64
	PadToMultipleOf int64 // > 0: the padded length is rounded up to a multiple of it
	MaxLength       int64 // > 0: longer sequences are cut (Truncate) or refused
	Truncate        bool
	NoLabels        bool // without labels in the data, add no labels field (else labels = ids, padding -100)
}

// DatasetFromSequences makes a Dataset whose batches are padded to their
// longest sequence: input_ids, attention_mask and labels (see NextNamed).
func DatasetFromSequences(s *Sequences, options PaddingOptions) (*Dataset, error) {
	h, err := s.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(s)
	opts := core.NewPaddingOptions()
	defer core.DeletePaddingOptions(opts)
	opts.SetPad_id(options.PadID)
	opts.SetPad_to_multiple_of(options.PadToMultipleOf)
	opts.SetMax_length(options.MaxLength)
	opts.SetTruncate(boolInt(options.Truncate))
	opts.SetCausal_lm_labels(boolInt(!options.NoLabels))
	return newDataset(call(func() core.Dataset { return core.DatasetFrom_sequences(h, opts) }))
}

// SequenceSample is one sample as a CollateFunc receives it.
type SequenceSample struct {
	InputIDs []int64
	Labels   []int64 // nil without labels; one value per sample or one per token
}

// CollateFunc turns a batch's samples into one tensor per field name (each with
// len(samples) rows on dim 0); the library copies and then closes them. Its
// error, or a panic, fails the loader call. It may run on the loader's worker
// threads.
type CollateFunc func(samples []SequenceSample) (map[string]*Tensor, error)

// collator is the Collator director over a CollateFunc (owned by libaccel once the dataset exists).
type collator struct {
	fn    CollateFunc
	names []string
}

func int64s(v core.Int64Vector) []int64 {
	out := make([]int64, v.Size())
	for i := range out {
		out[i] = v.Get(i)
	}
	return out
}

func (c *collator) Collate(ids, offsets, labels core.Int64Vector, kind int, out core.CollateWriter) (message string) {
	defer func() {
		if r := recover(); r != nil {
			message = panicText(r)
		}
	}()
	flat, bounds, flatLabels := int64s(ids), int64s(offsets), int64s(labels)
	samples := make([]SequenceSample, len(bounds)-1)
	for s := range samples {
		samples[s].InputIDs = flat[bounds[s]:bounds[s+1]]
		if kind == 1 {
			samples[s].Labels = flatLabels[s : s+1]
		} else if kind == 2 {
			samples[s].Labels = flatLabels[bounds[s]:bounds[s+1]]
		}
	}
	batch, err := c.fn(samples)
	if err != nil {
		return callbackResult(err)
	}
	defer func() {
		for _, t := range batch {
			t.Close()
		}
	}()
	if len(batch) != len(c.names) {
		return fmt.Sprintf("collate function returned %d fields, expected %v", len(batch), c.names)
	}
	for i, name := range c.names {
		t, ok := batch[name]
		if !ok || t == nil {
			return fmt.Sprintf("collate function returned no field %q (expected %v)", name, c.names)
		}
		th, err := t.handle()
		if err != nil {
			return callbackResult(err)
		}
		if err := withThread(func() { out.Put(i, th) }); err != nil {
			return callbackResult(err)
		}
	}
	return ""
}

// DatasetFromSequencesCollate makes a Dataset whose batches fn makes, with
// these field names (in this order: NextNamed and Next use it).
func DatasetFromSequencesCollate(s *Sequences, names []string, fn CollateFunc) (*Dataset, error) {
	if fn == nil {
		return nil, &Error{Code: ErrInvalidArgument, Msg: "the collate function is nil"}
	}
	h, err := s.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(s)
	nv := core.NewStringVector()
	defer core.DeleteStringVector(nv)
	for _, name := range names {
		nv.Add(name)
	}
	director := core.NewDirectorCollator(&collator{fn: fn, names: append([]string(nil), names...)})
	d, err := call(func() core.Dataset { return core.DatasetFrom_sequences_collate(h, nv, director) })
	if err != nil {
		core.DeleteDirectorCollator(director) // not handed over
		return nil, err
	}
	ds, _ := newDataset(d, nil)
	ds.source = director
	return ds, nil
}

// NewLengthGroupedDataLoader makes a loader over a sequence dataset whose
// batches group sequences of similar length (transformers'
// LengthGroupedSampler, seeded with options.Seed; regrouped each epoch from
// the generator's next permutation, as transformers' sampler draws one each
// time it is iterated; the same batches on every process). options.Shuffle
// must be false.
func NewLengthGroupedDataLoader(dataset *Dataset, options DataLoaderOptions) (*DataLoader, error) {
	return buildDataLoader(dataset, options, func(dh core.Dataset, opts core.DataLoaderOptions) core.DataLoader {
		return core.NewDataLoader(dh, opts, true)
	})
}

// FieldNames are the names of the batch's fields, or nil when they are positional.
func (l *DataLoader) FieldNames() ([]string, error) {
	h, err := l.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(l)
	v, err := call(h.Field_names)
	if err != nil {
		return nil, err
	}
	defer core.DeleteStringVector(v)
	names := make([]string, v.Size())
	for i := range names {
		names[i] = v.Get(i)
	}
	return names, nil
}

// NextNamed is the next batch as a map from field name (input_ids,
// attention_mask, labels, or a collate function's names) to tensor, or nil at
// the end of the epoch. Errors when the fields have no names.
func (l *DataLoader) NextNamed() (map[string]*Tensor, error) {
	names, err := l.FieldNames()
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, &Error{Code: ErrInvalidArgument, Msg: "the loader's fields have no names: use Next"}
	}
	fields, err := l.Next()
	if err != nil || fields == nil {
		return nil, err
	}
	batch := make(map[string]*Tensor, len(fields))
	for i, t := range fields {
		batch[names[i]] = t
	}
	return batch, nil
}
