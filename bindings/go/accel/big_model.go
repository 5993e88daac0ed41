package accel

import (
	"encoding/json"
	"runtime"

	"github.com/libaccel/libaccel/bindings/go/internal/core"
)

// Big-model tools (Accelerate's init_empty_weights, compute_module_sizes,
// infer_auto_device_map, check_device_map and load_checkpoint_and_dispatch;
// docs/big-models.md). A device map is a map of module name to "cpu", "disk"
// or "cuda:N"; only JSON-spec models are supported.

// ModelFromJSONEmpty builds a JSON-spec model whose parameters and buffers
// live on the meta device: shapes only, no memory. Load weights with
// LoadCheckpointAndDispatch or Materialize before running it.
func ModelFromJSONEmpty(spec string) (*Model, error) {
	return newModel(call(func() core.Model { return core.ModelFrom_json_empty(spec) }))
}

// ModuleSizes returns the bytes of every module's parameters and buffers (""
// is the whole model), as if cast to dtype ("" keeps each tensor's own).
func (m *Model) ModuleSizes(dtype string) (map[string]int64, error) {
	text, err := modelString(m, func(h core.Model) string { return h.Module_sizes_json(dtype) })
	if err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	return sizes, json.Unmarshal([]byte(text), &sizes)
}

// HFDeviceMap is transformers' hf_device_map: the device map DispatchModel or
// LoadCheckpointAndDispatch last placed the model with (an "auto" map as
// computed), module name to device; empty when neither did. Accelerate's
// verify_device_map is whether it has more than one entry.
func (m *Model) HFDeviceMap() (map[string]string, error) {
	text, err := modelString(m, func(h core.Model) string { return h.Hf_device_map_json() })
	if err != nil {
		return nil, err
	}
	deviceMap := map[string]string{}
	return deviceMap, json.Unmarshal([]byte(text), &deviceMap)
}

// InferAutoDeviceMap is Accelerate 0.22's infer_auto_device_map: modules
// placed over the GPUs in order, then "cpu", then "disk", with budgets such as
// {"cpu": "200MB"} (nil: GetMaxMemory()); modules whose class is in noSplit
// are never split.
func (m *Model) InferAutoDeviceMap(maxMemory map[string]string, noSplit []string, dtype string) (map[string]string, error) {
	text, err := budgetCall(m, maxMemory, noSplit, func(h core.Model, budgets string, classes core.StringVector) string {
		return h.Infer_auto_device_map_json(budgets, classes, dtype)
	})
	if err != nil {
		return nil, err
	}
	deviceMap := map[string]string{}
	return deviceMap, json.Unmarshal([]byte(text), &deviceMap)
}

// BalancedMemory is Accelerate's get_balanced_memory: maxMemory (such as
// {"0": "1GB", "1": "1GB", "cpu": "8GB"}; nil: GetMaxMemory(), of which a lone
// GPU then keeps 10% free) with every GPU's budget but the last lowered to an
// even share of the model plus a margin, so that InferAutoDeviceMap spreads
// the model over the GPUs; lowZero leaves GPU 0 only what the others cannot
// hold. Budgets in bytes, GPUs as "cuda:N"; without a GPU they are unchanged.
func (m *Model) BalancedMemory(maxMemory map[string]string, noSplit []string, dtype string, lowZero bool) (map[string]int64, error) {
	text, err := budgetCall(m, maxMemory, noSplit, func(h core.Model, budgets string, classes core.StringVector) string {
		return h.Balanced_memory_json(budgets, classes, dtype, lowZero)
	})
	if err != nil {
		return nil, err
	}
	balanced := map[string]int64{}
	return balanced, json.Unmarshal([]byte(text), &balanced)
}

// budgetCall runs f with maxMemory as JSON ("" for nil: GetMaxMemory()) and
// noSplit as the binding's string vector.
func budgetCall(m *Model, maxMemory map[string]string, noSplit []string,
	f func(core.Model, string, core.StringVector) string) (string, error) {
	budgets := []byte{}
	if maxMemory != nil {
		var err error
		if budgets, err = json.Marshal(maxMemory); err != nil {
			return "", err
		}
	}
	classes := core.NewStringVector()
	defer core.DeleteStringVector(classes)
	for _, name := range noSplit {
		classes.Add(name)
	}
	return modelString(m, func(h core.Model) string { return f(h, string(budgets), classes) })
}

// CheckDeviceMap returns an error naming the first key that names no module,
// lies inside another key or names an unknown device, or the first tensor the
// map leaves out.
func (m *Model) CheckDeviceMap(deviceMap map[string]string) error {
	text, err := json.Marshal(deviceMap)
	if err != nil {
		return err
	}
	_, err = modelString(m, func(h core.Model) string { h.Verify_device_map_json(string(text)); return "" })
	return err
}

// DispatchModel is Accelerate's dispatch_model: the loaded model's tensors go
// where deviceMap puts them ("cpu", "cuda:N"; "disk" writes them to
// offloadDir/model.safetensors and reads them back just before their node
// runs, so offloadDir may be "" only without "disk"), each node of the JSON
// graph running where its weights are. Checked before anything moves.
func (m *Model) DispatchModel(deviceMap map[string]string, offloadDir string) error {
	encoded, err := json.Marshal(deviceMap)
	if err != nil {
		return err
	}
	_, err = modelString(m, func(h core.Model) string { h.Dispatch_model_json(string(encoded), offloadDir); return "" })
	return err
}

// DiskOffload is Accelerate's disk_offload: the model's weights are written to
// offloadDir (model.safetensors, offload_index.json) and moved to the meta
// device; each node reads its weights back just before it runs and releases
// them after, on the CPU. The model must be a JSON graph, or a TorchScript
// model that has not run a forward (its submodules bring their tensors in
// around each call).
func (m *Model) DiskOffload(offloadDir string) error {
	_, err := modelString(m, func(h core.Model) string { h.Disk_offload(offloadDir); return "" })
	return err
}

// CPUOffload is Accelerate's cpu_offload: the model's parameters (and buffers
// when offloadBuffers) move to host memory, pinned for a GPU, and each node's
// are copied to executionDevice ("cpu", "cuda:N"; "" for the device of the
// first parameter) just before it runs and dropped there after. Outputs come
// back to the inputs' device. For inference; the model must be a JSON graph.
func (m *Model) CPUOffload(executionDevice string, offloadBuffers bool) error {
	_, err := modelString(m, func(h core.Model) string { h.Cpu_offload(executionDevice, offloadBuffers); return "" })
	return err
}

// DiskOffloadTo is DiskOffload with each node brought in and run on
// executionDevice ("cpu", "cuda:N"; "" is the CPU); outputs come back to the
// inputs' device. A GPU needs a JSON graph model.
func (m *Model) DiskOffloadTo(offloadDir, executionDevice string) error {
	_, err := modelString(m, func(h core.Model) string { h.Disk_offload(offloadDir, executionDevice); return "" })
	return err
}

// Materialize fills every parameter and buffer (empty or not) from checkpoint
// (a .safetensors file, a sharded index or a directory) on the CPU; on error
// the model is unchanged.
func (m *Model) Materialize(checkpoint, dtype string) error {
	_, err := modelString(m, func(h core.Model) string { h.Materialize(checkpoint, dtype); return "" })
	return err
}

// LoadCheckpointAndDispatch loads checkpoint into the model, each module where
// deviceMap puts it ("cpu" in RAM, "disk" read from offloadFolder or the
// checkpoint just before its node runs and released after; nil: everything on
// the CPU). Everything is checked before anything is loaded.
func (m *Model) LoadCheckpointAndDispatch(checkpoint string, deviceMap map[string]string, offloadFolder, dtype string) error {
	text := ""
	if deviceMap != nil {
		encoded, err := json.Marshal(deviceMap)
		if err != nil {
			return err
		}
		text = string(encoded)
	}
	_, err := modelString(m, func(h core.Model) string {
		h.Load_checkpoint_and_dispatch_json(checkpoint, text, offloadFolder, dtype)
		return ""
	})
	return err
}

// LoadCheckpointAndDispatchAuto is LoadCheckpointAndDispatch with Accelerate's
// device_map="auto": the map InferAutoDeviceMap makes from every GPU's free
// memory and the RAM the system has available now, balanced over the GPUs
// (BalancedMemory). No classes are kept whole.
func (m *Model) LoadCheckpointAndDispatchAuto(checkpoint, offloadFolder, dtype string) error {
	return m.LoadCheckpointAndDispatchStrategy(checkpoint, "auto", offloadFolder, dtype)
}

// LoadCheckpointAndDispatchStrategy is LoadCheckpointAndDispatch with one of
// Accelerate's device_map strings: "auto", "balanced", "balanced_low_0" (GPU 0
// kept as empty as the others allow) or "sequential" (the GPUs filled in
// order). Another string is an error naming it.
func (m *Model) LoadCheckpointAndDispatchStrategy(checkpoint, strategy, offloadFolder, dtype string) error {
	quoted, err := json.Marshal(strategy)
	if err != nil {
		return err
	}
	_, err = modelString(m, func(h core.Model) string {
		h.Load_checkpoint_and_dispatch_json(checkpoint, string(quoted), offloadFolder, dtype)
		return ""
	})
	return err
}

func modelString(m *Model, f func(core.Model) string) (string, error) {
	h, err := m.handle()
	if err != nil {
		return "", err
	}
	defer runtime.KeepAlive(m)
	return call(func() string { return f(h) })
}

// GetMaxMemory is Accelerate's get_max_memory(): the bytes each device can
// take now, "cuda:N" (every GPU's free memory) then "cpu" (the RAM the system
// has available).
func GetMaxMemory() (map[string]int64, error) {
	text, err := call(core.Available_memory_json)
	if err != nil {
		return nil, err
	}
	budgets := map[string]int64{}
	return budgets, json.Unmarshal([]byte(text), &budgets)
}
