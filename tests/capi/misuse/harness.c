/* The misuse test's shared parts (see misuse.h): the bad handles, the
   out-parameter sentinels, the fixtures and main, which runs every area. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "misuse.h"

int capi_checks = 0;
int capi_failures = 0;

/* ---- bad handles ------------------------------------------------------- */

void* bad[K_COUNT][NBAD];
static const char* const bad_names[NBAD] = {"NULL", "freed", "wrong kind", "garbage"};
unsigned char garbage[4096];
int bad_index = -1;

/* ---- out-parameters: sentinels that a failing call must leave alone ------ */

accel_tensor *t_out, *t_out2;
accel_accelerator* acc_out;
accel_model* model_out;
accel_optimizer* opt_out;
accel_scheduler* sched_out;
accel_dataset* ds_out;
accel_dataloader* dl_out;
accel_progress* prog_out;
accel_profile* prof_out;
accel_partial_state* state_out;
int i_out;
int64_t i64_out;
size_t sz_out;
double d_out;
const char* s_out;
accel_dtype dtype_out;
accel_distributed_type dist_out;
accel_mixed_precision mp_out;
accel_sharding_strategy shard_out;

void reset_outs(void) {
  t_out = t_out2 = (accel_tensor*)SENTINEL;
  acc_out = (accel_accelerator*)SENTINEL;
  model_out = (accel_model*)SENTINEL;
  opt_out = (accel_optimizer*)SENTINEL;
  sched_out = (accel_scheduler*)SENTINEL;
  ds_out = (accel_dataset*)SENTINEL;
  dl_out = (accel_dataloader*)SENTINEL;
  prog_out = (accel_progress*)SENTINEL;
  prof_out = (accel_profile*)SENTINEL;
  state_out = (accel_partial_state*)SENTINEL;
  i_out = -7777;
  i64_out = -7777;
  sz_out = 7777;
  d_out = -7777.0;
  s_out = (const char*)SENTINEL;
  dtype_out = (accel_dtype)77;
  dist_out = (accel_distributed_type)77;
  mp_out = (accel_mixed_precision)77;
  shard_out = (accel_sharding_strategy)77;
}
int outs_untouched(void) {
  return t_out == SENTINEL && t_out2 == SENTINEL && acc_out == SENTINEL && model_out == SENTINEL &&
         opt_out == SENTINEL && sched_out == SENTINEL && ds_out == SENTINEL && dl_out == SENTINEL &&
         prog_out == SENTINEL && prof_out == SENTINEL && state_out == SENTINEL && i_out == -7777 && i64_out == -7777 &&
         sz_out == 7777 && d_out == -7777.0 && s_out == SENTINEL && (int)dtype_out == 77 && (int)dist_out == 77 &&
         (int)mp_out == 77 && (int)shard_out == 77;
}

void expect_status(const char* file, int line, const char* call, accel_status got, accel_status want) {
  const char* message = accel_last_error();
  ++capi_checks;
  if (got != want || message == NULL || message[0] == '\0' || !outs_untouched()) {
    ++capi_failures;
    fprintf(stderr, "%s:%d: %s%s%s\n  want %s, got %s; message \"%s\"%s\n", file, line, call,
            bad_index >= 0 ? " with a handle that is " : "", bad_index >= 0 ? bad_names[bad_index] : "",
            accel_status_name(want), accel_status_name(got), message ? message : "(NULL)",
            outs_untouched() ? "" : "; an out-parameter was written");
  }
}

/* ---- fixtures ---------------------------------------------------------- */

char misuse_dir[64];
accel_accelerator* acc;
accel_tensor *tx, *ty, *scalar;
accel_model* model;
accel_optimizer* opt;
accel_scheduler* sched;
accel_dataset* ds;
accel_dataloader* dl;
accel_progress* prog;
accel_partial_state* pstate;

accel_bytes_writer* stale_writer;
accel_status remember_writer(void* user, accel_bytes_writer* writer) {
  (void)user;
  stale_writer = writer;
  return ACCEL_OK;
}
accel_status ignore_load(void* user, const void* data, size_t size) {
  (void)user;
  (void)data;
  (void)size;
  return ACCEL_OK;
}
accel_status ok_hook(void* user, const char* d) {
  (void)user;
  (void)d;
  return ACCEL_OK;
}
accel_status bogus_status_hook(void* user, const char* d) {
  (void)user;
  (void)d;
  return (accel_status)12345; /* not an accel_status: must become an error, not undefined behaviour */
}
accel_status never_length(void* user, int64_t* out) {
  (void)user;
  *out = 4;
  return ACCEL_OK;
}
accel_status never_sample(void* user, int64_t index, void* const* fields, const size_t* nbytes) {
  (void)user;
  (void)index;
  (void)fields;
  (void)nbytes;
  return ACCEL_OK;
}
accel_status never_next(void* user, void* const* fields, const size_t* nbytes, int* has_sample) {
  (void)user;
  (void)fields;
  (void)nbytes;
  *has_sample = 0;
  return ACCEL_OK;
}

accel_tensor* make_tensor(const int64_t* shape, size_t ndim) {
  float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  size_t n = 1;
  accel_tensor* t = NULL;
  for (size_t d = 0; d < ndim; ++d) n *= (size_t)shape[d];
  if (accel_tensor_from_buffer(data, n * sizeof(float), ACCEL_FLOAT32, shape, ndim, &t) != ACCEL_OK) {
    fprintf(stderr, "fixture tensor: %s\n", accel_last_error());
    exit(2);
  }
  return t;
}

const char* kLinear = "[{\"type\": \"Linear\", \"in_features\": 2, \"out_features\": 3}]";

static void setup(void) {
  accel_accelerator_options ao;
  accel_optimizer_options oo;
  accel_scheduler_options so;
  int64_t shape_x[2] = {4, 2}, shape_y[1] = {4};
  int64_t labels[4] = {0, 1, 2, 0};
  accel_accelerator* acc2;
  accel_tensor* t2;
  accel_model* m2;
  accel_optimizer* o2;
  accel_scheduler* s2;
  accel_dataset* d2;
  accel_dataloader* l2;
  accel_progress* p2;
  accel_profile* f2;
  accel_partial_state* ps2;

  strcpy(misuse_dir, "/tmp/accel_misuse_XXXXXX");
  if (mkdtemp(misuse_dir) == NULL) exit(2);
  accel_accelerator_options_init(&ao);
  ao.cpu = 1;
  ao.project_dir = misuse_dir;
  FIXTURE(accel_accelerator_create(&ao, &acc));
  tx = make_tensor(shape_x, 2);
  FIXTURE(accel_tensor_from_buffer(labels, sizeof labels, ACCEL_INT64, shape_y, 1, &ty));
  scalar = make_tensor(NULL, 0);
  FIXTURE(accel_model_from_json(kLinear, &model));
  accel_optimizer_options_init(&oo, ACCEL_OPTIM_SGD);
  FIXTURE(accel_optimizer_create(model, &oo, &opt));
  accel_scheduler_options_init(&so, ACCEL_SCHED_STEP);
  FIXTURE(accel_scheduler_create(opt, &so, &sched));
  FIXTURE(accel_dataset_from_tensors(tx, ty, &ds));
  FIXTURE(accel_dataloader_create(ds, NULL, &dl));
  FIXTURE(accel_progress_create(0, "misuse", 1, &prog));
  FIXTURE(accel_partial_state_create(NULL, &pstate));

  /* Freed handles last, so that no fixture above reuses their addresses. */
  FIXTURE(accel_accelerator_create(&ao, &acc2));
  t2 = make_tensor(shape_y, 1);
  FIXTURE(accel_model_from_json(kLinear, &m2));
  FIXTURE(accel_optimizer_create(m2, &oo, &o2));
  FIXTURE(accel_scheduler_create(o2, &so, &s2));
  FIXTURE(accel_dataset_from_tensors(tx, ty, &d2));
  FIXTURE(accel_dataloader_create(d2, NULL, &l2));
  FIXTURE(accel_progress_create(0, "freed", 1, &p2));
  FIXTURE(accel_profile_begin(acc2, misuse_dir, &f2));
  FIXTURE(accel_profile_end(f2)); /* frees it */
  FIXTURE(accel_partial_state_create(NULL, &ps2));
  accel_partial_state_free(ps2);
  accel_scheduler_free(s2);
  accel_optimizer_free(o2);
  accel_model_free(m2);
  accel_dataloader_free(l2);
  accel_dataset_free(d2);
  accel_tensor_free(t2);
  accel_progress_free(p2);
  accel_accelerator_free(acc2);

  {
    void* freed[K_COUNT] = {t2, acc2, m2, o2, s2, d2, l2, p2, f2, ps2};
    void* live[K_COUNT] = {tx, acc, model, opt, sched, ds, dl, prog, NULL, pstate};
    for (int k = 0; k < K_COUNT; ++k) {
      bad[k][0] = NULL;
      bad[k][1] = freed[k];
      bad[k][2] = live[k == K_TENSOR ? K_ACC : K_TENSOR]; /* another kind, alive */
      bad[k][3] = garbage + 64;
    }
  }
}

/* Freeing a handle of the wrong kind frees nothing: the handles still work. */
static void wrong_kind_frees(void) {
  accel_tensor_free((accel_tensor*)acc);
  accel_accelerator_free((accel_accelerator*)tx);
  accel_model_free((accel_model*)opt);
  accel_optimizer_free((accel_optimizer*)model);
  accel_scheduler_free((accel_scheduler*)ds);
  accel_dataset_free((accel_dataset*)sched);
  accel_dataloader_free((accel_dataloader*)prog);
  accel_progress_free((accel_progress*)dl);
  accel_profile_end((accel_profile*)tx);
  EXPECT_OK(accel_accelerator_num_processes(acc, &i_out));
  EXPECT_OK(accel_tensor_numel(tx, &i64_out));
  EXPECT_OK(accel_model_num_parameters(model, 0, &i64_out));
  EXPECT_OK(accel_optimizer_get_lr(opt, &d_out));
  EXPECT_OK(accel_scheduler_last_epoch(sched, &i64_out));
  EXPECT_OK(accel_dataset_size(ds, &i64_out));
  EXPECT_OK(accel_dataloader_num_batches(dl, &i64_out));
  EXPECT_OK(accel_progress_update(prog, 1));
}

int main(void) {
  setup();
  misuse_version_and_errors();
  misuse_tensors();
  misuse_accelerator();
  misuse_collective_lists();
  misuse_models();
  misuse_named_tensors();
  misuse_optimizers();
  misuse_schedulers();
  misuse_datasets();
  misuse_sequences();
  misuse_training();
  misuse_checkpoints();
  misuse_tracking();
  misuse_big_models();
  misuse_partial_states();
  wrong_kind_frees();
  accel_partial_state_free(pstate);
  accel_progress_free(prog);
  accel_dataloader_free(dl);
  accel_dataset_free(ds);
  accel_scheduler_free(sched);
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_tensor_free(scalar);
  accel_tensor_free(ty);
  accel_tensor_free(tx);
  accel_accelerator_free(acc);
  return capi_report("test_misuse");
}
