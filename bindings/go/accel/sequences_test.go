package accel

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var testIDs = [][]int64{{1, 2, 3}, {4}, {5, 6, 7, 8, 9}, {10, 11}, {12}}

func TestPaddedSequencesGiveNamedBatches(t *testing.T) {
	seqs := must[*Sequences](t)(SequencesFromLists(testIDs, 0))
	defer seqs.Close()
	ds := must[*Dataset](t)(DatasetFromSequences(seqs, PaddingOptions{PadID: 0, PadToMultipleOf: 4}))
	defer ds.Close()
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2}))
	defer loader.Close()
	names := must[[]string](t)(loader.FieldNames())
	if !equal(names, []string{"input_ids", "attention_mask", "labels"}) {
		t.Fatalf("names %v", names)
	}
	batch := must[map[string]*Tensor](t)(loader.NextNamed())
	defer func() {
		for _, tensor := range batch {
			tensor.Close()
		}
	}()
	ids := must[[]int64](t)(batch["input_ids"].Int64s())
	mask := must[[]int64](t)(batch["attention_mask"].Int64s())
	labels := must[[]int64](t)(batch["labels"].Int64s())
	if !equal(ids, []int64{1, 2, 3, 0, 4, 0, 0, 0}) || !equal(mask, []int64{1, 1, 1, 0, 1, 0, 0, 0}) ||
		!equal(labels, []int64{1, 2, 3, -100, 4, -100, -100, -100}) {
		t.Fatalf("ids %v mask %v labels %v", ids, mask, labels)
	}
}

// lengthsOf is a Go collate function: field "lengths" [B] and "first" [B].
func lengthsOf(samples []SequenceSample) (map[string]*Tensor, error) {
	lengths := make([]int64, len(samples))
	first := make([]int64, len(samples))
	for i, s := range samples {
		lengths[i] = int64(len(s.InputIDs))
		first[i] = s.InputIDs[0]
	}
	l, err := NewTensor(lengths, int64(len(samples)))
	if err != nil {
		return nil, err
	}
	f, err := NewTensor(first, int64(len(samples)))
	if err != nil {
		l.Close()
		return nil, err
	}
	return map[string]*Tensor{"lengths": l, "first": f}, nil
}

func TestGoCollateFunction(t *testing.T) {
	seqs := must[*Sequences](t)(SequencesFromLists(testIDs, 0))
	defer seqs.Close()
	ds := must[*Dataset](t)(DatasetFromSequencesCollate(seqs, []string{"lengths", "first"}, lengthsOf))
	defer ds.Close()
	for _, workers := range []int{0, 2} {
		loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 3, NumWorkers: workers}))
		batch := must[map[string]*Tensor](t)(loader.NextNamed())
		lengths := must[[]int64](t)(batch["lengths"].Int64s())
		first := must[[]int64](t)(batch["first"].Int64s())
		if !equal(lengths, []int64{3, 1, 5}) || !equal(first, []int64{1, 4, 5}) {
			t.Fatalf("workers %d: lengths %v first %v", workers, lengths, first)
		}
		CloseAll(batch["lengths"], batch["first"])
		loader.Close()
	}
}

func TestGoCollateErrorsReachTheCaller(t *testing.T) {
	seqs := must[*Sequences](t)(SequencesFromLists(testIDs, 0))
	defer seqs.Close()
	failing := func([]SequenceSample) (map[string]*Tensor, error) { return nil, errors.New("the Go collate failed") }
	ds := must[*Dataset](t)(DatasetFromSequencesCollate(seqs, []string{"x"}, failing))
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2}))
	_, err := loader.NextNamed()
	wantError(t, err, ErrInvalidArgument, "the Go collate failed")
	loader.Close()
	ds.Close()

	ragged := func(s []SequenceSample) (map[string]*Tensor, error) {
		x, err := NewTensor(make([]int64, 3*len(s)+3), int64(len(s)+1), 3)
		return map[string]*Tensor{"x": x}, err
	}
	ds = must[*Dataset](t)(DatasetFromSequencesCollate(seqs, []string{"x"}, ragged))
	defer ds.Close()
	loader = must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 2}))
	defer loader.Close()
	_, err = loader.NextNamed()
	wantError(t, err, ErrInvalidArgument, "field 'x' has shape [3, 3], expected [2, ...]")

	panicking := func([]SequenceSample) (map[string]*Tensor, error) { panic("collate panicked") }
	pds := must[*Dataset](t)(DatasetFromSequencesCollate(seqs, []string{"x"}, panicking))
	defer pds.Close()
	ploader := must[*DataLoader](t)(NewDataLoader(pds, DataLoaderOptions{BatchSize: 2}))
	defer ploader.Close()
	_, err = ploader.NextNamed()
	wantError(t, err, ErrInvalidArgument, "panic: collate panicked")
}

func TestSequenceFilesAndLengthGrouping(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.jsonl")
	ok(t, os.WriteFile(path, []byte("{\"input_ids\": [1]}\n{\"input_ids\": [2, 0.5]}\n"), 0o644))
	_, err := SequencesFromJSONL(path, "input_ids", "", 0)
	wantError(t, err, ErrIO, "bad.jsonl:2: 'input_ids'[1] = 0.5 is not an integer id")

	text := filepath.Join(dir, "fortunes")
	ok(t, os.WriteFile(text, []byte("one\n%\ntwo two\n%\n"), 0o644))
	seqs := must[*Sequences](t)(SequencesFromText(text, TextSeparator, "%", 0, 0))
	defer seqs.Close()
	if n := must[int64](t)(seqs.Len()); n != 2 {
		t.Fatalf("%d samples", n)
	}

	// The same text with a vocabulary: tokens, not bytes; no <unk>, so "one" is an error naming its line.
	vocab := filepath.Join(dir, "vocab.txt")
	ok(t, os.WriteFile(vocab, []byte("two\n"), 0o644))
	_, err = SequencesFromTextVocab(text, vocab, TextSeparator, "%", 0, 0)
	wantError(t, err, ErrIO, `fortunes:1: the token "one" is not in the vocabulary`)
	ok(t, os.WriteFile(vocab, []byte("two\n<unk>\n"), 0o644))
	// TextChunks counts tokens: "one two two" (the "%" lines are tokens too) in windows of 4.
	words := must[*Sequences](t)(SequencesFromTextVocab(text, vocab, TextChunks, "", 4, 0))
	defer words.Close()
	if n := must[int64](t)(words.Len()); n != 2 {
		t.Fatalf("%d windows of 4 tokens, want 2", n)
	}

	var ids [][]int64
	for i := 0; i < 12; i++ {
		ids = append(ids, make([]int64, i%5+1))
	}
	grouped := must[*Sequences](t)(SequencesFromLists(ids, 0))
	defer grouped.Close()
	ds := must[*Dataset](t)(DatasetFromSequences(grouped, PaddingOptions{}))
	defer ds.Close()
	loader := must[*DataLoader](t)(NewLengthGroupedDataLoader(ds, DataLoaderOptions{BatchSize: 4, Seed: 3}))
	defer loader.Close()
	first := must[map[string]*Tensor](t)(loader.NextNamed())
	shape := must[[]int64](t)(first["input_ids"].Shape())
	if shape[1] != 5 { // the longest sequence is in the first batch
		t.Fatalf("first batch shape %v", shape)
	}
	CloseAll(first["input_ids"], first["attention_mask"], first["labels"])
	_, err = NewLengthGroupedDataLoader(ds, DataLoaderOptions{BatchSize: 4, Shuffle: true})
	wantError(t, err, ErrInvalidArgument, "shuffle must be 0")
}
