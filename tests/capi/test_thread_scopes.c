/* Scopes whose mode LibTorch keeps per thread (profile, autocast, no_grad)
   end only on the thread that began them: _end from another thread is
   ACCEL_ERR_STATE and leaves the scope open, so the beginning thread can still
   end it. Bindings that move work between threads (Go's goroutines) rely on it. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>

#include "capi_test.h"

typedef accel_status (*end_call)(void*);

struct elsewhere {
  end_call end;
  void* arg;
  accel_status status;
  char message[512];
};

static void* run_end(void* p) {
  struct elsewhere* e = (struct elsewhere*)p;
  e->status = e->end(e->arg);
  strncpy(e->message, accel_last_error(), sizeof e->message - 1);
  return NULL;
}

/* Runs end(arg) on a new thread; its status and message. */
static void end_on_another_thread(end_call end, void* arg, const char* needle) {
  struct elsewhere e;
  pthread_t thread;
  memset(&e, 0, sizeof e);
  e.end = end;
  e.arg = arg;
  EXPECT(pthread_create(&thread, NULL, run_end, &e) == 0);
  pthread_join(thread, NULL);
  EXPECT(e.status == ACCEL_ERR_STATE);
  EXPECT(strstr(e.message, needle) != NULL);
}

static accel_status profile_end(void* p) { return accel_profile_end((accel_profile*)p); }
static accel_status autocast_end(void* acc) { return accel_accelerator_autocast_end((accel_accelerator*)acc); }
static accel_status no_grad_end(void* acc) { return accel_accelerator_no_grad_end((accel_accelerator*)acc); }

static int file_contains(const char* path, const char* needle) {
  static char text[1 << 16];
  size_t n;
  FILE* in = fopen(path, "r");
  if (!in) return 0;
  n = fread(text, 1, sizeof text - 1, in);
  text[n] = '\0';
  fclose(in);
  return strstr(text, needle) != NULL;
}

static void test_profile(accel_accelerator* acc, accel_tensor* t) {
  accel_profile* profile = NULL;
  accel_tensor* total = NULL;
  EXPECT_OK(accel_profile_begin(acc, "test_thread_scopes_trace", &profile));
  end_on_another_thread(profile_end, profile, "another thread");
  /* Still recording here, and the handle still ends it. */
  EXPECT_OK(accel_tensor_sum(t, &total));
  EXPECT_OK(accel_profile_end(profile));
  EXPECT(file_contains("test_thread_scopes_trace/trace_0.json", "\"aten::sum\""));
  accel_tensor_free(total);
}

static void test_autocast(accel_accelerator* acc, accel_model* model, accel_tensor* x) {
  accel_tensor* out = NULL;
  accel_dtype dtype = ACCEL_FLOAT32;
  EXPECT_OK(accel_accelerator_autocast_begin(acc, 1));
  end_on_another_thread(autocast_end, acc, "autocast_end on another thread");
  EXPECT_OK(accel_model_forward(model, x, &out));
  EXPECT_OK(accel_tensor_dtype(out, &dtype));
  EXPECT(dtype == ACCEL_BFLOAT16);
  accel_tensor_free(out);
  EXPECT_OK(accel_accelerator_autocast_end(acc));
  EXPECT_OK(accel_model_forward(model, x, &out));
  EXPECT_OK(accel_tensor_dtype(out, &dtype));
  EXPECT(dtype == ACCEL_FLOAT32);
  accel_tensor_free(out);
}

/* Whether a forward of model on x records a graph: its sum's backward works. */
static int records_graph(accel_accelerator* acc, accel_model* model, accel_tensor* x) {
  accel_tensor *out = NULL, *total = NULL;
  accel_status status;
  EXPECT_OK(accel_model_forward(model, x, &out));
  EXPECT_OK(accel_tensor_sum(out, &total));
  status = accel_accelerator_backward(acc, total);
  accel_tensor_free(total);
  accel_tensor_free(out);
  return status == ACCEL_OK;
}

static void test_no_grad(accel_accelerator* acc, accel_model* model, accel_tensor* x) {
  EXPECT_OK(accel_accelerator_no_grad_begin(acc));
  end_on_another_thread(no_grad_end, acc, "no_grad_end on another thread");
  EXPECT(!records_graph(acc, model, x));
  EXPECT_OK(accel_accelerator_no_grad_end(acc));
  EXPECT(records_graph(acc, model, x));
}

int main(void) {
  accel_accelerator_options options;
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_tensor* x = NULL;
  float data[4] = {1, 2, 3, 4};
  int64_t shape[2] = {1, 4};
  accel_accelerator_options_init(&options);
  options.mixed_precision = ACCEL_PRECISION_BF16;
  options.cpu = 1;
  EXPECT_OK(accel_accelerator_create(&options, &acc));
  EXPECT_OK(accel_model_from_json("[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 2}]", &model));
  EXPECT_OK(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, shape, 2, &x));
  test_profile(acc, x);
  test_autocast(acc, model, x);
  test_no_grad(acc, model, x);
  accel_tensor_free(x);
  accel_model_free(model);
  accel_accelerator_free(acc);
  return capi_report("test_thread_scopes");
}
