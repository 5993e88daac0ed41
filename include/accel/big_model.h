/*
 * libaccel C ABI: big-model tools (included by accel/accel.h) — Accelerate's
 * init_empty_weights, compute_module_sizes, infer_auto_device_map and
 * check_device_map. See docs/big-models.md.
 *
 * A device map is a JSON object of module name to device, in order:
 * {"wte": "cpu", "h.0": "cpu", "h.1": "disk", ...}. Names are dotted module,
 * parameter or buffer names ("" is the whole model); devices are "cuda:N",
 * "cpu" or "disk". No function here is collective; a model may be used from
 * one thread at a time. Strings returned through char** are new, and the caller
 * frees them with accel_string_free.
 */
#ifndef ACCEL_BIG_MODEL_H
#define ACCEL_BIG_MODEL_H

#include "accel/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Frees a string returned by a function of this header; NULL does nothing. */
ACCEL_API void accel_string_free(char* text);

/* accel_model_from_json with every parameter and buffer on the meta device:
   shapes and dtypes only, no memory (each layer is moved to meta as soon as it
   is built, so building holds at most one layer's weights). Sizes and device
   maps work on it; forward fails (INVALID_ARGUMENT) until weights are loaded.
   Errors: as accel_model_from_json. Returns a new handle the caller frees with
   accel_model_free. */
ACCEL_API accel_status accel_model_from_json_empty(const char* spec, accel_model** out);

/* accel_model_from_torchscript_outputs with every parameter on the meta
   device, its bytes never read from the file (Accelerate's init_empty_weights
   for a TorchScript model: peak memory is the buffers and the code, not the
   weights). Buffers are read from the file itself, since a checkpoint need not
   hold them (transformers' non-persistent ones, such as GPT-2's causal mask,
   are in no model.safetensors). Tied parameters stay one tensor. Fill it with
   accel_model_materialize or accel_load_checkpoint_and_dispatch; forward fails
   until then. output_names: count names (NULL when count is 0: the model's
   own). Errors: as accel_model_from_torchscript_outputs; IO naming the path
   for a data.pkl or data/ record stored compressed, or a data.pkl holding
   anything but module objects and their data. New handle. */
ACCEL_API accel_status accel_model_from_torchscript_empty(const char* path, const char* const* output_names,
                                                          size_t count, accel_model** out);

/* Gives every parameter and buffer of model (meta or not) new CPU storage
   filled from checkpoint: a .safetensors file, a sharded
   model.safetensors.index.json, or a directory holding either; memory-mapped
   and copied tensor by tensor (peak: the model plus one tensor). dtype as
   accel_model_module_sizes: casts floating tensors. Everything is checked
   before the first tensor changes, so on error the model is as it was.
   Errors: IO naming the path (missing, not safetensors, bad index);
   INVALID_ARGUMENT naming the tensor the checkpoint lacks or whose shape or
   kind (floating or not) differs, or an unknown dtype. A TorchScript model's
   tensors are found under any of their names (a tied one once); a buffer the
   checkpoint lacks keeps its values. Not collective.
   (accel_accelerator_load_checkpoint_in_model copies into existing storage
   and cannot fill meta tensors.) */
ACCEL_API accel_status accel_model_materialize(accel_model* model, const char* checkpoint, const char* dtype);

/* Accelerate's load_checkpoint_and_dispatch: accel_model_materialize, but each
   tensor goes where device_map (a JSON object, checked as
   accel_verify_device_map; NULL or "" is Accelerate's None: everything on
   the CPU, no accel_model_hf_device_map; an empty object {} is
   INVALID_ARGUMENT; the JSON strings
   "\"auto\"", "\"balanced\"", "\"balanced_low_0\"" and "\"sequential\"" are
   Accelerate's device_map strings: accel_infer_auto_device_map over every
   GPU's free memory and the memory the system has available, balanced over
   the GPUs as accel_balanced_memory does, but for "sequential") puts it: "cpu" into
   RAM, "cuda:N" onto that GPU, "disk" left on the meta device and read in
   (mmap + copy) just before its top-level node of a JSON graph model runs,
   released right after. Disk tensors already stored as safetensors of the
   final dtype are read from the checkpoint; others are written cast to
   offload_folder/<name>.safetensors; offload_folder/offload_index.json lists
   them all. offload_folder may be NULL when nothing goes to disk. dtype as
   accel_model_materialize. Everything is checked before a tensor changes or a
   file is written, so on error the model is as it was. Errors:
   INVALID_ARGUMENT naming a bad map key or device, another JSON string than
   those four, a budget too small for the largest layer, an uncovered tensor, a
   tensor the checkpoint lacks or whose shape or kind differs, or disk without
   an offload folder; IO naming the checkpoint path or an offload folder that
   cannot be created or written; UNSUPPORTED for disk on a model that is not a
   JSON graph or a TorchScript model. A tied weight is brought in with its own
   node only: keep its owner off disk. The checkpoint stays mapped (not read)
   while the model lives. Not collective.
   A TorchScript model (accel_model_from_torchscript_empty's, or one that has
   not run a forward) takes maps of "cpu" and "disk" only (UNSUPPORTED naming a
   GPU: move it after loading): each submodule's "disk" tensors stay on meta and
   are read from the checkpoint (cast to dtype) around each of its calls; the
   root module's own tensors stay in memory; offload_folder is not used. A
   tensor is found under any of its names; a buffer the checkpoint lacks keeps
   its values; UNSUPPORTED naming a submodule whose calls cannot be hooked. */
ACCEL_API accel_status accel_load_checkpoint_and_dispatch(accel_model* model, const char* checkpoint,
                                                          const char* device_map, const char* offload_folder,
                                                          const char* dtype);

/* Accelerate's dispatch_model: the loaded model's tensors go where device_map
   (a JSON object, checked as accel_verify_device_map) puts them: "cpu" and
   "cuda:N" tensors move there, and a JSON graph's nodes run where their
   weights are, as after accel_load_checkpoint_and_dispatch. With "disk" in
   the map the weights are written to offload_dir/model.safetensors and
   dispatched from it (disk tensors on meta, read in around their node's
   forward; offload_dir may be NULL otherwise). Every check and copy comes
   before the first tensor changes. Errors: INVALID_ARGUMENT naming a bad map
   key or device, an uncovered tensor, a tensor on meta, or disk without an
   offload_dir; IO naming an offload_dir that cannot be created or written;
   UNSUPPORTED for disk, or a GPU beside another device, on a model that is not
   a JSON graph, and for a TorchScript model. Not collective. */
ACCEL_API accel_status accel_dispatch_model(accel_model* model, const char* device_map, const char* offload_dir);

/* transformers' and Accelerate's model.hf_device_map: the device map
   accel_dispatch_model or accel_load_checkpoint_and_dispatch last placed the
   model with (an "auto" or "balanced" map as computed), a JSON object of
   module name to device in the map's order; "{}" when neither placed it.
   Accelerate's verify_device_map(model) is whether it has more than one entry.
   *out: new string, free with accel_string_free. Errors: INVALID_ARGUMENT
   (NULL or freed model, NULL out). Not collective. */
ACCEL_API accel_status accel_model_hf_device_map(const accel_model* model, char** out);

/* Accelerate's disk_offload: writes the loaded model's weights to
   offload_dir/model.safetensors and places the whole model on "disk" from it:
   every tensor goes to the meta device and is read back around its node's
   forward, on the CPU. A JSON graph is dispatched {"": "disk"}
   (accel_load_checkpoint_and_dispatch; offload_dir/offload_index.json lists
   the tensors). A TorchScript model that has not run a forward has the calls
   of each submodule holding tensors rewritten to bring them in around each
   call (the root module's own tensors stay). Errors: UNSUPPORTED for a model
   that is neither, a TorchScript model that already ran a forward, or one
   whose submodule is inlined or takes more than tensors, named (all before
   anything is written); INVALID_ARGUMENT (NULL or empty arguments, a tensor
   already on meta, named); IO naming what cannot be written. Not collective. */
ACCEL_API accel_status accel_disk_offload(accel_model* model, const char* offload_dir);

/* accel_disk_offload with each node brought in and run on execution_device
   ("cpu", "cuda:N" or "N"; NULL or "" is "cpu"): Accelerate's
   disk_offload(model, offload_dir, execution_device). Outputs come back to the
   inputs' device. Errors: as accel_disk_offload; INVALID_ARGUMENT naming an
   unknown device or a GPU this machine lacks; UNSUPPORTED for a GPU with a
   TorchScript model (its offloaded submodules run on the CPU). */
ACCEL_API accel_status accel_disk_offload_on_device(accel_model* model, const char* offload_dir,
                                                    const char* execution_device);

/* Accelerate's cpu_offload: every parameter (and buffer when offload_buffers
   is nonzero) moves to host memory, pinned when the execution device is a
   GPU; each top-level node of the JSON graph gets its tensors copied to
   execution_device just before it runs and dropped there right after, so the
   GPU holds one node's weights at a time. Nodes run on execution_device and
   outputs come back to the inputs' device; buffers not offloaded move to
   execution_device and stay. execution_device: "cpu", "cuda:N" (or "N");
   NULL or "" takes the device of the model's first parameter (Accelerate's
   default); on "cpu" the model simply runs from host memory. Tied weights come
   in with every node that uses them. For inference (no backward through
   offloaded nodes). Everything is checked before a tensor moves. Errors:
   UNSUPPORTED for a model that is not a JSON graph; INVALID_ARGUMENT naming an
   unknown execution device, a GPU this machine lacks, or a tensor on the meta
   device. Not collective. */
ACCEL_API accel_status accel_cpu_offload(accel_model* model, const char* execution_device, int offload_buffers);

/* Bytes of each module's parameters and buffers (compute_module_sizes) as a
   JSON object {"": total, "h": ..., "h.0": ..., "h.0.weight": ...}. dtype: NULL
   or "" for the tensors' own dtypes, else "float32", "float16", "bfloat16",
   "int8"... (floating tensors' sizes as if cast, never larger than their own;
   integer and bool tensors keep theirs, as in Accelerate 1.x). Errors:
   INVALID_ARGUMENT (NULL model/out, unknown dtype), UNSUPPORTED (TorchScript
   model). *out: new string, free with accel_string_free; untouched on failure. */
ACCEL_API accel_status accel_model_module_sizes(const accel_model* model, const char* dtype, char** out);

/* Accelerate 0.22's infer_auto_device_map (rules in include/accel/big_model.hpp
   and docs/big-models.md). max_memory: JSON object of device to budget, bytes
   or sizes such as "50MB"/"1GiB": {"cpu": "50MB"}; disk is always added last;
   NULL: accel_available_memory (Accelerate's max_memory=None).
   no_split: count class names ("TransformerEncoderLayer") never split (NULL
   when count is 0). dtype as accel_model_module_sizes. Errors:
   INVALID_ARGUMENT naming the bad device or size, or the device whose budget is
   smaller than the largest unsplittable module (naming the module);
   UNSUPPORTED (TorchScript). *out: new JSON string, free with accel_string_free. */
ACCEL_API accel_status accel_infer_auto_device_map(const accel_model* model, const char* max_memory,
                                                   const char* const* no_split, size_t count, const char* dtype,
                                                   char** out);

/* Accelerate 1.x's get_balanced_memory: max_memory (as accel_infer_auto_device_map
   takes it; NULL: accel_available_memory, of which a lone GPU then keeps 10%
   free) with each GPU's budget but the last lowered to an even share of the
   model plus a margin (1.25 x the larger of the biggest no-split block and the
   mean size of the final modules), so that accel_infer_auto_device_map spreads
   the model over the GPUs. low_zero nonzero (device_map="balanced_low_0")
   leaves GPU 0 only what the other GPUs cannot hold. Without a GPU with room,
   the budgets come back unchanged. no_split, count and dtype as
   accel_infer_auto_device_map. *out: new JSON object in infer_auto_device_map's
   order ({"cuda:0": bytes, ..., "cpu": bytes}), free with accel_string_free.
   Errors: INVALID_ARGUMENT naming a bad device or size; UNSUPPORTED
   (TorchScript). Not collective. */
ACCEL_API accel_status accel_balanced_memory(const accel_model* model, const char* max_memory,
                                             const char* const* no_split, size_t count, const char* dtype, int low_zero,
                                             char** out);

/* Accelerate's get_max_memory(): the bytes each device can take now, as a
   JSON object in infer_auto_device_map's order: {"cuda:0": free bytes, ...,
   "cpu": the memory the system has available}. *out: new string, free with
   accel_string_free. Errors: INVALID_ARGUMENT (NULL out). Not collective. */
ACCEL_API accel_status accel_available_memory(char** out);

/* Checks a user's device map (JSON object string) against the model: every key
   names a module, parameter or buffer, no key lies inside another, devices are
   "cpu", "disk" or an existing "cuda:N", and every tensor is covered. Errors:
   INVALID_ARGUMENT naming the first bad key, device or uncovered tensor;
   UNSUPPORTED (TorchScript). */
ACCEL_API accel_status accel_verify_device_map(const accel_model* model, const char* device_map);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_BIG_MODEL_H */
