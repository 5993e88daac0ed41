/* Logs a run to the mlflow tracker and reports how each call went, for
 * test_mlflow_server.py (the tracker's target comes from MLFLOW_TRACKING_URI):
 *   mlflow_rest_writer LOGGING_DIR PROJECT STEPS [CONFIG_JSON [INIT_KWARGS_JSON]]
 * Prints "init <status> <ms> <message>", "log_max_ms <ms>", "end <status> <ms> <message>"
 * lines and exits 0, so the test can assert on failures as well as successes. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accel/accel.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void report(const char* what, accel_status status, double ms) {
  printf("%s %d %.1f %s\n", what, (int)status, ms, status == ACCEL_OK ? "" : accel_last_error());
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    fprintf(stderr, "usage: %s LOGGING_DIR PROJECT STEPS [CONFIG_JSON [INIT_KWARGS_JSON]]\n", argv[0]);
    return 2;
  }
  accel_accelerator_options opts;
  accel_accelerator_options_init(&opts);
  opts.log_with = "mlflow";
  opts.logging_dir = argv[1];
  accel_accelerator* acc = NULL;
  if (accel_accelerator_create(&opts, &acc) != ACCEL_OK) {
    fprintf(stderr, "create: %s\n", accel_last_error());
    return 1;
  }
  double start = now_ms();
  const char* config = argc >= 5 ? argv[4] : "{\"lr\": 0.01, \"optimizer\": \"adam\", \"epochs\": 3}";
  accel_status status = accel_accelerator_init_trackers_with(acc, argv[2], config, argc == 6 ? argv[5] : NULL);
  report("init", status, now_ms() - start);
  if (status != ACCEL_OK) {
    accel_accelerator_free(acc);
    return 0;
  }
  double log_max = 0;
  long steps = atol(argv[3]);
  for (long step = 0; step < steps; ++step) {
    const char* names[] = {"train/loss", "accuracy"};
    double values[] = {1.0 / (double)(step + 1), (double)step * 0.01};
    start = now_ms();
    status = accel_accelerator_log(acc, names, values, 2, step);
    if (now_ms() - start > log_max) log_max = now_ms() - start;
    if (status != ACCEL_OK) report("log", status, 0);
  }
  printf("log_max_ms %.1f\n", log_max);
  start = now_ms();
  status = accel_accelerator_end_training(acc);
  report("end", status, now_ms() - start);
  accel_accelerator_free(acc);
  return 0;
}
