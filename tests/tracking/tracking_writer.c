/* Writes a small run through the C ABI for the pytest readers:
 *   tracking_writer LOG_WITH LOGGING_DIR PROJECT STEPS [CONFIG_JSON [INIT_KWARGS_JSON]]
 * STEPS < 0 logs forever (the kill test stops it with SIGKILL). On every rank
 * it logs the same values; only the main process writes. */
#include <stdio.h>
#include <stdlib.h>

#include "accel/accel.h"

static int check(accel_status status, const char* what) {
  if (status == ACCEL_OK) return 0;
  fprintf(stderr, "%s: %s\n", what, accel_last_error());
  exit(1);
}

int main(int argc, char** argv) {
  if (argc < 5 || argc > 7) {
    fprintf(stderr, "usage: %s LOG_WITH LOGGING_DIR PROJECT STEPS [CONFIG_JSON [INIT_KWARGS_JSON]]\n", argv[0]);
    return 2;
  }
  accel_accelerator_options opts;
  accel_accelerator_options_init(&opts);
  opts.log_with = argv[1];
  opts.logging_dir = argv[2];
  accel_accelerator* acc = NULL;
  check(accel_accelerator_create(&opts, &acc), "create");
  const char* config = argc >= 6 ? argv[5] : "{\"lr\": 0.01, \"optimizer\": \"adam\", \"epochs\": 3}";
  check(accel_accelerator_init_trackers_with(acc, argv[3], config, argc == 7 ? argv[6] : NULL), "init_trackers");
  check(accel_accelerator_log_text(acc, "notes", "hello tracking", 0), "log_text");
  long steps = atol(argv[4]);
  for (long step = 0; steps < 0 || step < steps; ++step) {
    const char* names[] = {"train/loss", "accuracy"};
    double values[] = {1.0 / (double)(step + 1), (double)step * 0.01};
    check(accel_accelerator_log(acc, names, values, 2, step), "log");
  }
  check(accel_accelerator_end_training(acc), "end_training");
  accel_accelerator_free(acc);
  return 0;
}
