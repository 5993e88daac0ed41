//go:build go1.23

package accel

import (
	"strings"
	"testing"
)

func TestBatchesRangesOverOneEpochAndStopsAtAnError(t *testing.T) {
	ds := must[*Dataset](t)(NewMapDataset(&squares{n: 10}, squareFields...))
	loader := must[*DataLoader](t)(NewDataLoader(ds, DataLoaderOptions{BatchSize: 4}))
	var sizes []int64
	for batch, err := range loader.Batches() {
		ok(t, err)
		sizes = append(sizes, must[int64](t)(batch[1].Numel()))
		CloseAll(batch...)
	}
	if !equal(sizes, []int64{4, 4, 2}) {
		t.Fatalf("batch sizes %v", sizes)
	}
	for range loader.Batches() {
		break // an early break leaves the epoch open: Next continues it
	}
	rest := readEpoch(t, loader)
	if len(rest) != 2 {
		t.Fatalf("%d batches after breaking out of the first", len(rest))
	}

	bad := must[*Dataset](t)(NewMapDataset(&broken{squares: squares{n: 8}}, squareFields...))
	badLoader := must[*DataLoader](t)(NewDataLoader(bad, DataLoaderOptions{BatchSize: 2}))
	var errs []error
	batches := 0
	for batch, err := range badLoader.Batches() {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		batches++
		CloseAll(batch...)
	}
	if batches != 2 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "sample five is missing") {
		t.Fatalf("%d batches, errors %v", batches, errs)
	}
}
