/* libaccel C ABI: experiment tracking (Accelerate's log_with, init_trackers, log,
 * end_training) and custom trackers through callbacks.
 *
 * Built-in trackers are named in accel_accelerator_options.log_with
 * (comma-separated: "jsonl", "csv", "tensorboard", "mlflow", "wandb",
 * "dvclive", "trackio", "aim", "comet_ml", or "all") and write under
 * options.logging_dir (default project_dir/logs; trackio into its own store,
 * comet_ml into COMET_OFFLINE_DIRECTORY or ./.cometml-runs); "aim" needs the
 * system's librocksdb (UNSUPPORTED without it; "all" then leaves it out);
 * docs/tracking.md describes
 * their files. Trackers run on the main process only: on the other
 * processes init_trackers, log, log_text and end_training succeed and do nothing.
 * None of these calls communicates. */
#ifndef ACCEL_ACCEL_TRACKING_H
#define ACCEL_ACCEL_TRACKING_H

#include <stddef.h>
#include <stdint.h>

#include "accel/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A user tracker. Each callback gets `user` back and returns ACCEL_OK or an
 * error status; an error fails the accel_* call that invoked it with a message
 * naming the tracker. Callbacks may be NULL (nothing to do). libaccel copies the
 * struct; `user` must stay valid until end_training or accel_accelerator_free. */
typedef struct accel_tracker_callbacks {
  uint32_t struct_size; /* set by accel_tracker_callbacks_init */
  const char* name;     /* unique, non-empty; copied */
  void* user;
  /* config_json: the init_trackers config as a JSON object ("{}" when none). */
  accel_status (*init)(void* user, const char* run_name, const char* config_json);
  /* count scalars; has_step is 0 when the caller gave no step. */
  accel_status (*log)(void* user, const char* const* names, const double* values, size_t count, int64_t step,
                      int has_step);
  accel_status (*finish)(void* user);
} accel_tracker_callbacks;

ACCEL_API void accel_tracker_callbacks_init(accel_tracker_callbacks* callbacks);

/* Adds a custom tracker started by the next accel_accelerator_init_trackers.
 * Errors: INVALID_ARGUMENT for NULL arguments, an empty or repeated name;
 * STATE after init_trackers. */
ACCEL_API accel_status accel_accelerator_add_tracker(accel_accelerator* acc, const accel_tracker_callbacks* callbacks);

/* Starts the log_with trackers and the added ones for a run named project_name.
 * config_json: NULL or a flat JSON object of numbers, strings and booleans (the
 * run's hyperparameters). Errors: INVALID_ARGUMENT naming an unknown tracker in
 * log_with, a bad config value, or config_json that is not JSON or nests more
 * than 256 levels deep; STATE when called twice; IO when a tracker
 * cannot write its files. The "mlflow" tracker follows MLFLOW_TRACKING_URI
 * (an http(s) URL: an MLflow server, contacted here: IO naming the URL and
 * the server's answer when it cannot be reached; UNSUPPORTED for other
 * stores such as sqlite:) and MLFLOW_EXPERIMENT_NAME/_RUN_ID/_TAGS
 * (docs/tracking.md). On error no tracker is started, so the call can be
 * repeated once the cause is fixed. */
ACCEL_API accel_status accel_accelerator_init_trackers(accel_accelerator* acc, const char* project_name,
                                                       const char* config_json);
/* accel_accelerator_init_trackers with Accelerate's init_kwargs: init_kwargs_json
 * is NULL, "" or a JSON object of per-tracker options, e.g.
 * {"wandb": {"name": "run-1", "tags": ["baseline"]}, "dvclive": {"dir": "out"}}
 * (each tracker's keys: docs/tracking.md). A built-in tracker that is not in
 * log_with ignores its entry, as in Accelerate. Errors as above, and
 * INVALID_ARGUMENT naming a key that is not a built-in tracker, an option the
 * tracker does not take, or a value of the wrong type. */
ACCEL_API accel_status accel_accelerator_init_trackers_with(accel_accelerator* acc, const char* project_name,
                                                            const char* config_json, const char* init_kwargs_json);

/* Logs count named scalars at step (step < 0: no step) to every running tracker.
 * Errors: INVALID_ARGUMENT naming a name the mlflow tracker cannot send. The
 * mlflow server tracker only queues values here; a thread sends them. */
ACCEL_API accel_status accel_accelerator_log(accel_accelerator* acc, const char* const* names, const double* values,
                                             size_t count, int64_t step);
/* Logs a text value (TensorBoard text, a JSONL record); step < 0: no step. */
ACCEL_API accel_status accel_accelerator_log_text(accel_accelerator* acc, const char* tag, const char* text,
                                                  int64_t step);
/* Accelerate's accelerator.get_tracker(tracker).log(values, step): logs count
 * named scalars at step (step < 0: no step) to the running tracker called
 * tracker alone (a built-in's name, e.g. "tensorboard", or a custom one's).
 * Where Accelerate's get_tracker gives a blank tracker it succeeds and does
 * nothing: when no tracker runs in this process (other processes, before
 * init_trackers, an empty log_with, after end_training). Errors:
 * INVALID_ARGUMENT for NULL arguments, or naming tracker and the running ones
 * when trackers run and none is called tracker; otherwise as
 * accel_accelerator_log. */
ACCEL_API accel_status accel_accelerator_log_to(accel_accelerator* acc, const char* tracker, const char* const* names,
                                                const double* values, size_t count, int64_t step);
/* The same for a text value (accel_accelerator_log_text to one tracker; trackers
 * without text ignore it). */
ACCEL_API accel_status accel_accelerator_log_text_to(accel_accelerator* acc, const char* tracker, const char* tag,
                                                     const char* text, int64_t step);
/* The built-in trackers' names, comma-separated, as log_with takes them
 * ("jsonl,csv,tensorboard,..."; "all" is not among them). A static string:
 * not freed, valid for the process's life. */
ACCEL_API const char* accel_builtin_tracker_names(void);
/* *out = 1 when a tracker called name is running in this process, else 0. */
ACCEL_API accel_status accel_accelerator_has_tracker(const accel_accelerator* acc, const char* name, int* out);
/* Finishes every tracker (flushes and closes its files). Idempotent. The
 * mlflow server tracker waits up to ACCEL_MLFLOW_FLUSH_TIMEOUT seconds (60)
 * for its queue to reach the server; IO naming the URL, the server's last
 * answer and the counts lost when any value never arrived (the run is then
 * marked FAILED). */
ACCEL_API accel_status accel_accelerator_end_training(accel_accelerator* acc);

/* ---- Logging and progress (Accelerate's get_logger and tqdm) ---- */

typedef enum accel_log_level {
  ACCEL_LOG_DEBUG = 10,
  ACCEL_LOG_INFO = 20,
  ACCEL_LOG_WARNING = 30,
  ACCEL_LOG_ERROR = 40,
  ACCEL_LOG_CRITICAL = 50
} accel_log_level;

/* Writes "LEVEL name: message" to stderr when level reaches the threshold
 * (ACCELERATE_LOG_LEVEL: debug, info, warning, error, critical; default
 * warning), prefixed with "[rank N] " when several processes run. With
 * main_process_only nonzero only rank 0 writes. Errors: INVALID_ARGUMENT for
 * NULL strings, a level outside accel_log_level, or a bad ACCELERATE_LOG_LEVEL
 * (named). Not collective. */
ACCEL_API accel_status accel_log(const char* name, accel_log_level level, const char* message, int main_process_only);

/* A progress bar over total steps on stderr: redrawn in place on a terminal,
 * a plain line at every 10% otherwise; silent on ranks other than 0 (when
 * main_process_only is nonzero) and when ACCEL_DISABLE_PROGRESS_BAR is set.
 * Free with accel_progress_free. Errors: INVALID_ARGUMENT for total < 0 or a
 * NULL description or out. */
typedef struct accel_progress accel_progress;
ACCEL_API accel_status accel_progress_create(int64_t total, const char* description, int main_process_only,
                                             accel_progress** out);
/* Advances by steps (>= 0). */
ACCEL_API accel_status accel_progress_update(accel_progress* progress, int64_t steps);
/* Ends the bar's line and frees it; NULL is ignored. */
ACCEL_API void accel_progress_free(accel_progress* progress);

/* ---- Profiling (Accelerate's accelerator.profile()) ---- */

/* Starts recording every operator this thread runs with LibTorch's autograd
 * profiler; accel_profile_end writes the trace to
 * output_trace_dir/trace_<process_index>.json (one per rank) and frees the
 * handle (also when it fails). The file is in the Trace Event Format that
 * chrome://tracing, Perfetto and viztracer read: {"traceEvents": [...]}, the
 * rank's process index as pid, "rank N" as process name, thread names; files
 * of several ranks merge into one timeline (viztracer --combine). Not
 * collective. Errors: INVALID_ARGUMENT for NULL or empty arguments; STATE when
 * a profile already runs on this thread, or when accel_profile_end is called on
 * another thread than accel_profile_begin's (the handle then stays valid and
 * the profile keeps recording: end it on its own thread); IO when the
 * directory or file cannot be written (named). */
typedef struct accel_profile accel_profile;
ACCEL_API accel_status accel_profile_begin(const accel_accelerator* acc, const char* output_trace_dir,
                                           accel_profile** out);
ACCEL_API accel_status accel_profile_end(accel_profile* profile);

/* What a profile records besides each operator's name, thread and time
   (Accelerate's ProfileKwargs), OR-ed together for accel_profile_begin_with. */
typedef enum accel_profile_option {
  ACCEL_PROFILE_RECORD_SHAPES = 1, /* each operator's input shapes: "Input Dims" in its args */
  ACCEL_PROFILE_MEMORY = 2,        /* CPU allocations and frees: "[memory]" events, "Bytes", "Total Allocated" */
  ACCEL_PROFILE_WITH_FLOPS = 4,    /* the operations LibTorch counts (matmul, conv): "flops" in their args */
  /* Operators a TorchScript model runs: the model source lines that called
     them, innermost first ("Call stack" in their args, as torch.profiler
     writes it: "net.py(5): forward;net.py(10): forward;") */
  ACCEL_PROFILE_WITH_STACK = 8,
  /* Operators a TorchScript model runs: the submodules they ran in ("Module
     Hierarchy" in their args: "TOP(Net)::forward.block(Block)::forward.") */
  ACCEL_PROFILE_WITH_MODULES = 16
} accel_profile_option;

/* accel_profile_begin recording what options (accel_profile_option bits; 0 is
   accel_profile_begin) ask for. Errors as accel_profile_begin, and
   INVALID_ARGUMENT naming unknown bits. */
ACCEL_API accel_status accel_profile_begin_with(const accel_accelerator* acc, const char* output_trace_dir,
                                                unsigned options, accel_profile** out);

/* torch.profiler.schedule (Accelerate's ProfileKwargs.schedule_option), counted
   by accel_profile_step: after skip_first steps, cycles of `wait` unrecorded
   steps, `warmup` steps (not recorded either: LibTorch's legacy profiler needs
   no warm-up), then `active` recorded ones, `repeat` times (0: until the
   profile ends). */
typedef struct accel_profile_schedule {
  uint32_t struct_size; /* set by accel_profile_schedule_init */
  int64_t wait;
  int64_t warmup;
  int64_t active; /* >= 1 */
  int64_t repeat;
  int64_t skip_first;
} accel_profile_schedule;
ACCEL_API void accel_profile_schedule_init(accel_profile_schedule* schedule);

/* accel_profile_begin_with under a schedule. The trace file holds the last
   finished cycle: each cycle's end writes it (accel_profile_step then sets
   *trace_ready, where Accelerate calls on_trace_ready), and accel_profile_end
   writes a cycle still recording (an empty trace when none was). Errors as
   accel_profile_begin_with, and INVALID_ARGUMENT naming a negative field, or
   fields set with active 0. */
ACCEL_API accel_status accel_profile_begin_scheduled(const accel_accelerator* acc, const char* output_trace_dir,
                                                     unsigned options, const accel_profile_schedule* schedule,
                                                     accel_profile** out);
/* The end of a training step (torch.profiler's prof.step()): advances the
   schedule; *trace_ready = 1 when a cycle just ended and its trace was written,
   else 0 (always 0 without a schedule). Errors: INVALID_ARGUMENT for a bad
   handle or NULL trace_ready; STATE on another thread than the profile's; IO
   when the trace cannot be written. */
ACCEL_API accel_status accel_profile_step(accel_profile* profile, int* trace_ready);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_TRACKING_H */
