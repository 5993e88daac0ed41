package accel

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const bigGPT = `{"inputs": ["input_ids"], "nodes": [
  {"name": "wte", "type": "Embedding", "num_embeddings": 256, "embedding_dim": 64},
  {"name": "h", "type": "Sequential", "layers": [
    {"type": "TransformerEncoderLayer", "d_model": 64, "nhead": 4, "dim_feedforward": 256, "batch_first": true},
    {"type": "TransformerEncoderLayer", "d_model": 64, "nhead": 4, "dim_feedforward": 256, "batch_first": true},
    {"type": "TransformerEncoderLayer", "d_model": 64, "nhead": 4, "dim_feedforward": 256, "batch_first": true},
    {"type": "TransformerEncoderLayer", "d_model": 64, "nhead": 4, "dim_feedforward": 256, "batch_first": true}]},
  {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 64},
  {"name": "logits", "type": "Linear", "in_features": 64, "out_features": 256, "bias": false}],
 "outputs": ["logits"]}`

// The values Accelerate 0.22 computes for the torch twin (tests/capi/test_big_model_api.c).
func TestEmptyModelSizesAndDeviceMap(t *testing.T) {
	model, err := ModelFromJSONEmpty(bigGPT)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	sizes, err := model.ModuleSizes("")
	if err != nil || sizes[""] != 931328 || sizes["h.0"] != 199936 {
		t.Fatalf("sizes %v, %v", sizes, err)
	}
	deviceMap, err := model.InferAutoDeviceMap(map[string]string{"cpu": "500000"}, []string{"TransformerEncoderLayer"}, "")
	want := map[string]string{"wte": "cpu", "h.0": "cpu", "h.1": "disk", "h.2": "disk", "h.3": "disk", "ln_f": "disk", "logits": "disk"}
	if err != nil || len(deviceMap) != len(want) {
		t.Fatalf("device map %v, %v", deviceMap, err)
	}
	for k, v := range want {
		if deviceMap[k] != v {
			t.Fatalf("device map %v, want %v", deviceMap, want)
		}
	}
	if err := model.CheckDeviceMap(deviceMap); err != nil {
		t.Fatal(err)
	}
	if err := model.CheckDeviceMap(map[string]string{"wte": "cpu", "h": "disk", "lm_head": "cpu"}); err == nil ||
		!strings.Contains(err.Error(), `"lm_head" names no module`) {
		t.Fatalf("a map naming no module: %v", err)
	}
	if _, err := model.InferAutoDeviceMap(map[string]string{"cpu": "100000"}, []string{"TransformerEncoderLayer"}, ""); err == nil ||
		!strings.Contains(err.Error(), `"h.0" (199936 bytes)`) {
		t.Fatalf("a budget below the largest block: %v", err)
	}
	// nil budgets: GetMaxMemory(), here the RAM available, far more than the model needs.
	if budgets, err := GetMaxMemory(); err != nil || budgets["cpu"] <= 931328 {
		t.Fatalf("GetMaxMemory: %v, %v", budgets, err)
	}
	if all, err := model.InferAutoDeviceMap(nil, nil, ""); err != nil || len(all) != 1 || all[""] != "cpu" {
		t.Fatalf("InferAutoDeviceMap(nil): %v, %v", all, err)
	}
	if err := model.Materialize(t.TempDir()+"/missing.safetensors", ""); err == nil {
		t.Fatal("materialize from a missing file succeeded")
	}
}

// device_map="auto" on this machine: the small model fits the first device
// with memory (a GPU's or the RAM), so it computes what the full model does.
func TestLoadCheckpointAndDispatchAuto(t *testing.T) {
	acc, err := NewAccelerator(AcceleratorOptions{CPU: true})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	full, err := ModelFromJSON(bigGPT)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	dir := t.TempDir()
	if err := acc.SaveModel(full, dir, ""); err != nil {
		t.Fatal(err)
	}
	logits := func(m *Model) []float32 {
		ids, err := NewTensor([]int64{3, 1, 4, 1, 5, 9, 2, 6}, 1, 8)
		if err != nil {
			t.Fatal(err)
		}
		defer ids.Close()
		if err := m.Train(false); err != nil {
			t.Fatal(err)
		}
		out, err := m.Forward(ids)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		values, err := out.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return values
	}
	want := logits(full)
	for _, strategy := range []string{"auto", "balanced", "balanced_low_0", "sequential"} {
		model, err := ModelFromJSONEmpty(bigGPT)
		if err != nil {
			t.Fatal(err)
		}
		defer model.Close()
		if err := model.LoadCheckpointAndDispatchStrategy(dir, strategy, "", ""); err != nil {
			t.Fatalf("%s: %v", strategy, err)
		}
		got := logits(model)
		if len(got) != len(want) {
			t.Fatalf("%s: %d logits, want %d", strategy, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: logit %d: %v, want %v", strategy, i, got[i], want[i])
			}
		}
	}
	if err := full.LoadCheckpointAndDispatchStrategy(dir, "balanced_low_1", "", ""); err == nil ||
		!strings.Contains(err.Error(), `"balanced_low_1"`) {
		t.Fatalf("balanced_low_1: %v", err)
	}
}

// bigGPT loaded, in eval mode, with 8 input ids and its logits for them; both
// closed when the test ends.
func loadedGPT(t *testing.T) (*Model, *Tensor, []float32) {
	model, err := ModelFromJSON(bigGPT)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	ids := must[*Tensor](t)(NewTensor([]int64{3, 1, 4, 1, 5, 9, 2, 6}, 1, 8))
	t.Cleanup(func() { ids.Close() })
	ok(t, model.Train(false))
	return model, ids, must[[]float32](t)(must[*Tensor](t)(model.Forward(ids)).Float32s())
}

// DiskOffload: the weights go to the folder and to meta; the logits stay.
func TestDiskOffloadComputesTheSame(t *testing.T) {
	model, ids, want := loadedGPT(t)
	dir := t.TempDir()
	if err := model.DiskOffloadTo(dir, "cuda:64"); err == nil || !strings.Contains(err.Error(), `"cuda:64" but this machine`) {
		t.Fatalf("a GPU the machine lacks: %v", err)
	}
	ok(t, model.DiskOffloadTo(dir, "cpu"))
	if _, err := os.Stat(filepath.Join(dir, "offload_index.json")); err != nil {
		t.Fatal(err)
	}
	got := must[[]float32](t)(must[*Tensor](t)(model.Forward(ids)).Float32s())
	if !reflect.DeepEqual(got, want) {
		t.Fatal("the offloaded model computes other logits")
	}
	if err := model.DiskOffload(t.TempDir()); err == nil || !strings.Contains(err.Error(), "has no data") {
		t.Fatalf("offloading twice: %v", err)
	}
}

// DispatchModel of a loaded model over cpu and disk computes the same; disk needs a folder.
func TestDispatchModelComputesTheSame(t *testing.T) {
	model, ids, want := loadedGPT(t)
	placement := map[string]string{"wte": "cpu", "h": "disk", "ln_f": "cpu", "logits": "disk"}
	if err := model.DispatchModel(placement, ""); err == nil || !strings.Contains(err.Error(), "no offload folder") {
		t.Fatalf("disk without a folder: %v", err)
	}
	if placed := must[map[string]string](t)(model.HFDeviceMap()); len(placed) != 0 {
		t.Fatalf("hf_device_map before any dispatch: %v", placed)
	}
	dir := t.TempDir()
	ok(t, model.DispatchModel(placement, dir))
	if placed := must[map[string]string](t)(model.HFDeviceMap()); !reflect.DeepEqual(placed, placement) {
		t.Fatalf("hf_device_map %v, want %v", placed, placement)
	}
	if _, err := os.Stat(filepath.Join(dir, "offload_index.json")); err != nil {
		t.Fatal(err)
	}
	got := must[[]float32](t)(must[*Tensor](t)(model.Forward(ids)).Float32s())
	if !reflect.DeepEqual(got, want) {
		t.Fatal("the dispatched model computes other logits")
	}
}

// CPUOffload onto the CPU computes the same; a device the machine lacks is named.
func TestCPUOffloadComputesTheSame(t *testing.T) {
	model, ids, want := loadedGPT(t)
	if err := model.CPUOffload("tpu:0", false); err == nil || !strings.Contains(err.Error(), `"tpu:0"`) {
		t.Fatalf("tpu:0: %v", err)
	}
	ok(t, model.CPUOffload("cpu", true))
	got := must[[]float32](t)(must[*Tensor](t)(model.Forward(ids)).Float32s())
	if !reflect.DeepEqual(got, want) {
		t.Fatal("the offloaded model computes other logits")
	}
}

// Accelerate 1.15's get_balanced_memory on the torch twin over three 600 kB
// GPUs; budgets are numbers, so no GPU is needed.
func TestBalancedMemoryMatchesAccelerate(t *testing.T) {
	model, err := ModelFromJSONEmpty(bigGPT)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	budgets := map[string]string{"0": "600000", "1": "600000", "2": "600000", "cpu": "1000000000"}
	for lowZero, want := range map[bool]map[string]int64{
		false: {"cuda:0": 560362, "cuda:1": 560362, "cuda:2": 600000, "cpu": 1000000000},
		true:  {"cuda:0": 0, "cuda:1": 600000, "cuda:2": 600000, "cpu": 1000000000},
	} {
		got, err := model.BalancedMemory(budgets, []string{"TransformerEncoderLayer"}, "", lowZero)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("lowZero %v: %v, want %v", lowZero, got, want)
		}
	}
}

func TestShardingOptionsAndHeldBytes(t *testing.T) {
	_, err := NewAccelerator(AcceleratorOptions{CPU: true, ShardingStrategy: "SHARD_GRAD_OP",
		FSDPActivationCheckpointing: Ptr(true)})
	if err == nil || !strings.Contains(err.Error(), "fsdp_activation_checkpointing") {
		t.Fatalf("checkpointing with SHARD_GRAD_OP: %v", err)
	}
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, FSDPStateDictType: "LOCAL_STATE_DICT"})
	if err == nil || !strings.Contains(err.Error(), `fsdp_state_dict_type "LOCAL_STATE_DICT" is not`) {
		t.Fatalf("an unknown state dict type: %v", err)
	}
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, FSDPTransformerLayerClsToWrap: []string{"GPT2Block", ""}})
	if err == nil || !strings.Contains(err.Error(), "fsdp_transformer_layer_cls_to_wrap") {
		t.Fatalf("an empty wrap class: %v", err)
	}
	byClass, err := NewAccelerator(AcceleratorOptions{CPU: true, ShardingStrategy: "FULL_SHARD",
		FSDPTransformerLayerClsToWrap: []string{"GPT2Block", "transformer.h.0"},
		FSDPBackwardPrefetch:          Ptr(false), FSDPForwardPrefetch: Ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	offload, err := byClass.CPUOffload()
	if err != nil || offload {
		t.Fatalf("CPUOffload without the option: %v %v", offload, err)
	}
	byClass.Close()
	// CPU offload: one process then shards over a world of one; NO_SHARD has nothing to offload.
	offloaded, err := NewAccelerator(AcceleratorOptions{CPU: true, ShardingStrategy: "SHARD_GRAD_OP", CPUOffload: Ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	if offload, err = offloaded.CPUOffload(); err != nil || !offload {
		t.Fatalf("CPUOffload with the option: %v %v", offload, err)
	}
	offloaded.Close()
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, ShardingStrategy: "NO_SHARD", CPUOffload: Ptr(true)})
	if err == nil || !strings.Contains(err.Error(), "sharding_strategy is NO_SHARD") {
		t.Fatalf("cpu_offload with NO_SHARD: %v", err)
	}
	_, err = NewAccelerator(AcceleratorOptions{CPU: true, FSDPMinNumParams: Ptr(int64(-5))})
	if err == nil || !strings.Contains(err.Error(), "-5") {
		t.Fatalf("fsdp_min_num_params -5: %v", err)
	}
	acc, err := NewAccelerator(AcceleratorOptions{CPU: true, ShardingStrategy: "FULL_SHARD",
		FSDPMinNumParams: Ptr(int64(1000)), FSDPActivationCheckpointing: Ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	model, err := ModelFromJSON(`[{"type": "Linear", "in_features": 4, "out_features": 3}]`)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	if err := acc.PrepareModel(model); err != nil {
		t.Fatal(err)
	}
	held, err := acc.HeldBytes(model, nil)
	if err != nil || held != (HeldBytes{Parameters: 4 * 15}) {
		t.Fatalf("held bytes %+v, %v", held, err)
	}
}
