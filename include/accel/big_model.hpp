// libaccel C++ API: big-model tools after Accelerate's big_modeling — models
// built without memory (init_empty_weights), their per-module sizes, and
// device maps (infer_auto_device_map, check_device_map). See docs/big-models.md.
//
// A device map is an ordered list of (module, device): module is a dotted name
// from named_modules(), named_parameters() or named_buffers() ("" is the whole
// model); device is "cuda:N", "cpu" or "disk". None of these functions is
// collective.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "accel/model.hpp"

namespace accel {

using DeviceMap = std::vector<std::pair<std::string, std::string>>;

// accel_model_from_json's model with every parameter and buffer on the meta
// device: shapes and dtypes only, so a spec larger than RAM builds. Each layer
// is moved to meta as soon as it is built, so building holds at most one
// layer's weights. Forward is refused until the weights are loaded. Throws
// what Model::from_json throws.
Model model_from_json_empty(const std::string& spec);

// Bytes of each module's parameters and buffers (Accelerate's
// compute_module_sizes): keys are "" (the model), every module prefix and every
// tensor name. dtype: sizes as if cast to it (never larger than the tensor's
// own element size; integer and bool tensors keep theirs, as Accelerate 1.x
// counts them). Works on empty (meta) models. Throws
// Unsupported for a TorchScript model.
std::map<std::string, int64_t> compute_module_sizes(const Model& model, c10::optional<c10::ScalarType> dtype = {});

// A budget in bytes per device, as Accelerate's max_memory: device names
// "cuda:N" (or "N"), "cpu", "disk"; sizes as JSON numbers or strings "50MB",
// "1GiB", "500KB" (decimal kB/MB/GB, binary KiB/MiB/GiB). Devices are ordered
// GPUs by index, then cpu, then disk, whatever the order given.
// Throws InvalidArgument naming an unknown device or a bad size.
std::vector<std::pair<std::string, int64_t>> parse_max_memory(const std::string& json_object);

// Accelerate 0.22's infer_auto_device_map: the model's top-level parameters,
// children and buffers in order fill the devices in order (GPUs, then cpu,
// then disk, which is always appended); on the first GPU and the cpu the
// largest unsplittable layer's size is held back (it must fit while an
// offloaded layer runs); a module that does not fit is split into its
// children unless it has none or its class ("Linear", "TransformerEncoderLayer",
// the C++ class without namespace and "Impl") is in no_split_module_classes;
// once a device is left it is not returned to. Modules whose children all went
// to one device are merged back (clean_device_map).
// Throws InvalidArgument naming the device when a cpu or GPU budget is smaller
// than the largest unsplittable module (Accelerate would place everything on
// disk, but that layer could never be brought into memory to run).
DeviceMap infer_auto_device_map(const Model& model, const std::vector<std::pair<std::string, int64_t>>& max_memory,
                                const std::vector<std::string>& no_split_module_classes = {},
                                c10::optional<c10::ScalarType> dtype = {});

// Accelerate's get_max_memory(): every GPU's free bytes now ("cuda:N"), then
// the memory the system has available ("cpu"), in infer_auto_device_map's order.
std::vector<std::pair<std::string, int64_t>> available_memory();

// Accelerate 1.x's get_balanced_memory: max_memory with the GPUs' budgets lowered
// so that infer_auto_device_map spreads the model evenly over them. Each GPU but
// the last (by index) gets at most total / GPUs plus a margin: 1.25 times the
// larger of the biggest no-split block and the mean size of the final modules;
// the last keeps its budget. low_zero (device_map="balanced_low_0") shares the
// model over the other GPUs and leaves GPU 0 only what they cannot hold. With
// one GPU, low_zero is ignored, and when the budgets were read from the devices
// (max_memory_given false) that GPU keeps 10% free. Without a GPU (or none with
// room) max_memory is returned unchanged. Devices are "cuda:N", "cpu", "disk"
// (parse_max_memory's form). Throws Unsupported for a TorchScript model.
std::vector<std::pair<std::string, int64_t>> balanced_memory(
    const Model& model, std::vector<std::pair<std::string, int64_t>> max_memory,
    const std::vector<std::string>& no_split_module_classes = {}, c10::optional<c10::ScalarType> dtype = {},
    bool low_zero = false, bool max_memory_given = true);

// Accelerate's device_map="auto" (or "balanced", "balanced_low_0", "sequential"):
// infer_auto_device_map over available_memory(), balanced over the GPUs as
// balanced_memory does unless strategy is "sequential" (which fills them in order).
// Throws InvalidArgument naming another strategy.
DeviceMap auto_device_map(const Model& model, const std::vector<std::string>& no_split_module_classes,
                          c10::optional<c10::ScalarType> dtype, const std::string& strategy);
// auto_device_map with strategy "auto".
DeviceMap auto_device_map(const Model& model, const std::vector<std::string>& no_split_module_classes = {},
                          c10::optional<c10::ScalarType> dtype = {});

// Accelerate's check_device_map, stricter: every key names a module, parameter
// or buffer of the model, no key lies inside another key, every device is
// "cpu", "disk" or "cuda:N" with N < the number of GPUs, and every tensor of
// state_dict() is covered. Throws InvalidArgument naming the first bad key,
// device or uncovered tensor.
void verify_device_map(const Model& model, const DeviceMap& device_map);

// Materialises a model, e.g. an empty one (Accelerate's
// load_checkpoint_in_model after init_empty_weights): fills every parameter
// and buffer (meta or not; each gets new CPU storage) from checkpoint — a .safetensors file, a sharded
// model.safetensors.index.json, or a directory holding either — memory-mapped
// and copied tensor by tensor (peak: the model plus one tensor). dtype casts
// floating tensors (else the model's dtype is kept). Everything is checked
// before the first tensor is replaced, so a throw changes nothing: IO naming
// the path (missing, not safetensors, bad index), InvalidArgument naming the
// tensor the checkpoint lacks or whose shape or kind differs. Not collective.
void materialize(const Model& model, const std::string& checkpoint, c10::optional<c10::ScalarType> dtype = {});

// Accelerate's load_checkpoint_and_dispatch: materialize, but each tensor goes
// where device_map (checked with verify_device_map first) puts it: "cpu" into
// RAM, "cuda:N" onto that GPU, "disk" stays on meta and is read in (mmap + copy)
// just before its top-level graph node runs and returned to meta right after
// (a JSON graph's node hook; a Sequential node's layers come in together).
// Disk tensors whose checkpoint bytes are safetensors of the final dtype are
// read from the checkpoint; others are written cast to
// offload_folder/<name>.safetensors. offload_folder/offload_index.json lists
// every disk tensor (dtype, shape, safetensors_file, weight_name). The
// checkpoint files stay mapped while the model lives.
// Everything is checked before a tensor changes or a file is written, so a
// throw leaves the model as it was: InvalidArgument naming a bad map key or
// device, an uncovered tensor, a tensor the checkpoint lacks or whose shape or
// kind differs, or disk without an offload folder; IO naming an offload folder
// that cannot be created or written, or a bad checkpoint path; Unsupported for
// disk on a model that is not a JSON graph, or a TorchScript model. A tied
// weight (a Linear's "weight": "wte.weight") is brought in only with its own
// node, so keep its owner off disk. An empty device_map is Accelerate's None:
// everything on the CPU, and no hf_device_map. Not collective.
void load_checkpoint_and_dispatch(const Model& model, const std::string& checkpoint, const DeviceMap& device_map,
                                  const std::string& offload_folder = "", c10::optional<c10::ScalarType> dtype = {});

// Accelerate's dispatch_model: a loaded model's tensors go where device_map
// (checked with verify_device_map) puts them: "cpu" and "cuda:N" tensors are
// moved there and a JSON graph's nodes run as load_checkpoint_and_dispatch
// runs them. With "disk" in the map the model's weights are written to
// offload_dir/model.safetensors and dispatched from it as a checkpoint
// (disk tensors on meta, read in around their node's forward). Throws
// InvalidArgument naming a bad map key or device, an uncovered tensor, a
// tensor on meta, or disk without an offload_dir; IO naming an offload_dir
// that cannot be created or written; Unsupported for disk, or a GPU beside
// another device, on a model that is not a JSON graph, and for a TorchScript
// model. Every check and every copy comes before the first tensor changes.
// Not collective.
void dispatch_model(const Model& model, const DeviceMap& device_map, const std::string& offload_dir = "");

// transformers' and Accelerate's model.hf_device_map: the device map
// dispatch_model or load_checkpoint_and_dispatch last placed the model with
// (an "auto" or "balanced" map as computed), in its order; empty when neither
// placed it. Accelerate's verify_device_map(model) is its size above one.
DeviceMap hf_device_map(const Model& model);

// Accelerate's disk_offload: writes the model's weights (as they are) to
// offload_dir/model.safetensors; every parameter and buffer goes to the meta
// device and is read back around its node's forward, on the CPU. A JSON graph
// is dispatched to "disk" from the file (load_checkpoint_and_dispatch with
// {"": "disk"}; offload_dir/offload_index.json lists the tensors). A
// TorchScript model that has not run a forward has the graph calls of each
// submodule holding tensors of its own rewritten to bring them in around the
// call (src/model/script_offload.hpp); the root module's own tensors stay.
// Throws Unsupported for a model that is neither, a TorchScript model that
// already ran a forward, or a submodule inlined at export or whose call takes
// or returns more than tensors (all checked before anything is written),
// InvalidArgument naming a tensor already on meta or an empty offload_dir, IO
// naming a folder or file that cannot be written. Not collective.
void disk_offload(const Model& model, const std::string& offload_dir);
// The same, with each node brought in and run on execution_device ("cpu",
// "cuda:N" or "N"; "" is "cpu"): Accelerate's disk_offload(model, offload_dir,
// execution_device). Outputs come back to the inputs' device. A GPU needs a
// JSON graph model (Unsupported for a TorchScript model); InvalidArgument
// names an unknown device or a GPU this machine lacks.
void disk_offload(const Model& model, const std::string& offload_dir, const std::string& execution_device);

// Accelerate's cpu_offload: every parameter (and buffer, with offload_buffers)
// moves to host memory, pinned when the execution device is a GPU; each
// top-level graph node's tensors are copied to execution_device just before
// the node runs and dropped there right after, so the GPU holds one node's
// weights at a time. Nodes run on execution_device; outputs come back to the
// inputs' device. Buffers not offloaded move to execution_device and stay.
// execution_device: "cpu", "cuda:N" (or "N"); "" takes the device of the
// model's first parameter (Accelerate's default). On "cpu" the model simply
// runs from host memory. Tied weights are brought in with every node that
// uses them. For inference: a backward through a node whose weights were
// swapped back is not supported. Throws Unsupported for a model that is not a
// JSON graph, InvalidArgument naming an unknown or absent execution device or
// a tensor on meta; all checked before a tensor moves. Not collective.
void cpu_offload(const Model& model, const std::string& execution_device = "", bool offload_buffers = false);

// A device map as a JSON object string (in order) and back; from_json throws
// InvalidArgument for text that is not an object of strings.
std::string device_map_to_json(const DeviceMap& device_map);
DeviceMap device_map_from_json(const std::string& json_object);

// A device map as callers of load_checkpoint_and_dispatch write it: "" for
// Accelerate's None (an empty map: everything on the CPU, no hf_device_map),
// the JSON strings "\"auto\"", "\"balanced\"", "\"balanced_low_0\""
// and "\"sequential\"" for auto_device_map(model, no_split_module_classes, dtype,
// strategy) (Accelerate's device_map strings), else a JSON object
// (device_map_from_json). Throws InvalidArgument naming another JSON string,
// or an empty object {} (which would read as None).
DeviceMap resolve_device_map(const Model& model, const std::string& text,
                             const std::vector<std::string>& no_split_module_classes = {},
                             c10::optional<c10::ScalarType> dtype = {});

}  // namespace accel
