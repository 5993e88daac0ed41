/*
 * libaccel C ABI: the types every libaccel header shares, at the bottom of them:
 * the export macro, accel_status, accel_dtype and the opaque handles.
 * accel/accel.h is the umbrella that includes every header; the headers for one
 * area (accel_model.h, accel_data.h, accel_checkpoint.h, accel_tracking.h,
 * big_model.h) include only this one and accel.h includes them, so no header
 * includes one that includes it back (accel_partial_state.h, which needs
 * accel_distributed_type, includes accel.h).
 * Plain C99.
 */
#ifndef ACCEL_TYPES_H
#define ACCEL_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ACCEL_BUILDING_LIBRARY)
#define ACCEL_API __attribute__((visibility("default")))
#else
#define ACCEL_API
#endif

/* What every fallible function returns; accel_last_error() says more. */
typedef enum accel_status {
  ACCEL_OK = 0,
  ACCEL_ERR_INVALID_ARGUMENT = 1, /* a bad value from the caller */
  ACCEL_ERR_STATE = 2,            /* the call is not valid now */
  ACCEL_ERR_IO = 3,               /* a file could not be read or written, or is malformed */
  ACCEL_ERR_DISTRIBUTED = 4,      /* a process group or collective failed */
  ACCEL_ERR_TIMEOUT = 5,          /* a collective or rendezvous timed out */
  ACCEL_ERR_UNSUPPORTED = 6,      /* the build or device cannot do it */
  ACCEL_ERR_INTERNAL = 7,         /* a bug in libaccel or LibTorch */
  ACCEL_ERR_RESOURCE = 8          /* the system refused a resource (e.g. a thread): retry with less */
} accel_status;

/* Element types of tensors, dataset fields and sequences. */
typedef enum accel_dtype {
  ACCEL_FLOAT32 = 1,
  ACCEL_FLOAT64 = 2,
  ACCEL_INT32 = 3,
  ACCEL_INT64 = 4,
  ACCEL_UINT8 = 5,
  ACCEL_INT8 = 6,
  ACCEL_INT16 = 7,
  ACCEL_BOOL = 8,
  ACCEL_FLOAT16 = 9,
  ACCEL_BFLOAT16 = 10
} accel_dtype;

/* Opaque handles. Each has a constructor returning a new one and exactly one
   destructor, accel_<object>_free (accel.h and the area headers). */
typedef struct accel_tensor accel_tensor;
typedef struct accel_accelerator accel_accelerator;
typedef struct accel_model accel_model;
typedef struct accel_tensor_map accel_tensor_map;
typedef struct accel_optimizer accel_optimizer;
typedef struct accel_scheduler accel_scheduler;
typedef struct accel_dataset accel_dataset;
typedef struct accel_dataloader accel_dataloader;
typedef struct accel_sequences accel_sequences;

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_TYPES_H */
