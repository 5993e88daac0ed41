//go:build go1.23

package accel

import "iter"

// Batches ranges over one epoch: `for batch, err := range loader.Batches()`.
// An error ends the range after it is yielded. Breaking out early leaves the
// epoch unfinished: the next Next continues it.
func (l *DataLoader) Batches() iter.Seq2[[]*Tensor, error] {
	return func(yield func([]*Tensor, error) bool) {
		for {
			batch, err := l.Next()
			if err != nil {
				yield(nil, err)
				return
			}
			if batch == nil || !yield(batch, nil) {
				return
			}
		}
	}
}
