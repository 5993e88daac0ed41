package accel

import (
	"runtime"
	"time"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// PartialState is Accelerate's PartialState: this process's place in the
// launch and the world's process group, without an Accelerator. Every
// PartialState and Accelerator of a process shares the group, so a program may
// make one for its data work before (or beside) its Accelerator. Close frees it.
type PartialState struct{ partialStateHandle }

type partialStateHandle = owned[core.PartialState]

var partialStateKind = handleKind[core.PartialState]{name: "PartialState", free: core.DeletePartialState}

// PartialStateOptions are PartialState's settings; the zero value is Accelerate's defaults.
type PartialStateOptions struct {
	CPU     bool          // the CPU even where CUDA is available (also ACCELERATE_USE_CPU)
	Timeout time.Duration // collective timeout when this state creates the group; 0: 30 minutes
}

// NewPartialState joins (or, first in the process, creates) the world's
// process group. Collective when it creates the group.
func NewPartialState(options PartialStateOptions) (*PartialState, error) {
	timeout := options.Timeout
	if timeout == 0 {
		timeout = 30 * time.Minute
	}
	h, err := call(func() core.PartialState { return core.NewPartialState(options.CPU, timeout.Milliseconds()) })
	if err != nil {
		return nil, err
	}
	return own(&PartialState{}, h), nil
}

// CUDADeviceCount is the number of CUDA devices LibTorch sees from this process
// (0 on a CPU-only build or machine), as torch.cuda.device_count().
func CUDADeviceCount() (int, error) {
	return call(func() int { return core.Cuda_device_count() })
}

func stateValue[T any](s *PartialState, f func(core.PartialState) T) (T, error) {
	h, err := live(s, &partialStateKind)
	if err != nil {
		var zero T
		return zero, err
	}
	defer runtime.KeepAlive(s)
	return call(func() T { return f(h) })
}

// ProcessIndex is this process's global rank.
func (s *PartialState) ProcessIndex() (int, error) {
	return stateValue(s, func(h core.PartialState) int { return h.Process_index() })
}

// LocalProcessIndex is this process's rank on its machine.
func (s *PartialState) LocalProcessIndex() (int, error) {
	return stateValue(s, func(h core.PartialState) int { return h.Local_process_index() })
}

// NumProcesses is the number of processes in the launch.
func (s *PartialState) NumProcesses() (int, error) {
	return stateValue(s, func(h core.PartialState) int { return h.Num_processes() })
}

// IsMainProcess tells whether this is rank 0.
func (s *PartialState) IsMainProcess() (bool, error) {
	index, err := s.ProcessIndex()
	return err == nil && index == 0, err
}

// IsLastProcess tells whether this is the last rank.
func (s *PartialState) IsLastProcess() (bool, error) {
	index, err := s.ProcessIndex()
	if err != nil {
		return false, err
	}
	n, err := s.NumProcesses()
	return err == nil && index == n-1, err
}

// Device is the device this process computes on, such as "cpu" or "cuda:0".
func (s *PartialState) Device() (string, error) {
	return stateValue(s, func(h core.PartialState) string { return h.Device() })
}

// DistributedType is "NO", "MULTI_CPU" or "MULTI_GPU".
func (s *PartialState) DistributedType() (string, error) {
	v, err := stateValue(s, func(h core.PartialState) int { return int(h.Distributed_type()) })
	names := []string{"NO", "MULTI_CPU", "MULTI_GPU"}
	if err != nil || v < 0 || v >= len(names) {
		return "", err
	}
	return names[v], nil
}

// SplitRange says which of n items this process takes, as Accelerator.SplitRange. Not collective.
func (s *PartialState) SplitRange(n int, applyPadding bool) (start, end, padded int, err error) {
	r, err := stateValue(s, func(h core.PartialState) []int64 {
		v := h.Split_range(int64(n), applyPadding)
		defer core.DeleteInt64Vector(v)
		return []int64{v.Get(0), v.Get(1), v.Get(2)}
	})
	if err != nil {
		return 0, 0, 0, err
	}
	return int(r[0]), int(r[1]), int(r[2]), nil
}

// SplitBetweenProcessesOf is this process's share of items under s
// (Accelerate's PartialState.split_between_processes on a list). Not collective.
func SplitBetweenProcessesOf[T any](s *PartialState, items []T, applyPadding bool) ([]T, error) {
	start, end, padded, err := s.SplitRange(len(items), applyPadding)
	if err != nil {
		return nil, err
	}
	return splitSlice(items, start, end, padded), nil
}

// WaitForEveryone blocks until every process arrives. Collective.
func (s *PartialState) WaitForEveryone() error {
	_, err := stateValue(s, func(h core.PartialState) bool { h.Wait_for_everyone(); return true })
	return err
}

// MainProcessFirst runs body on the main process first, then on the others. Collective.
func (s *PartialState) MainProcessFirst(body func() error) error {
	main, err := s.IsMainProcess()
	if err != nil {
		return err
	}
	if !main {
		if err := s.WaitForEveryone(); err != nil {
			return err
		}
	}
	bodyErr := body()
	if main {
		if err := s.WaitForEveryone(); err != nil && bodyErr == nil {
			return err
		}
	}
	return bodyErr
}

// Close frees the state; the process group lives on while an Accelerator or
// another PartialState holds it. Closing twice is fine.
func (s *PartialState) Close() error { return release(s, &partialStateKind) }
