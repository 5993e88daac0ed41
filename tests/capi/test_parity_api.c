/* Accelerate parity of schedulers, accumulation and checkpoints through the C
 * ABI (issue 17, items 13-15, 17-19). Runs alone (CTest capi_test_parity_api)
 * and under `accel launch` with 2 processes (tests/dist), where
 * argv[1] == "split" turns split_batches on. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>

#include "capi_test.h"

static const char* kSpec =
    "[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 8},"
    " {\"type\": \"BatchNorm1d\", \"num_features\": 8},"
    " {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 2}]";

static int split = 0;
static int num_processes = 1;

static char* read_text(const char* path) {
  static char text[4096];
  size_t got = 0;
  FILE* f = fopen(path, "rb");
  text[0] = '\0';
  if (f == NULL) return text;
  got = fread(text, 1, sizeof text - 1, f);
  text[got] = '\0';
  fclose(f);
  return text;
}

static accel_accelerator* make_accelerator(const char* project, int automatic) {
  accel_accelerator_options opts;
  accel_accelerator* acc = NULL;
  accel_accelerator_options_init(&opts);
  opts.timeout_ms = 30000;
  opts.split_batches = split;
  opts.gradient_accumulation_steps = 2;
  opts.sync_each_batch = 1;
  opts.project_dir = project;
  opts.automatic_checkpoint_naming = automatic;
  EXPECT_OK(accel_accelerator_create(&opts, &acc));
  return acc;
}

/* Item 13: num_processes steps per optimizer step, one under split_batches. */
static void scheduler_steps(void) {
  accel_accelerator* acc = make_accelerator(NULL, 0);
  accel_model* model = NULL;
  accel_optimizer* opt = NULL;
  accel_optimizer_options oopts;
  accel_scheduler* sched = NULL;
  accel_scheduler_options sopts;
  double lr = 0, expected = 1.0 - (split ? 1 : num_processes) / 10.0;
  int64_t steps = 0;
  EXPECT_OK(accel_accelerator_num_processes(acc, &num_processes));
  expected = 1.0 - (split ? 1 : num_processes) / 10.0;
  EXPECT_OK(accel_accelerator_gradient_accumulation_steps(acc, &steps));
  EXPECT(steps == 2);
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_ADAMW);
  oopts.lr = 1.0;
  EXPECT_OK(accel_optimizer_create(model, &oopts, &opt));
  EXPECT_OK(accel_accelerator_prepare_optimizer(acc, opt));
  accel_scheduler_options_init(&sopts, ACCEL_SCHED_LINEAR); /* LambdaLR(lambda n: 1 - n / 10) */
  sopts.start_factor = 1.0;
  sopts.end_factor = 0.0;
  sopts.total_iters = 10;
  EXPECT_OK(accel_scheduler_create(opt, &sopts, &sched));
  EXPECT_OK(accel_accelerator_prepare_scheduler(acc, sched));
  EXPECT_OK(accel_scheduler_step(sched));
  EXPECT_OK(accel_scheduler_get_last_lr(sched, &lr));
  EXPECT(fabs(lr - expected) < 1e-12);
  EXPECT_OK(accel_accelerator_accumulate_begin(acc, model)); /* a micro-step: the optimizer does not step */
  EXPECT_OK(accel_scheduler_step(sched));
  EXPECT_OK(accel_accelerator_accumulate_end(acc, model));
  EXPECT_OK(accel_scheduler_get_last_lr(sched, &lr));
  EXPECT(fabs(lr - expected) < 1e-12);
  accel_scheduler_free(sched);
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_accelerator_free(acc);
}

/* Items 15, 17, 19 on one process. */
static void checkpoints(void) {
  char project[] = "/tmp/accel_parity_XXXXXX";
  char path[512], want[512];
  const char* written = NULL;
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  int64_t missing = -1, unexpected = -1;
  if (mkdtemp(project) == NULL) {
    EXPECT(0);
    return;
  }
  acc = make_accelerator(project, 1);
  EXPECT_OK(accel_accelerator_last_checkpoint_dir(acc, &written));
  EXPECT(strcmp(written, "") == 0);
  EXPECT_OK(accel_model_from_json(kSpec, &model));
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));

  EXPECT_OK(accel_accelerator_save_state(acc, NULL));
  EXPECT_OK(accel_accelerator_last_checkpoint_dir(acc, &written));
  snprintf(want, sizeof want, "%s/checkpoints/checkpoint_0", project);
  EXPECT(strcmp(written, want) == 0);
  /* Back to 0, as a restarted run: the existing checkpoint_0 is an error naming it. */
  EXPECT_OK(accel_accelerator_set_save_iteration(acc, 0));
  EXPECT_ERROR(accel_accelerator_save_state(acc, NULL), ACCEL_ERR_INVALID_ARGUMENT, want);
  EXPECT_OK(accel_accelerator_last_checkpoint_dir(acc, &written));
  EXPECT(strcmp(written, want) == 0); /* unchanged by the failure */
  EXPECT_OK(accel_accelerator_set_save_iteration(acc, 7));
  EXPECT_OK(accel_accelerator_save_state(acc, NULL));
  EXPECT_OK(accel_accelerator_last_checkpoint_dir(acc, &written));
  snprintf(want, sizeof want, "%s/checkpoints/checkpoint_7", project);
  EXPECT(strcmp(written, want) == 0);
  EXPECT_ERROR(accel_accelerator_set_save_iteration(acc, -2), ACCEL_ERR_INVALID_ARGUMENT, "-2");

  /* Item 17: Hugging Face's packing in state_dict order, the index key-sorted. */
  snprintf(path, sizeof path, "%s/model", project);
  EXPECT_OK(accel_accelerator_save_model(acc, model, path, "130B", 1));
  snprintf(path, sizeof path, "%s/model/model.safetensors.index.json", project);
  EXPECT(strstr(read_text(path),
                "\"weight_map\": {\n    \"0.bias\": \"model-00002-of-00003.safetensors\",\n"
                "    \"0.weight\": \"model-00001-of-00003.safetensors\",\n") != NULL);
  EXPECT(strstr(read_text(path), "\"1.running_var\": \"model-00003-of-00003.safetensors\"") != NULL);
  /* Item 18: C has no defaults; strict 0 (Accelerate's) reports, strict 1 refuses. */
  snprintf(path, sizeof path, "%s/model/model-00001-of-00003.safetensors", project);
  EXPECT_OK(accel_accelerator_load_checkpoint_in_model(acc, model, path, 0, &missing, &unexpected));
  EXPECT(missing == 8 && unexpected == 0);
  EXPECT_ERROR(accel_accelerator_load_checkpoint_in_model(acc, model, path, 1, NULL, NULL), ACCEL_ERR_INVALID_ARGUMENT,
               "0.bias");

  /* Item 19: free_memory forgets the prepared model; save_state saves none. */
  EXPECT_OK(accel_accelerator_free_memory(acc));
  snprintf(path, sizeof path, "%s/after_free", project);
  EXPECT_OK(accel_accelerator_save_state(acc, path));
  snprintf(path, sizeof path, "%s/after_free/manifest.json", project);
  EXPECT(strstr(read_text(path), "\"models\": 0") != NULL);
  snprintf(path, sizeof path, "%s/after_free/model.safetensors", project);
  EXPECT(fopen(path, "rb") == NULL);
  accel_model_free(model);
  accel_accelerator_free(acc);
}

int main(int argc, char** argv) {
  const char* world = getenv("WORLD_SIZE");
  split = argc > 1 && strcmp(argv[1], "split") == 0;
  scheduler_steps();
  /* Item 14: the launcher's value wins over the code's. */
  if (world == NULL) {
    accel_accelerator* acc = NULL;
    int64_t steps = 0;
    setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "3", 1);
    acc = make_accelerator(NULL, 0);
    EXPECT_OK(accel_accelerator_gradient_accumulation_steps(acc, &steps));
    EXPECT(steps == 3);
    accel_accelerator_free(acc);
    setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "0", 1);
    EXPECT_ERROR(accel_accelerator_create(NULL, &acc), ACCEL_ERR_INVALID_ARGUMENT,
                 "ACCELERATE_GRADIENT_ACCUMULATION_STEPS=\"0\"");
    unsetenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS");
    checkpoints();
  }
  return capi_report("test_parity_api");
}
