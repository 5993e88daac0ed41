package accel

import (
	"math/rand"
	"sync"
)

// Rand is the math/rand generator that Accelerator.SetSeed reseeds, Go's
// counterpart of the random and numpy generators Accelerate's set_seed seeds
// in Python: draw shuffles, augmentation and dropout masks made in Go from it
// and a seeded run repeats exactly. (math/rand's global functions cannot be
// reseeded reliably: rand.Seed is deprecated and, from Go 1.24, does nothing
// by default.) Safe for concurrent use.
var Rand = rand.New(&lockedSource{source: rand.NewSource(1).(rand.Source64)})

// lockedSource serialises a rand.Source64, which is not safe for concurrent use.
type lockedSource struct {
	mu     sync.Mutex
	source rand.Source64
}

func (s *lockedSource) Int63() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.source.Int63()
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.source.Uint64()
}

func (s *lockedSource) Seed(seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.source.Seed(seed)
}
