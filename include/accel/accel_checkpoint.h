/*
 * libaccel C ABI: checkpoints and model files (included by accel/accel.h).
 * Layout and formats: docs/checkpointing.md.
 */
#ifndef ACCEL_ACCEL_CHECKPOINT_H
#define ACCEL_ACCEL_CHECKPOINT_H

#include "accel/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes everything needed to continue training into dir: prepared models
   (model.safetensors, model_1...), optimizers (optimizer.bin...), schedulers
   (scheduler.bin...), the fp16 loss scaler (scaler.pt), every process's RNG
   state and dataloader positions (random_states_{rank}.safetensors), registered
   objects (custom_checkpoint_{i}.bin) and a manifest with every file's size
   and XXH3 checksum. optimizer.bin is PyTorch's optimizer.state_dict() as a
   pickle (torch.load reads it). The directory appears only once complete: a
   save interrupted at any moment leaves the previous checkpoint intact. dir
   NULL or "": project_dir/checkpoints/checkpoint_{i} under
   automatic_checkpoint_naming; the oldest beyond total_limit are removed after
   the new one is committed, never before. Under automatic naming an existing
   checkpoint_{i} is never replaced: INVALID_ARGUMENT naming it (Accelerate's
   ValueError; set the iteration with accel_accelerator_set_save_iteration),
   before any hook runs or file is written. accel_accelerator_last_checkpoint_dir
   then gives the directory written.
   Collective. Errors: STATE (no dir and no automatic naming), INVALID_ARGUMENT
   (the automatic directory exists), IO (named path). */
ACCEL_API accel_status accel_accelerator_save_state(accel_accelerator* acc, const char* dir);
/* accel_accelerator_save_state with Accelerate's safe_serialization:
   nonzero writes each model as model.safetensors (model_{i}.safetensors), as
   accel_accelerator_save_state does; 0 writes pytorch_model.bin
   (pytorch_model_{i}.bin), a torch.save zip pickle of the state dict (data
   only), which Accelerate 0.22's load_state reads (it knows no safetensors).
   load_state reads either; the manifest covers the file. Collective; errors
   and ownership as accel_accelerator_save_state. */
ACCEL_API accel_status accel_accelerator_save_state_ext(accel_accelerator* acc, const char* dir,
                                                        int safe_serialization);
/* *out = the directory the last successful save_state of acc wrote (dir as
   given, or the automatic checkpoint_{i}); "" before any. The string is owned
   by acc and valid until its next save_state or accel_accelerator_free. Not
   collective. */
ACCEL_API accel_status accel_accelerator_last_checkpoint_dir(const accel_accelerator* acc, const char** out);
/* Restores a checkpoint written by save_state; dir NULL or "": the newest
   automatic checkpoint (leftovers of interrupted saves are removed and never
   chosen). Every file is read and checked (presence, sizes and checksums,
   format and field types, tensor names, shapes and dtypes, generator states,
   counts of prepared objects, process count) before anything is applied; on
   any error the run is left exactly as it was. Loading runs no code from the
   checkpoint (except a format-1 optimizer.bin, a LibTorch archive: trusted
   sources only). Only regular files are read. The next dataloader pass
   continues mid-epoch where the saved one stood. Collective. Errors: IO
   (missing, partial, corrupt or malformed file, named with the field),
   INVALID_ARGUMENT (a checkpoint of a different setup).
   A directory Python Accelerate's save_state wrote (no manifest.json;
   pytorch_model.bin or model.safetensors, optimizer.bin, random_states_N.pkl)
   loads too, read as data only (a pickle naming any global outside a state
   dict's vocabulary is an IO error naming the file and the global): models,
   optimizers (PyTorch's state_dict mapped onto ours), schedulers, scaler.pt
   and custom_checkpoint_{i}.pkl; its random_states_N.pkl files must number the
   running processes, and this process's restores the torch generators (NumPy's
   state in it is read as inert data, never used; Python's is skipped) and the
   accumulation step where saved; dataloader positions are not restored (see
   docs/checkpointing.md). */
ACCEL_API accel_status accel_accelerator_load_state(accel_accelerator* acc, const char* dir);
/* The number the next automatic checkpoint gets. */
ACCEL_API accel_status accel_accelerator_save_iteration(const accel_accelerator* acc, int64_t* out);
/* Sets the number the next automatic checkpoint gets (Accelerate's
   project_configuration.iteration = n), e.g. to continue a numbering after a
   restart. Not collective: every process should set the same value.
   Errors: INVALID_ARGUMENT (iteration < 0, named). */
ACCEL_API accel_status accel_accelerator_set_save_iteration(accel_accelerator* acc, int64_t iteration);

/* Writes model in Hugging Face's layout into dir: model.safetensors, or shards
   model-0000i-of-0000N.safetensors plus model.safetensors.index.json
   (metadata.total_size, weight_map) when larger than max_shard_size ("5GB",
   "200MB", "1GiB", bytes; NULL: "10GB"; read as Accelerate reads them, so
   "5Gb" with a lowercase b is gigabits). As Hugging Face's shard_checkpoint:
   tensors in PyTorch's state_dict order fill the current shard while the next
   fits (one larger than the limit gets its own); the index's keys are sorted.
   Only the main process writes.
   safe_serialization = 0 writes torch.save zip pickles (data only) with
   Hugging Face's names instead: pytorch_model.bin, or shards
   pytorch_model-0000i-of-0000N.bin plus pytorch_model.bin.index.json.
   Collective. */
ACCEL_API accel_status accel_accelerator_save_model(accel_accelerator* acc, const accel_model* model, const char* dir,
                                                    const char* max_shard_size, int safe_serialization);
/* Loads a .safetensors file, a PyTorch pickle (path ending in .bin, .pt or
   .pth: Hugging Face's pytorch_model.bin, torch.save's zip format, read as data
   only: any other global than a state dict's is an IO error naming it), or a
   sharded index of either (…index.json) into model.
   *missing / *unexpected (either may be NULL) get the number of model tensors
   the file lacks and of file tensors the model lacks; with strict != 0 either
   is an INVALID_ARGUMENT error naming them. Shapes must match; floating dtypes
   convert, but integer, boolean and floating types do not mix (INVALID_ARGUMENT).
   An index's shard names must be files in its own directory (no paths, no
   symlinks leading out); a tensor in two shards is refused. Regular files
   only. Every file is validated before any parameter changes. A model split
   for tensor parallelism reads the whole tensors (shapes as unsplit) and
   keeps this rank's slices; collective only under FULL_SHARD/HYBRID_SHARD. */
ACCEL_API accel_status accel_accelerator_load_checkpoint_in_model(accel_accelerator* acc, accel_model* model,
                                                                  const char* path, int strict, int64_t* missing,
                                                                  int64_t* unexpected);
/* Accelerate's get_state_dict: the model's parameters, then its buffers, as
   CPU copies in the model's order. With names and tensors NULL, only *count
   is set (the number of entries). Otherwise each non-NULL array, of capacity
   entries, receives the first *count entries: names[i] owned by acc and valid
   until its next get_state_dict or its free; tensors[i] new handles the
   caller frees with accel_tensor_free. A capacity below the count is
   INVALID_ARGUMENT naming both, and nothing is written. Not collective,
   except under FULL_SHARD and HYBRID_SHARD, and with tensor parallelism
   (docs/parallelism.md): there every call all-gathers the parameters (whole
   tensors come back), so every process makes it. */
ACCEL_API accel_status accel_accelerator_get_state_dict(accel_accelerator* acc, const accel_model* model,
                                                        const char** names, accel_tensor** tensors, size_t capacity,
                                                        size_t* count);
/* Accelerate's accelerator.save: count named tensors to a safetensors file,
   written by the main process only. Borrows everything. */
ACCEL_API accel_status accel_accelerator_save_tensors(accel_accelerator* acc, const char* const* names,
                                                      const accel_tensor* const* tensors, size_t count,
                                                      const char* path);

/* Objects of the caller's saved with every checkpoint. */
typedef struct accel_bytes_writer accel_bytes_writer;
/* Appends size bytes to what a save callback produces. The writer is valid
   only during the save callback it was passed to; any other pointer (NULL, a
   writer kept past its callback) is INVALID_ARGUMENT. */
ACCEL_API accel_status accel_bytes_write(accel_bytes_writer* writer, const void* data, size_t size);

typedef struct accel_checkpoint_callbacks {
  uint32_t struct_size;
  /* Writes the object's state with accel_bytes_write. Required. */
  accel_status (*save)(void* user, accel_bytes_writer* writer);
  /* Restores it from data (borrowed for the call). Required. */
  accel_status (*load)(void* user, const void* data, size_t size);
  /* Optional: called once when the accelerator no longer needs user; never
     when the registration fails. */
  void (*release)(void* user);
} accel_checkpoint_callbacks;

#define ACCEL_CHECKPOINT_CALLBACKS_INIT \
  { (uint32_t)sizeof(accel_checkpoint_callbacks), NULL, NULL, NULL }
ACCEL_API void accel_checkpoint_callbacks_init(accel_checkpoint_callbacks* callbacks);
/* Registers an object: saved as custom_checkpoint_{i}.bin (i in registration
   order) by the main process, restored by load_state on every process. A
   failing callback fails save_state/load_state with its status and message
   (accel_set_error). */
ACCEL_API accel_status accel_accelerator_register_for_checkpointing(accel_accelerator* acc,
                                                                    const accel_checkpoint_callbacks* callbacks,
                                                                    void* user);

/* Hooks run (on every process) with the checkpoint directory before
   save_state writes / load_state reads; a non-OK status aborts the call.
   *id identifies the hook for accel_accelerator_remove_hook; release(user),
   if not NULL, runs when the hook is removed or the accelerator freed (never
   when the registration fails). */
typedef accel_status (*accel_state_hook)(void* user, const char* dir);
ACCEL_API accel_status accel_accelerator_register_save_state_pre_hook(accel_accelerator* acc, accel_state_hook hook,
                                                                      void* user, void (*release)(void*), int64_t* id);
ACCEL_API accel_status accel_accelerator_register_load_state_pre_hook(accel_accelerator* acc, accel_state_hook hook,
                                                                      void* user, void (*release)(void*), int64_t* id);
/* Errors: INVALID_ARGUMENT for an id that names no registered hook. */
ACCEL_API accel_status accel_accelerator_remove_hook(accel_accelerator* acc, int64_t id);

#ifdef __cplusplus
}
#endif

#endif
