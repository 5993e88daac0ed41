/* Misuse of every function of the C ABI (accel.h and the area headers it
   includes: accel_model.h, accel_data.h, accel_checkpoint.h,
   accel_partial_state.h, accel_tracking.h, big_model.h), one file per area:
   NULL for every pointer, freed, wrong-kind and garbage handles, NULL
   out-parameters, enums out of range, sizes 0, negative and huge, and calls in
   the wrong order. Each must return an error status with a message (never
   crash, hang or abort) and leave the out-parameters untouched.

   Table-driven by macros: EACH_BAD(kind, type, var) runs a statement once per
   bad handle of a kind; ARG/STATE/IO check a call's status, its message and
   the out-parameter sentinels. harness.c holds the bad handles, the sentinels
   and the fixtures every area shares, and main. check_misuse_coverage.cmake
   fails the suite when a function declared ACCEL_API in the headers is not
   named in one of these files. */
#ifndef ACCEL_TESTS_CAPI_MISUSE_H
#define ACCEL_TESTS_CAPI_MISUSE_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAPI_TEST_SHARED_COUNTERS /* one count over every file of this program */
#include "capi_test.h"

/* ---- bad handles ------------------------------------------------------- */

enum { K_TENSOR, K_ACC, K_MODEL, K_OPT, K_SCHED, K_DATASET, K_LOADER, K_PROGRESS, K_PROFILE, K_STATE, K_COUNT };
#define NBAD 4 /* NULL, freed, a live handle of another kind, a pointer to garbage */
extern void* bad[K_COUNT][NBAD];
extern unsigned char garbage[4096];
extern int bad_index; /* the variant EACH_BAD is running, for failure messages */

#define EACH_BAD(kind, type, var)                                                                     \
  for (int var##_i = 0; var##_i < NBAD; ++var##_i)                                                    \
    for (type* var = (type*)bad[kind][bad_index = var##_i], *var##_once = (type*)garbage; var##_once; \
         var##_once = NULL, bad_index = -1)

/* ---- out-parameters: sentinels that a failing call must leave alone ------ */

extern accel_tensor *t_out, *t_out2;
extern accel_accelerator* acc_out;
extern accel_model* model_out;
extern accel_optimizer* opt_out;
extern accel_scheduler* sched_out;
extern accel_dataset* ds_out;
extern accel_dataloader* dl_out;
extern accel_progress* prog_out;
extern accel_profile* prof_out;
extern accel_partial_state* state_out;
extern int i_out;
extern int64_t i64_out;
extern size_t sz_out;
extern double d_out;
extern const char* s_out;
extern accel_dtype dtype_out;
extern accel_distributed_type dist_out;
extern accel_mixed_precision mp_out;
extern accel_sharding_strategy shard_out;

#define SENTINEL ((void*)(garbage + 1))
void reset_outs(void);
int outs_untouched(void);
void expect_status(const char* file, int line, const char* call, accel_status got, accel_status want);

#define EXPECT_STATUS(want, call)                             \
  do {                                                        \
    accel_set_error("");                                      \
    reset_outs();                                             \
    expect_status(__FILE__, __LINE__, #call, (call), (want)); \
  } while (0)
#define ARG(call) EXPECT_STATUS(ACCEL_ERR_INVALID_ARGUMENT, call)
#define STATE(call) EXPECT_STATUS(ACCEL_ERR_STATE, call)
#define IO(call) EXPECT_STATUS(ACCEL_ERR_IO, call)

/* An enum value outside every accel_* enum (passed through int: C allows it). */
#define BAD_ENUM(type) ((type)9999)
#define NEG_ENUM(type) ((type)-5)

/* ---- fixtures: live handles of every kind, made once by misuse_setup ----- */

extern char misuse_dir[64]; /* a fresh temporary directory */
extern accel_accelerator* acc;
extern accel_tensor *tx, *ty, *scalar; /* float [4, 2], int64 labels [4], a float scalar */
extern accel_model* model;             /* kLinear */
extern accel_optimizer* opt;
extern accel_scheduler* sched;
extern accel_dataset* ds;
extern accel_dataloader* dl;
extern accel_progress* prog;
extern accel_partial_state* pstate;
extern const char* kLinear; /* a JSON model spec: one Linear, 2 -> 3 */

/* A float tensor of the given shape (at most 8 elements) with values 1, 2, ...; exits on failure. */
accel_tensor* make_tensor(const int64_t* shape, size_t ndim);

/* A fixture call that must succeed: the program exits (2) if it does not. */
#define FIXTURE(call)                                                        \
  do {                                                                       \
    if ((call) != ACCEL_OK) {                                                \
      fprintf(stderr, "fixture %s failed: %s\n", #call, accel_last_error()); \
      exit(2);                                                               \
    }                                                                        \
  } while (0)

/* Callbacks the cases hand to the library. */
extern accel_bytes_writer* stale_writer; /* the writer remember_writer was last given */
accel_status remember_writer(void* user, accel_bytes_writer* writer);
accel_status ignore_load(void* user, const void* data, size_t size);
accel_status ok_hook(void* user, const char* d);
accel_status bogus_status_hook(void* user, const char* d); /* returns a value outside accel_status */
accel_status never_length(void* user, int64_t* out);       /* 4 */
accel_status never_sample(void* user, int64_t index, void* const* fields, const size_t* nbytes);
accel_status never_next(void* user, void* const* fields, const size_t* nbytes, int* has_sample); /* none */

/* ---- the areas, run in this order by main ------------------------------ */

void misuse_version_and_errors(void); /* accelerator.c */
void misuse_tensors(void);            /* accelerator.c */
void misuse_accelerator(void);        /* accelerator.c */
void misuse_collective_lists(void);   /* accelerator.c */
void misuse_models(void);             /* model.c */
void misuse_named_tensors(void);      /* model.c */
void misuse_optimizers(void);         /* model.c */
void misuse_schedulers(void);         /* model.c */
void misuse_datasets(void);           /* data.c */
void misuse_sequences(void);          /* data.c */
void misuse_training(void);           /* training.c */
void misuse_checkpoints(void);        /* training.c */
void misuse_tracking(void);           /* training.c */
void misuse_big_models(void);         /* model.c */
void misuse_partial_states(void);     /* accelerator.c */

#endif
