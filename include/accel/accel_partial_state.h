/* libaccel C ABI: Accelerate's PartialState — this process's place in the
 * launch (index, count, device) and the world's process group, without an
 * accelerator.
 *
 * Every partial state and accelerator of a process shares one process group,
 * as Accelerate's shared state does: a program can create a partial state for
 * its data work before its accelerator, or keep both. The group lives while
 * any of them does. */
#ifndef ACCEL_ACCEL_PARTIAL_STATE_H
#define ACCEL_ACCEL_PARTIAL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h" /* accel_distributed_type; accel.h includes this header at its end */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct accel_partial_state accel_partial_state;

typedef struct accel_partial_state_options {
  uint32_t struct_size; /* set by accel_partial_state_options_init */
  int cpu;              /* nonzero: the CPU even where CUDA is available (also ACCELERATE_USE_CPU); default 0 */
  int64_t timeout_ms;   /* collective timeout when this state creates the group; default 1800000 (30 min) */
} accel_partial_state_options;

/* Fills opts with the defaults above. */
ACCEL_API void accel_partial_state_options_init(accel_partial_state_options* opts);

/* Reads the launch environment as accel_accelerator_create does and joins the
 * world's process group, creating it when no partial state or accelerator of
 * this process holds one (collective then). opts may be NULL (the defaults).
 * Errors: INVALID_ARGUMENT (NULL out, a bad option or environment value,
 * named), TIMEOUT (a peer never joined; the ranks named), STATE (this
 * process's live group was made for another device or store). Returns a new
 * handle in *out (accel_partial_state_free). */
ACCEL_API accel_status accel_partial_state_create(const accel_partial_state_options* opts, accel_partial_state** out);
ACCEL_API void accel_partial_state_free(accel_partial_state* state);

ACCEL_API accel_status accel_partial_state_process_index(const accel_partial_state* state, int* out);
ACCEL_API accel_status accel_partial_state_local_process_index(const accel_partial_state* state, int* out);
ACCEL_API accel_status accel_partial_state_num_processes(const accel_partial_state* state, int* out);
ACCEL_API accel_status accel_partial_state_distributed_type(const accel_partial_state* state,
                                                            accel_distributed_type* out);
/* The device as a string such as "cpu" or "cuda:0"; owned by the state. */
ACCEL_API accel_status accel_partial_state_device(const accel_partial_state* state, const char** out);
/* Which of n items this process takes in split_between_processes, as
 * accel_accelerator_split_range. Not collective. */
ACCEL_API accel_status accel_partial_state_split_range(const accel_partial_state* state, int64_t n, int apply_padding,
                                                       int64_t* start, int64_t* end, int64_t* padded_length);
/* Blocks until every process reaches this call (or an accelerator's
 * wait_for_everyone: they share the group). Collective. */
ACCEL_API accel_status accel_partial_state_wait_for_everyone(accel_partial_state* state);

/* The CUDA devices LibTorch sees from this process (0 on a CPU-only build or
   machine), as torch.cuda.device_count(); Accelerate's
   PartialState.default_device is "cuda" when it is positive. Not collective. Errors: INVALID_ARGUMENT (NULL out). */
ACCEL_API accel_status accel_cuda_device_count(int* out);

/* Accelerate's accelerate.utils.set_seed without an accelerator or partial
 * state: seeds every random generator LibTorch has (CPU and CUDA) with seed.
 * For Accelerate's device_specific add the process index first
 * (accel_partial_state_process_index). deterministic != 0: LibTorch uses
 * deterministic algorithms from then on in this process (an operation
 * without one then fails with its own error); 0 leaves that setting as it
 * was. Not collective. Fails only if LibTorch does (INTERNAL). */
ACCEL_API accel_status accel_set_seed(uint64_t seed, int deterministic);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_PARTIAL_STATE_H */
