package accel

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// Collectives over nested structures, as Accelerate's operations take nested
// lists, tuples and dicts: data is a *Tensor, a []*Tensor, a []any, a
// map[string]*Tensor or a map[string]any, nested in any way; the result has
// the same structure with new tensors (close them). The C ABI takes a flat
// list, so the structure is flattened here; map keys are visited in sorted
// order so that every process lists its tensors alike. Every process must
// pass the same structure.

func flatten(data any, leaves *[]*Tensor, what string) error {
	switch v := data.(type) {
	case *Tensor:
		*leaves = append(*leaves, v)
	case []*Tensor:
		*leaves = append(*leaves, v...)
	case []any:
		for _, item := range v {
			if err := flatten(item, leaves, what); err != nil {
				return err
			}
		}
	case map[string]*Tensor:
		for _, k := range sortedKeys(v) {
			*leaves = append(*leaves, v[k])
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			if err := flatten(v[k], leaves, what); err != nil {
				return err
			}
		}
	default:
		return &Error{Code: ErrInvalidArgument, Msg: fmt.Sprintf("%s: unsupported type %T; pass a *Tensor or "+
			"slices and maps (map[string]...) of them", what, data)}
	}
	return nil
}

// rebuild returns data's structure with results (in flatten's order) in place of its tensors.
func rebuild(data any, results []*Tensor, next *int) any {
	take := func() *Tensor { t := results[*next]; *next++; return t }
	switch v := data.(type) {
	case *Tensor:
		return take()
	case []*Tensor:
		out := make([]*Tensor, len(v))
		for i := range v {
			out[i] = take()
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = rebuild(item, results, next)
		}
		return out
	case map[string]*Tensor:
		out := make(map[string]*Tensor, len(v))
		for _, k := range sortedKeys(v) {
			out[k] = take()
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range sortedKeys(v) {
			out[k] = rebuild(v[k], results, next)
		}
		return out
	}
	return nil // unreachable: flatten accepted data
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// listOp flattens data, runs one list collective and rebuilds the structure.
func (a *Accelerator) listOp(data any, what string, f func(core.Accelerator, core.TensorList) core.Batch) (any, error) {
	var leaves []*Tensor
	if err := flatten(data, &leaves, what); err != nil {
		return nil, err
	}
	handles := make([]core.Tensor, len(leaves))
	for i, t := range leaves {
		h, err := t.handle()
		if err != nil {
			return nil, err
		}
		handles[i] = h
	}
	defer runtime.KeepAlive(leaves)
	list := core.NewTensorList()
	defer core.DeleteTensorList(list)
	var batch core.Batch
	err := a.do(func(h core.Accelerator) {
		for _, th := range handles {
			list.Add(th)
		}
		batch = f(h, list)
	})
	if err != nil {
		return nil, err
	}
	defer core.DeleteBatch(batch)
	results := make([]*Tensor, batch.Size())
	for i := range results {
		t, err := tensorResult(call(func() core.Tensor { return batch.Take(i) }))
		if err != nil {
			closeAll(results)
			return nil, err
		}
		results[i] = t
	}
	next := 0
	return rebuild(data, results, &next), nil
}

// GatherNested is Gather on every tensor of a nested structure. Collective.
func (a *Accelerator) GatherNested(data any) (any, error) {
	return a.listOp(data, "GatherNested", func(h core.Accelerator, l core.TensorList) core.Batch { return h.Gather_list(l) })
}

// GatherForMetricsNested is GatherForMetrics on every tensor of a nested structure. Collective.
func (a *Accelerator) GatherForMetricsNested(data any) (any, error) {
	return a.listOp(data, "GatherForMetricsNested", func(h core.Accelerator, l core.TensorList) core.Batch {
		return h.Gather_for_metrics_list(l)
	})
}

// ReduceNested is scale * the sum over processes of every tensor of a nested
// structure (ReduceSum, ReduceNone), divided by the process count for ReduceMean.
// Tensors of one dtype travel in one allreduce. Collective.
func (a *Accelerator) ReduceNested(data any, op ReduceOp, scale float64) (any, error) {
	return a.listOp(data, "ReduceNested", func(h core.Accelerator, l core.TensorList) core.Batch {
		return h.Reduce_list(l, core.Accel_reduce_op(op), scale)
	})
}

// BroadcastNested is fromProcess's tensors of a nested structure on every process. Collective.
func (a *Accelerator) BroadcastNested(data any, fromProcess int) (any, error) {
	return a.listOp(data, "BroadcastNested", func(h core.Accelerator, l core.TensorList) core.Batch {
		return h.Broadcast_list(l, fromProcess)
	})
}

// PadAcrossProcessesNested pads every tensor of a nested structure along dim
// (tensors without dim come back unchanged). Collective.
func (a *Accelerator) PadAcrossProcessesNested(data any, dim int64, padValue float64, padFirst bool) (any, error) {
	return a.listOp(data, "PadAcrossProcessesNested", func(h core.Accelerator, l core.TensorList) core.Batch {
		return h.Pad_across_processes_list(l, dim, padValue, padFirst)
	})
}

// SplitRange tells which of n items this process takes in split_between_processes:
// items[start:end], then padded-(end-start) copies of the last item. The first
// n % NumProcesses processes take one more; surplus processes get none; with
// applyPadding every process gets ceil(n / NumProcesses). Not collective.
func (a *Accelerator) SplitRange(n int, applyPadding bool) (start, end, padded int, err error) {
	var r []int64
	err = a.do(func(h core.Accelerator) {
		v := h.Split_range(int64(n), applyPadding)
		defer core.DeleteInt64Vector(v)
		if v.Size() == 3 {
			r = []int64{v.Get(0), v.Get(1), v.Get(2)}
		}
	})
	if err != nil {
		return 0, 0, 0, err
	}
	return int(r[0]), int(r[1]), int(r[2]), nil
}

func splitSlice[T any](items []T, start, end, padded int) []T {
	out := append([]T(nil), items[start:end]...)
	for len(out) < padded {
		out = append(out, items[len(items)-1])
	}
	return out
}

// SplitBetweenProcesses is this process's share of items (Accelerate's
// split_between_processes on a list), by SplitRange. Not collective.
func SplitBetweenProcesses[T any](a *Accelerator, items []T, applyPadding bool) ([]T, error) {
	start, end, padded, err := a.SplitRange(len(items), applyPadding)
	if err != nil {
		return nil, err
	}
	return splitSlice(items, start, end, padded), nil
}

// SplitMapBetweenProcesses splits every slice of m alike (Accelerate's dict
// input); the slices must have equal lengths. Not collective.
func SplitMapBetweenProcesses[K comparable, T any](a *Accelerator, m map[K][]T, applyPadding bool) (map[K][]T, error) {
	length := -1
	for k, v := range m {
		if length >= 0 && len(v) != length {
			return nil, &Error{Code: ErrInvalidArgument, Msg: fmt.Sprintf(
				"SplitMapBetweenProcesses: all slices must have the same length; %v has %d, another %d", k, len(v), length)}
		}
		length = len(v)
	}
	if length < 0 {
		return map[K][]T{}, nil
	}
	start, end, padded, err := a.SplitRange(length, applyPadding)
	if err != nil {
		return nil, err
	}
	out := make(map[K][]T, len(m))
	for k, v := range m {
		out[k] = splitSlice(v, start, end, padded)
	}
	return out, nil
}

// BroadcastObject is fromProcess's bytes on every process (the others' data is ignored). Collective.
func (a *Accelerator) BroadcastObject(data []byte, fromProcess int) ([]byte, error) {
	s, err := accelValue(a, func(h core.Accelerator) string { return h.Broadcast_object(string(data), fromProcess) })
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// GatherForMetricsObjects is Accelerate's gather_for_metrics with
// use_gather_object: every process's items (JSON-encodable) concatenated in
// rank order, without the ones repeated to complete the last round of a
// prepared loader. Collective.
func GatherForMetricsObjects[T any](a *Accelerator, items []T) ([]T, error) {
	encoded, err := json.Marshal(items)
	if err != nil {
		return nil, &Error{Code: ErrInvalidArgument, Msg: "GatherForMetricsObjects: " + err.Error()}
	}
	parts, err := a.GatherObject(encoded)
	if err != nil {
		return nil, err
	}
	var all []T
	for rank, part := range parts {
		var mine []T
		if err := json.Unmarshal(part, &mine); err != nil {
			return nil, &Error{Code: ErrInvalidArgument, Msg: fmt.Sprintf("GatherForMetricsObjects: rank %d: %v", rank, err)}
		}
		all = append(all, mine...)
	}
	keep, err := accelValue(a, func(h core.Accelerator) int64 { return h.Metrics_length(int64(len(all))) })
	if err != nil {
		return nil, err
	}
	return all[:keep], nil
}

// DebugMode tells whether ACCELERATE_DEBUG_MODE (accel launch --debug) was on
// at creation: then Reduce and Broadcast check shapes across processes first.
func (a *Accelerator) DebugMode() (bool, error) {
	return accelValue(a, func(h core.Accelerator) bool { return h.Debug_mode() })
}
