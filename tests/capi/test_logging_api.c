/* Leveled logging, progress bars and profiling through the C ABI: stderr is captured into
 * a file (not a terminal, so progress prints plain decile lines). */
#define _POSIX_C_SOURCE 200112L
#include <stdlib.h>
#include <unistd.h>

#include "capi_test.h"

static char captured[8192];
static const char* capture_path = "test_logging_api.stderr";
static int saved_fd = -1;

static void capture_begin(void) {
  fflush(stderr);
  saved_fd = dup(2);
  if (freopen(capture_path, "w", stderr) == NULL) abort();
}

static const char* capture_end(void) {
  FILE* in;
  size_t n;
  fflush(stderr);
  dup2(saved_fd, 2);
  close(saved_fd);
  in = fopen(capture_path, "r");
  n = in ? fread(captured, 1, sizeof captured - 1, in) : 0;
  captured[n] = '\0';
  if (in) fclose(in);
  return captured;
}

static int count(const char* text, const char* needle) {
  int n = 0;
  for (text = strstr(text, needle); text != NULL; text = strstr(text + 1, needle)) ++n;
  return n;
}

static void test_levels_and_ranks(void) {
  const char* out;
  setenv("ACCELERATE_LOG_LEVEL", "info", 1);
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  capture_begin();
  EXPECT_OK(accel_log("train", ACCEL_LOG_INFO, "shown", 1));
  EXPECT_OK(accel_log("train", ACCEL_LOG_DEBUG, "hidden", 1));
  out = capture_end();
  EXPECT(strcmp(out, "INFO train: shown\n") == 0);

  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  capture_begin();
  EXPECT_OK(accel_log("train", ACCEL_LOG_WARNING, "main only", 1));
  EXPECT_OK(accel_log("train", ACCEL_LOG_WARNING, "every rank", 0));
  out = capture_end();
  EXPECT(strcmp(out, "[rank 1] WARNING train: every rank\n") == 0);
  /* Under accel launch, whose relay starts each line with "[rank 1] " already. */
  setenv("ACCEL_LAUNCH_PREFIXES_LINES", "1", 1);
  capture_begin();
  EXPECT_OK(accel_log("train", ACCEL_LOG_WARNING, "once", 0));
  out = capture_end();
  unsetenv("ACCEL_LAUNCH_PREFIXES_LINES");
  EXPECT(strcmp(out, "WARNING train: once\n") == 0);

  setenv("ACCELERATE_LOG_LEVEL", "loud", 1);
  EXPECT_ERROR(accel_log("train", ACCEL_LOG_ERROR, "x", 1), ACCEL_ERR_INVALID_ARGUMENT, "loud");
  unsetenv("ACCELERATE_LOG_LEVEL");
  EXPECT_ERROR(accel_log("train", (accel_log_level)15, "x", 1), ACCEL_ERR_INVALID_ARGUMENT, "15");
  EXPECT_ERROR(accel_log(NULL, ACCEL_LOG_ERROR, "x", 1), ACCEL_ERR_INVALID_ARGUMENT, "name");
  EXPECT_ERROR(accel_log("train", ACCEL_LOG_ERROR, NULL, 1), ACCEL_ERR_INVALID_ARGUMENT, "message");
}

static void run_bar(int64_t total, int main_only) {
  accel_progress* bar = NULL;
  int64_t i;
  EXPECT_OK(accel_progress_create(total, "epoch 1", main_only, &bar));
  for (i = 0; i < total; ++i) EXPECT_OK(accel_progress_update(bar, 1));
  accel_progress_free(bar);
}

static void test_progress(void) {
  const char* out;
  accel_progress* bar = NULL;
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  capture_begin();
  run_bar(40, 1);
  out = capture_end();
  EXPECT(count(out, "epoch 1: ") == 10); /* one line per 10%, none redrawn */
  EXPECT(strstr(out, "100% 40/40") != NULL);
  EXPECT(strstr(out, " 50% 20/40") != NULL);
  EXPECT(strchr(out, '\r') == NULL);

  setenv("RANK", "1", 1);
  capture_begin();
  run_bar(40, 1);
  out = capture_end();
  EXPECT(out[0] == '\0'); /* not the main process */

  setenv("RANK", "0", 1);
  setenv("ACCEL_DISABLE_PROGRESS_BAR", "1", 1);
  capture_begin();
  run_bar(40, 1);
  out = capture_end();
  EXPECT(out[0] == '\0');
  unsetenv("ACCEL_DISABLE_PROGRESS_BAR");

  EXPECT_ERROR(accel_progress_create(-1, "x", 1, &bar), ACCEL_ERR_INVALID_ARGUMENT, "-1");
  EXPECT_ERROR(accel_progress_create(3, NULL, 1, &bar), ACCEL_ERR_INVALID_ARGUMENT, "description");
  EXPECT_ERROR(accel_progress_create(3, "x", 1, NULL), ACCEL_ERR_INVALID_ARGUMENT, "out");
  EXPECT_OK(accel_progress_create(3, "x", 0, &bar));
  EXPECT_ERROR(accel_progress_update(bar, -2), ACCEL_ERR_INVALID_ARGUMENT, "-2");
  capture_begin();
  accel_progress_free(bar);
  capture_end();
  EXPECT_ERROR(accel_progress_update(bar, 1), ACCEL_ERR_INVALID_ARGUMENT, "progress");
  EXPECT_ERROR(accel_progress_update(NULL, 1), ACCEL_ERR_INVALID_ARGUMENT, "progress");
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
}

static void test_profile_writes_a_chrome_trace(void) {
  accel_accelerator* acc = NULL;
  accel_profile* profile = NULL;
  accel_profile* nested = NULL;
  accel_tensor* t = NULL;
  accel_tensor* total = NULL;
  float data[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  FILE* in;
  static char trace[1 << 16];
  size_t n;
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_ERROR(accel_profile_begin(NULL, "x", &profile), ACCEL_ERR_INVALID_ARGUMENT, "acc");
  EXPECT_ERROR(accel_profile_begin(acc, NULL, &profile), ACCEL_ERR_INVALID_ARGUMENT, "output_trace_dir");
  EXPECT_ERROR(accel_profile_begin(acc, "", &profile), ACCEL_ERR_INVALID_ARGUMENT, "output_trace_dir");
  EXPECT_OK(accel_profile_begin(acc, "test_logging_api_trace", &profile));
  EXPECT_ERROR(accel_profile_begin(acc, "test_logging_api_trace", &nested), ACCEL_ERR_STATE, "already running");
  EXPECT_OK(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, shape, 1, &t));
  EXPECT_OK(accel_tensor_sum(t, &total));
  EXPECT_OK(accel_profile_end(profile));
  EXPECT_ERROR(accel_profile_end(profile), ACCEL_ERR_INVALID_ARGUMENT, "profile");
  in = fopen("test_logging_api_trace/trace_0.json", "r");
  EXPECT(in != NULL);
  n = in ? fread(trace, 1, sizeof trace - 1, in) : 0;
  trace[n] = '\0';
  if (in) fclose(in);
  EXPECT(strstr(trace, "\"aten::sum\"") != NULL);
  remove("test_logging_api_trace/trace_0.json");
  rmdir("test_logging_api_trace");
  accel_tensor_free(t);
  accel_tensor_free(total);
  accel_accelerator_free(acc);
}

/* ProfileKwargs(record_shapes=True, profile_memory=True, with_flops=True, with_stack=True,
   with_modules=True): a bias-free Linear(3, 4) on a [2, 3] input runs aten::mm of [2, 3] x
   [3, 4], recorded with its input shapes and 2 * 2 * 3 * 4 = 48 flops, and its 32-byte
   float32 output as an allocation; a JSON-spec model has no TorchScript source or modules,
   so no stack or hierarchy (tests/tracking/test_profiler.cpp checks them on TorchScript). */
static void test_profile_options_record_shapes_memory_and_flops(void) {
  accel_accelerator* acc = NULL;
  accel_profile* profile = NULL;
  accel_model* model = NULL;
  accel_tensor *a = NULL, *c = NULL;
  float left[6] = {1, 2, 3, 4, 5, 6};
  int64_t lshape[2] = {2, 3};
  FILE* in;
  static char trace[1 << 18];
  size_t n;
  const unsigned all = ACCEL_PROFILE_RECORD_SHAPES | ACCEL_PROFILE_MEMORY | ACCEL_PROFILE_WITH_FLOPS |
                       ACCEL_PROFILE_WITH_STACK | ACCEL_PROFILE_WITH_MODULES;
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_ERROR(accel_profile_begin_with(acc, "test_logging_api_options", 32 | ACCEL_PROFILE_WITH_STACK, &profile),
               ACCEL_ERR_INVALID_ARGUMENT, "unknown bits (32)");
  EXPECT(profile == NULL);
  EXPECT_OK(accel_tensor_from_buffer(left, sizeof left, ACCEL_FLOAT32, lshape, 2, &a));
  EXPECT_OK(accel_model_from_json("[{\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 4, \"bias\": false}]",
                                  &model));
  EXPECT_OK(accel_profile_begin_with(acc, "test_logging_api_options", all, &profile));
  EXPECT_OK(accel_model_forward(model, a, &c));
  EXPECT_OK(accel_profile_end(profile));
  in = fopen("test_logging_api_options/trace_0.json", "r");
  EXPECT(in != NULL);
  n = in ? fread(trace, 1, sizeof trace - 1, in) : 0;
  trace[n] = '\0';
  if (in) fclose(in);
  EXPECT(strstr(trace, "\"Input Dims\":[[2,3],[3,4]]") != NULL);
  EXPECT(strstr(trace, "\"flops\":48") != NULL);
  EXPECT(strstr(trace, "\"[memory]\"") != NULL && strstr(trace, "\"Bytes\":32") != NULL);
  EXPECT(strstr(trace, "Call stack") == NULL && strstr(trace, "Module Hierarchy") == NULL);
  remove("test_logging_api_options/trace_0.json");
  rmdir("test_logging_api_options");
  accel_tensor_free(a);
  accel_tensor_free(c);
  accel_model_free(model);
  accel_accelerator_free(acc);
}

int main(void) {
  test_levels_and_ranks();
  test_progress();
  test_profile_writes_a_chrome_trace();
  test_profile_options_record_shapes_memory_and_flops();
  remove(capture_path);
  return capi_report("test_logging_api");
}
