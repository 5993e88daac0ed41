package accel

import (
	"fmt"
	"math/rand"
	"sync"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// SetSeed is Accelerate's accelerate.utils.set_seed without an accelerator:
// it seeds LibTorch's generators (CPU and CUDA) and Rand with seed, plus the
// process index with DeviceSpecific (read from a PartialState, as Accelerate
// reads it: joining the process group, collective when that creates it).
// Deterministic: LibTorch uses deterministic algorithms from now on. At most
// one SeedOptions; none means the defaults.
func SetSeed(seed uint64, options ...SeedOptions) error {
	o, err := oneSeedOptions(options)
	if err != nil {
		return err
	}
	effective := seed
	if o.DeviceSpecific {
		state, err := NewPartialState(PartialStateOptions{})
		if err != nil {
			return err
		}
		defer state.Close()
		index, err := state.ProcessIndex()
		if err != nil {
			return err
		}
		effective += uint64(index)
	}
	if err := withThread(func() { core.Set_seed(effective, o.Deterministic) }); err != nil {
		return err
	}
	Rand.Seed(int64(effective))
	return nil
}

func oneSeedOptions(options []SeedOptions) (SeedOptions, error) {
	if len(options) > 1 {
		return SeedOptions{}, &Error{Code: ErrInvalidArgument,
			Msg: fmt.Sprintf("SetSeed takes at most one SeedOptions, got %d", len(options))}
	}
	if len(options) == 1 {
		return options[0], nil
	}
	return SeedOptions{}, nil
}

// Rand is the math/rand generator that SetSeed and Accelerator.SetSeed reseed, Go's
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
