/* Trackers through the C ABI: custom callback trackers and the error paths. */
#include <stdlib.h>

#include "capi_test.h"

typedef struct recorder {
  int inits, logs, finishes;
  char run_name[64];
  char config[256];
  double last_loss;
  int64_t last_step;
  int last_has_step;
  accel_status log_result;
} recorder;

static accel_status on_init(void* user, const char* run_name, const char* config_json) {
  recorder* r = (recorder*)user;
  ++r->inits;
  snprintf(r->run_name, sizeof r->run_name, "%s", run_name);
  snprintf(r->config, sizeof r->config, "%s", config_json);
  return ACCEL_OK;
}

static accel_status on_log(void* user, const char* const* names, const double* values, size_t count, int64_t step,
                           int has_step) {
  recorder* r = (recorder*)user;
  size_t i;
  ++r->logs;
  for (i = 0; i < count; ++i)
    if (strcmp(names[i], "loss") == 0) r->last_loss = values[i];
  r->last_step = step;
  r->last_has_step = has_step;
  if (r->log_result != ACCEL_OK) accel_set_error("the disk is full");
  return r->log_result;
}

static accel_status on_finish(void* user) {
  ++((recorder*)user)->finishes;
  return ACCEL_OK;
}

static accel_accelerator* make(const char* log_with) {
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  accel_accelerator_options_init(&opts);
  opts.log_with = log_with;
  opts.logging_dir = "tracking_api_logs";
  EXPECT_OK(accel_accelerator_create(&opts, &acc));
  return acc;
}

static void test_custom_tracker_receives_every_call(void) {
  recorder r;
  accel_tracker_callbacks cb;
  accel_accelerator* acc = make(NULL);
  const char* names[] = {"loss", "lr"};
  double values[] = {0.25, 0.1};
  int has = -1;
  memset(&r, 0, sizeof r);
  accel_tracker_callbacks_init(&cb);
  cb.name = "mine";
  cb.user = &r;
  cb.init = on_init;
  cb.log = on_log;
  cb.finish = on_finish;
  EXPECT_OK(accel_accelerator_add_tracker(acc, &cb));
  EXPECT_ERROR(accel_accelerator_add_tracker(acc, &cb), ACCEL_ERR_INVALID_ARGUMENT, "mine");
  EXPECT_OK(accel_accelerator_has_tracker(acc, "mine", &has));
  EXPECT(has == 0); /* not running before init_trackers */
  EXPECT_OK(accel_accelerator_init_trackers(acc, "proj", "{\"lr\": 0.1, \"opt\": \"sgd\", \"nesterov\": true}"));
  EXPECT(r.inits == 1);
  EXPECT(strcmp(r.run_name, "proj") == 0);
  EXPECT(strstr(r.config, "\"opt\":\"sgd\"") != NULL);
  EXPECT(strstr(r.config, "\"nesterov\":1") != NULL);
  EXPECT_OK(accel_accelerator_has_tracker(acc, "mine", &has));
  EXPECT(has == 1);
  EXPECT_OK(accel_accelerator_log(acc, names, values, 2, 7));
  EXPECT(r.logs == 1 && r.last_loss == 0.25 && r.last_step == 7 && r.last_has_step == 1);
  EXPECT_OK(accel_accelerator_log(acc, names, values, 1, -1));
  EXPECT(r.logs == 2 && r.last_has_step == 0);
  r.log_result = ACCEL_ERR_IO;
  EXPECT_ERROR(accel_accelerator_log(acc, names, values, 1, 8), ACCEL_ERR_IO,
               "tracker 'mine' log callback failed: the disk is full");
  EXPECT_ERROR(accel_accelerator_add_tracker(acc, &cb), ACCEL_ERR_STATE, "after init_trackers");
  EXPECT_ERROR(accel_accelerator_init_trackers(acc, "proj", NULL), ACCEL_ERR_STATE, "twice");
  EXPECT_OK(accel_accelerator_end_training(acc));
  EXPECT_OK(accel_accelerator_end_training(acc)); /* idempotent */
  EXPECT(r.finishes == 1);
  EXPECT_OK(accel_accelerator_log(acc, names, values, 1, 9)); /* after the end: nothing */
  EXPECT(r.logs == 3);
  accel_accelerator_free(acc);
}

static void test_error_paths_name_the_bad_value(void) {
  accel_accelerator* acc = make("jsonl,wandb_nope");
  accel_tracker_callbacks cb;
  const char* names[] = {NULL};
  double values[] = {1.0};
  int has = 0;
  EXPECT_ERROR(accel_accelerator_init_trackers(acc, "p", NULL), ACCEL_ERR_INVALID_ARGUMENT, "wandb_nope");
  accel_accelerator_free(acc);

  acc = make("jsonl");
  EXPECT_ERROR(accel_accelerator_init_trackers(NULL, "p", NULL), ACCEL_ERR_INVALID_ARGUMENT, "acc");
  EXPECT_ERROR(accel_accelerator_init_trackers(acc, NULL, NULL), ACCEL_ERR_INVALID_ARGUMENT, "project_name");
  EXPECT_ERROR(accel_accelerator_init_trackers(acc, "p", "{not json"), ACCEL_ERR_INVALID_ARGUMENT, "{not json");
  EXPECT_ERROR(accel_accelerator_init_trackers(acc, "p", "{\"layers\": [1, 2]}"), ACCEL_ERR_INVALID_ARGUMENT, "layers");
  EXPECT_ERROR(accel_accelerator_add_tracker(acc, NULL), ACCEL_ERR_INVALID_ARGUMENT, "callbacks");
  accel_tracker_callbacks_init(&cb);
  EXPECT_ERROR(accel_accelerator_add_tracker(acc, &cb), ACCEL_ERR_INVALID_ARGUMENT, "name");
  cb.struct_size = 0;
  cb.name = "x";
  EXPECT_ERROR(accel_accelerator_add_tracker(acc, &cb), ACCEL_ERR_INVALID_ARGUMENT, "struct_size");
  EXPECT_ERROR(accel_accelerator_log(acc, names, values, 1, 0), ACCEL_ERR_INVALID_ARGUMENT, "names[0]");
  EXPECT_ERROR(accel_accelerator_log(acc, NULL, values, 1, 0), ACCEL_ERR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(accel_accelerator_log_text(acc, NULL, "t", 0), ACCEL_ERR_INVALID_ARGUMENT, "tag");
  EXPECT_ERROR(accel_accelerator_has_tracker(acc, "jsonl", NULL), ACCEL_ERR_INVALID_ARGUMENT, "out");
  EXPECT_OK(accel_accelerator_init_trackers(acc, "p", NULL));
  EXPECT_OK(accel_accelerator_has_tracker(acc, "jsonl", &has));
  EXPECT(has == 1);
  EXPECT_OK(accel_accelerator_has_tracker(acc, "csv", &has));
  EXPECT(has == 0);
  EXPECT_ERROR(accel_accelerator_end_training(NULL), ACCEL_ERR_INVALID_ARGUMENT, "acc");
  accel_accelerator_free(acc);
}

/* The whole file, NUL-terminated ("" when it cannot be read). */
static char* slurp(const char* path) {
  static char text[4096];
  size_t n = 0;
  FILE* f = fopen(path, "r");
  if (f != NULL) {
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
  }
  text[n] = '\0';
  return text;
}

/* Accelerate's get_tracker(name).log: one running tracker receives the values, the others do not. */
static void test_log_to_reaches_one_tracker(void) {
  recorder r;
  accel_tracker_callbacks cb;
  accel_accelerator* acc = make("jsonl,csv");
  const char* names[] = {"loss"};
  double values[] = {0.5};
  remove("tracking_api_logs/one/metrics.jsonl"); /* the files are appended to: a rerun starts afresh */
  remove("tracking_api_logs/one/metrics.csv");
  memset(&r, 0, sizeof r);
  accel_tracker_callbacks_init(&cb);
  cb.name = "mine";
  cb.user = &r;
  cb.log = on_log;
  EXPECT_OK(accel_accelerator_add_tracker(acc, &cb));
  /* Before init_trackers nothing runs: Accelerate's blank tracker, whatever the name. */
  EXPECT_OK(accel_accelerator_log_to(acc, "jsonl", names, values, 1, 1));
  EXPECT_OK(accel_accelerator_log_to(acc, "nope", names, values, 1, 1));
  EXPECT_OK(accel_accelerator_init_trackers(acc, "one", NULL));
  EXPECT_OK(accel_accelerator_log_to(acc, "jsonl", names, values, 1, 3));
  values[0] = 0.75;
  EXPECT_OK(accel_accelerator_log_to(acc, "mine", names, values, 1, 4));
  EXPECT(r.logs == 1 && r.last_loss == 0.75 && r.last_step == 4);
  EXPECT_OK(accel_accelerator_log_text_to(acc, "jsonl", "note", "only here", 5));
  EXPECT(strcmp(accel_builtin_tracker_names(), "jsonl,csv,tensorboard,mlflow,wandb,dvclive,trackio,aim,comet_ml") == 0);
  EXPECT_ERROR(accel_accelerator_log_to(acc, "tensorboard", names, values, 1, 6), ACCEL_ERR_INVALID_ARGUMENT,
               "no running tracker is called 'tensorboard' (running: jsonl, csv, mine)");
  EXPECT_ERROR(accel_accelerator_log_text_to(acc, "nope", "t", "x", 6), ACCEL_ERR_INVALID_ARGUMENT, "'nope'");
  EXPECT_ERROR(accel_accelerator_log_to(acc, NULL, names, values, 1, 6), ACCEL_ERR_INVALID_ARGUMENT, "tracker");
  EXPECT_ERROR(accel_accelerator_log_to(acc, "jsonl", NULL, values, 1, 6), ACCEL_ERR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(accel_accelerator_log_text_to(acc, "jsonl", NULL, "x", 6), ACCEL_ERR_INVALID_ARGUMENT, "tag");
  EXPECT_ERROR(accel_accelerator_log_to(NULL, "jsonl", names, values, 1, 6), ACCEL_ERR_INVALID_ARGUMENT, "acc");
  EXPECT_OK(accel_accelerator_end_training(acc));
  EXPECT_OK(accel_accelerator_log_to(acc, "nope", names, values, 1, 7)); /* after the end: nothing */
  EXPECT(r.logs == 1);
  accel_accelerator_free(acc);
  EXPECT(strcmp(slurp("tracking_api_logs/one/metrics.jsonl"),
                "{\"loss\":0.5,\"step\":3}\n{\"note\":\"only here\",\"step\":5}\n") == 0);
  EXPECT(strcmp(slurp("tracking_api_logs/one/metrics.csv"), "step,tag,value\n") == 0);
}

int main(void) {
  test_custom_tracker_receives_every_call();
  test_error_paths_name_the_bad_value();
  test_log_to_reaches_one_tracker();
  return capi_report("test_tracking_api");
}
