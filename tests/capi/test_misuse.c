/* Misuse of every function of the C ABI (accel.h and the area headers it
   includes: accel_model.h, accel_data.h, accel_checkpoint.h,
   accel_partial_state.h, accel_tracking.h, big_model.h), grouped by area
   below: NULL for every pointer, freed, wrong-kind and garbage
   handles, NULL out-parameters, enums out of range, sizes 0, negative and huge,
   and calls in the wrong order. Each must return an error status with a
   message (never crash, hang or abort) and leave the out-parameters untouched.

   Table-driven by macros: EACH_BAD(kind, type, var) runs a statement once per
   bad handle of a kind; ARG/STATE/FAILS check a call's status, its message and
   the out-parameter sentinels. check_misuse_coverage.cmake fails the suite
   when a function declared ACCEL_API in the headers is not named here. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test.h"

/* ---- bad handles ------------------------------------------------------- */

enum { K_TENSOR, K_ACC, K_MODEL, K_OPT, K_SCHED, K_DATASET, K_LOADER, K_PROGRESS, K_PROFILE, K_STATE, K_COUNT };
#define NBAD 4 /* NULL, freed, a live handle of another kind, a pointer to garbage */
static void* bad[K_COUNT][NBAD];
static const char* const bad_names[NBAD] = {"NULL", "freed", "wrong kind", "garbage"};
static unsigned char garbage[4096];
static int bad_index = -1; /* the variant EACH_BAD is running, for failure messages */

#define EACH_BAD(kind, type, var)                                                                     \
  for (int var##_i = 0; var##_i < NBAD; ++var##_i)                                                    \
    for (type* var = (type*)bad[kind][bad_index = var##_i], *var##_once = (type*)garbage; var##_once; \
         var##_once = NULL, bad_index = -1)

/* ---- out-parameters: sentinels that a failing call must leave alone ------ */

static accel_tensor *t_out, *t_out2;
static accel_accelerator* acc_out;
static accel_model* model_out;
static accel_optimizer* opt_out;
static accel_scheduler* sched_out;
static accel_dataset* ds_out;
static accel_dataloader* dl_out;
static accel_progress* prog_out;
static accel_profile* prof_out;
static accel_partial_state* state_out;
static int i_out;
static int64_t i64_out;
static size_t sz_out;
static double d_out;
static const char* s_out;
static accel_dtype dtype_out;
static accel_distributed_type dist_out;
static accel_mixed_precision mp_out;
static accel_sharding_strategy shard_out;

#define SENTINEL ((void*)(garbage + 1))
static void reset_outs(void) {
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
static int outs_untouched(void) {
  return t_out == SENTINEL && t_out2 == SENTINEL && acc_out == SENTINEL && model_out == SENTINEL &&
         opt_out == SENTINEL && sched_out == SENTINEL && ds_out == SENTINEL && dl_out == SENTINEL &&
         prog_out == SENTINEL && prof_out == SENTINEL && state_out == SENTINEL && i_out == -7777 && i64_out == -7777 &&
         sz_out == 7777 && d_out == -7777.0 && s_out == SENTINEL && (int)dtype_out == 77 && (int)dist_out == 77 &&
         (int)mp_out == 77 && (int)shard_out == 77;
}

static void expect_status(const char* call, int line, accel_status got, accel_status want) {
  const char* message = accel_last_error();
  ++capi_checks;
  if (got != want || message == NULL || message[0] == '\0' || !outs_untouched()) {
    ++capi_failures;
    fprintf(stderr, "test_misuse.c:%d: %s%s%s\n  want %s, got %s; message \"%s\"%s\n", line, call,
            bad_index >= 0 ? " with a handle that is " : "", bad_index >= 0 ? bad_names[bad_index] : "",
            accel_status_name(want), accel_status_name(got), message ? message : "(NULL)",
            outs_untouched() ? "" : "; an out-parameter was written");
  }
}

#define EXPECT_STATUS(want, call)                   \
  do {                                              \
    accel_set_error("");                            \
    reset_outs();                                   \
    expect_status(#call, __LINE__, (call), (want)); \
  } while (0)
#define ARG(call) EXPECT_STATUS(ACCEL_ERR_INVALID_ARGUMENT, call)
#define STATE(call) EXPECT_STATUS(ACCEL_ERR_STATE, call)
#define IO(call) EXPECT_STATUS(ACCEL_ERR_IO, call)

/* An enum value outside every accel_* enum (passed through int: C allows it). */
#define BAD_ENUM(type) ((type)9999)
#define NEG_ENUM(type) ((type)-5)

/* ---- fixtures ---------------------------------------------------------- */

static char dir[64];
static accel_accelerator* acc;
static accel_tensor *tx, *ty, *scalar;
static accel_model* model;
static accel_optimizer* opt;
static accel_scheduler* sched;
static accel_dataset* ds;
static accel_dataloader* dl;
static accel_progress* prog;
static accel_partial_state* pstate;

static accel_bytes_writer* stale_writer;
static accel_status remember_writer(void* user, accel_bytes_writer* writer) {
  (void)user;
  stale_writer = writer;
  return ACCEL_OK;
}
static accel_status ignore_load(void* user, const void* data, size_t size) {
  (void)user;
  (void)data;
  (void)size;
  return ACCEL_OK;
}
static accel_status ok_hook(void* user, const char* d) {
  (void)user;
  (void)d;
  return ACCEL_OK;
}
static accel_status bogus_status_hook(void* user, const char* d) {
  (void)user;
  (void)d;
  return (accel_status)12345; /* not an accel_status: must become an error, not undefined behaviour */
}
static accel_status never_length(void* user, int64_t* out) {
  (void)user;
  *out = 4;
  return ACCEL_OK;
}
static accel_status never_sample(void* user, int64_t index, void* const* fields, const size_t* nbytes) {
  (void)user;
  (void)index;
  (void)fields;
  (void)nbytes;
  return ACCEL_OK;
}
static accel_status never_next(void* user, void* const* fields, const size_t* nbytes, int* has_sample) {
  (void)user;
  (void)fields;
  (void)nbytes;
  *has_sample = 0;
  return ACCEL_OK;
}

static accel_tensor* make_tensor(const int64_t* shape, size_t ndim) {
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

#define FIXTURE(call)                                                        \
  do {                                                                       \
    if ((call) != ACCEL_OK) {                                                \
      fprintf(stderr, "fixture %s failed: %s\n", #call, accel_last_error()); \
      exit(2);                                                               \
    }                                                                        \
  } while (0)

static const char* kLinear = "[{\"type\": \"Linear\", \"in_features\": 2, \"out_features\": 3}]";

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

  strcpy(dir, "/tmp/accel_misuse_XXXXXX");
  if (mkdtemp(dir) == NULL) exit(2);
  accel_accelerator_options_init(&ao);
  ao.cpu = 1;
  ao.project_dir = dir;
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
  FIXTURE(accel_profile_begin(acc2, dir, &f2));
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

/* ---- the cases, one block per header section ---------------------------- */

static void version_and_errors(void) {
  EXPECT(accel_version() != NULL && strlen(accel_version()) >= 5);
  EXPECT(accel_version_number() == ACCEL_VERSION_NUMBER);
  EXPECT(accel_abi_version() == ACCEL_ABI_VERSION);
  EXPECT(accel_has_feature(BAD_ENUM(accel_feature)) == 0);
  EXPECT(accel_has_feature(NEG_ENUM(accel_feature)) == 0);
  EXPECT(accel_has_feature((accel_feature)0) == 0);
  EXPECT(strcmp(accel_status_name(BAD_ENUM(accel_status)), "ACCEL_ERR_UNKNOWN") == 0);
  EXPECT(strcmp(accel_status_name(NEG_ENUM(accel_status)), "ACCEL_ERR_UNKNOWN") == 0);
  EXPECT(strcmp(accel_status_name(ACCEL_ERR_RESOURCE), "ACCEL_ERR_RESOURCE") == 0);
  accel_set_error(NULL);
  EXPECT(accel_last_error() != NULL && accel_last_error()[0] == '\0');
  EXPECT(accel_dtype_size(BAD_ENUM(accel_dtype)) == 0);
  EXPECT(accel_dtype_size(NEG_ENUM(accel_dtype)) == 0);
  EXPECT(accel_dtype_size((accel_dtype)0) == 0);
}

static void tensors(void) {
  float data[8] = {0};
  int64_t shape[2] = {4, 2}, negative[2] = {-4, -2}, huge_rank[1] = {1};
  ARG(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, shape, 2, NULL));
  ARG(accel_tensor_from_buffer(NULL, sizeof data, ACCEL_FLOAT32, shape, 2, &t_out));
  ARG(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, NULL, 2, &t_out));
  ARG(accel_tensor_from_buffer(data, sizeof data, BAD_ENUM(accel_dtype), shape, 2, &t_out));
  ARG(accel_tensor_from_buffer(data, sizeof data, NEG_ENUM(accel_dtype), shape, 2, &t_out));
  ARG(accel_tensor_from_buffer(data, 0, ACCEL_FLOAT32, shape, 2, &t_out));
  ARG(accel_tensor_from_buffer(data, SIZE_MAX, ACCEL_FLOAT32, shape, 2, &t_out));
  ARG(accel_tensor_from_buffer(data, sizeof data, ACCEL_FLOAT32, negative, 2, &t_out));
  ARG(accel_tensor_from_buffer(data, 4, ACCEL_FLOAT32, huge_rank, SIZE_MAX, &t_out));

  EACH_BAD(K_TENSOR, accel_tensor, t) {
    ARG(accel_tensor_copy_to(t, data, sizeof data));
    ARG(accel_tensor_ndim(t, &sz_out));
    ARG(accel_tensor_shape(t, shape, 2));
    ARG(accel_tensor_dtype(t, &dtype_out));
    ARG(accel_tensor_numel(t, &i64_out));
    ARG(accel_tensor_argmax(t, 0, &t_out));
    ARG(accel_tensor_eq(t, tx, &t_out));
    ARG(accel_tensor_eq(tx, t, &t_out));
    ARG(accel_tensor_sum(t, &t_out));
    ARG(accel_tensor_item(t, &d_out));
    ARG(accel_tensor_softmax(t, 0, &t_out));
    ARG(accel_tensor_topk(t, 1, 0, &t_out, &t_out2));
    ARG(accel_tensor_mean(t, &t_out));
    ARG(accel_tensor_mean_dim(t, 0, &t_out));
    ARG(accel_tensor_reshape(t, shape, 2, &t_out));
    ARG(accel_tensor_narrow(t, 0, 0, 1, &t_out));
    ARG(accel_tensor_compare(t, tx, ACCEL_COMPARE_LT, &t_out));
    ARG(accel_tensor_compare(tx, t, ACCEL_COMPARE_LT, &t_out));
    accel_tensor_free(t); /* ignored */
  }
  ARG(accel_tensor_copy_to(tx, NULL, sizeof data));
  ARG(accel_tensor_copy_to(tx, data, 0));
  ARG(accel_tensor_copy_to(tx, data, SIZE_MAX));
  ARG(accel_tensor_ndim(tx, NULL));
  ARG(accel_tensor_shape(tx, NULL, 2));
  ARG(accel_tensor_dtype(tx, NULL));
  ARG(accel_tensor_numel(tx, NULL));
  ARG(accel_tensor_argmax(tx, 0, NULL));
  ARG(accel_tensor_argmax(tx, 2, &t_out));
  ARG(accel_tensor_argmax(tx, -3, &t_out));
  ARG(accel_tensor_argmax(tx, INT64_MAX, &t_out));
  ARG(accel_tensor_argmax(tx, INT64_MIN, &t_out));
  ARG(accel_tensor_argmax(scalar, 0, &t_out));
  ARG(accel_tensor_eq(tx, tx, NULL));
  ARG(accel_tensor_eq(tx, ty, &t_out)); /* [4,2] and [4] do not broadcast */
  ARG(accel_tensor_sum(tx, NULL));
  ARG(accel_tensor_item(tx, &d_out)); /* 8 elements */
  ARG(accel_tensor_item(scalar, NULL));
  /* The metric operations: NULL outs, dims out of range either way, an
     integer softmax, k past the dim, a wrong element count, a narrow past the
     end (and one whose start + length would overflow), an unknown op. */
  ARG(accel_tensor_softmax(tx, 1, NULL));
  ARG(accel_tensor_softmax(tx, 2, &t_out));
  ARG(accel_tensor_softmax(tx, INT64_MIN, &t_out));
  ARG(accel_tensor_softmax(ty, 0, &t_out));
  ARG(accel_tensor_softmax(scalar, 0, &t_out));
  ARG(accel_tensor_topk(tx, 1, 1, NULL, &t_out2));
  ARG(accel_tensor_topk(tx, 1, 1, &t_out, NULL));
  ARG(accel_tensor_topk(tx, 3, 1, &t_out, &t_out2));
  ARG(accel_tensor_topk(tx, -1, 1, &t_out, &t_out2));
  ARG(accel_tensor_topk(tx, 1, INT64_MAX, &t_out, &t_out2));
  ARG(accel_tensor_mean(tx, NULL));
  ARG(accel_tensor_mean_dim(tx, -3, &t_out));
  ARG(accel_tensor_mean_dim(tx, 0, NULL));
  {
    const int64_t seven[2] = {7, -1}, two_infer[2] = {-1, -1}, neg[2] = {-2, -4};
    const int64_t wraps[3] = {INT64_C(1) << 62, 4, 8}; /* the product overflows */
    ARG(accel_tensor_reshape(tx, seven, 2, &t_out));
    ARG(accel_tensor_reshape(tx, two_infer, 2, &t_out));
    ARG(accel_tensor_reshape(tx, neg, 2, &t_out));
    ARG(accel_tensor_reshape(tx, wraps, 3, &t_out));
    ARG(accel_tensor_reshape(tx, NULL, 2, &t_out));
    ARG(accel_tensor_reshape(tx, seven, SIZE_MAX, &t_out));
    ARG(accel_tensor_reshape(tx, seven, 2, NULL));
  }
  ARG(accel_tensor_narrow(tx, 0, 3, 2, &t_out));
  ARG(accel_tensor_narrow(tx, 0, -1, 1, &t_out));
  ARG(accel_tensor_narrow(tx, 0, 1, -1, &t_out));
  ARG(accel_tensor_narrow(tx, 0, 1, INT64_MAX, &t_out));
  ARG(accel_tensor_narrow(tx, 2, 0, 1, &t_out));
  ARG(accel_tensor_narrow(tx, 0, 0, 1, NULL));
  ARG(accel_tensor_compare(tx, ty, ACCEL_COMPARE_EQ, &t_out));
  ARG(accel_tensor_compare(tx, tx, BAD_ENUM(accel_compare_op), &t_out));
  ARG(accel_tensor_compare(tx, tx, NEG_ENUM(accel_compare_op), &t_out));
  ARG(accel_tensor_compare(tx, tx, ACCEL_COMPARE_GE, NULL));
  accel_tensor_free(NULL);
}

static void accelerator(void) {
  accel_accelerator_options o;
  accel_accelerator_options_init(NULL);
  ARG(accel_accelerator_create(NULL, NULL));
  ARG(accel_find_executable_batch_size(8, NULL, NULL, &i64_out));
  ARG(accel_find_executable_batch_size(-1, NULL, NULL, NULL));
#define BAD_OPTION(field, value)                 \
  do {                                           \
    accel_accelerator_options_init(&o);          \
    o.cpu = 1;                                   \
    o.field = value;                             \
    ARG(accel_accelerator_create(&o, &acc_out)); \
  } while (0)
  BAD_OPTION(struct_size, 0);
  BAD_OPTION(struct_size, 1);
  BAD_OPTION(struct_size, UINT32_MAX);
  BAD_OPTION(timeout_ms, 0);
  BAD_OPTION(timeout_ms, -1);
  BAD_OPTION(mixed_precision, BAD_ENUM(accel_mixed_precision));
  BAD_OPTION(mixed_precision, NEG_ENUM(accel_mixed_precision));
  BAD_OPTION(comm_hook, BAD_ENUM(accel_comm_hook));
  BAD_OPTION(comm_hook, NEG_ENUM(accel_comm_hook));
  BAD_OPTION(sharding_strategy, BAD_ENUM(accel_sharding_strategy));
  BAD_OPTION(sharding_strategy, NEG_ENUM(accel_sharding_strategy));
  BAD_OPTION(fsdp_min_num_params, -2);
  BAD_OPTION(fsdp_min_num_params, INT64_MIN);
  BAD_OPTION(fsdp_activation_checkpointing, 2);
  BAD_OPTION(fsdp_activation_checkpointing, -2);
  BAD_OPTION(fsdp_transformer_layer_cls_to_wrap, "");
  BAD_OPTION(fsdp_backward_prefetch, 2);
  BAD_OPTION(fsdp_backward_prefetch, -2);
  BAD_OPTION(fsdp_forward_prefetch, 2);
  BAD_OPTION(fsdp_forward_prefetch, INT32_MIN);
  BAD_OPTION(cpu_offload, 2);
  BAD_OPTION(cpu_offload, -7);
  BAD_OPTION(fsdp_state_dict_type, "LOCAL_STATE_DICT");
  BAD_OPTION(fsdp_state_dict_type, "");
  BAD_OPTION(fsdp_transformer_layer_cls_to_wrap, "GPT2Block,");
  BAD_OPTION(fsdp_transformer_layer_cls_to_wrap, ",GPT2Block");
  BAD_OPTION(autocast_cache_enabled, 2);
  BAD_OPTION(autocast_cache_enabled, -2);
  BAD_OPTION(backend, "nccl"); /* a CPU run */
  BAD_OPTION(backend, "smoke-signals");
  BAD_OPTION(init_method, "udp://host:1");
  BAD_OPTION(init_method, "tcp://host");
  BAD_OPTION(init_method, "tcp://host:0");
  BAD_OPTION(init_method, "tcp://host:65536");
  BAD_OPTION(init_method, "tcp://:29500");
  BAD_OPTION(rng_types, "torch,dice");
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.backend = "mpi";
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_UNSUPPORTED, "backend \"mpi\"");
  o.backend = NULL;
  o.init_method = "file:///tmp/rendezvous";
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_UNSUPPORTED, "file:///tmp/rendezvous");
  o.init_method = NULL;
  o.rng_types = "torch,npu";
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_UNSUPPORTED, "\"npu\"");
  BAD_OPTION(parallelism_tp_size, -1);
  BAD_OPTION(parallelism_dp_shard_size, INT64_MIN);
  BAD_OPTION(parallelism_tp_size, 2); /* one process: the product is not the world size */
  BAD_OPTION(parallelism_dp_replicate_size, 3);
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.parallelism_cp_size = 1;
  o.parallelism_tp_size = 1; /* a mesh of one on one process is fine */
  EXPECT_OK(accel_accelerator_create(&o, &acc_out));
  {
    int64_t replicate = 0, shard = 0, tp = 0, cp = 0;
    EXPECT_OK(accel_accelerator_parallelism_config(acc_out, &replicate, &shard, &tp, &cp));
    EXPECT(replicate == 1 && shard == 1 && tp == 1 && cp == 1);
    EXPECT_OK(accel_accelerator_parallelism_config(acc_out, NULL, NULL, &tp, NULL)); /* any out may be NULL */
    EXPECT_OK(accel_accelerator_parallelism_ranks(acc_out, &replicate, &shard, &tp, &cp));
    EXPECT(replicate == 0 && shard == 0 && tp == 0 && cp == 0);
    EXPECT_OK(accel_accelerator_parallelism_ranks(acc_out, NULL, NULL, NULL, NULL));
  }
  accel_accelerator_free(acc_out);
  acc_out = NULL;
  o.parallelism_cp_size = 2; /* one process: the product is not the world size */
  o.parallelism_dp_replicate_size = 0;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_INVALID_ARGUMENT, "x cp_size 2 x");
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.sharding_strategy = ACCEL_SHARDING_SHARD_GRAD_OP;
  o.fsdp_activation_checkpointing = 1;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_UNSUPPORTED, "fsdp_activation_checkpointing");
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.sharding_strategy = ACCEL_SHARDING_NO_SHARD;
  o.cpu_offload = 1;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_UNSUPPORTED, "sharding_strategy is NO_SHARD");
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.sharding_strategy = ACCEL_SHARDING_FULL_SHARD;
  o.comm_hook = ACCEL_COMM_HOOK_FP16;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_UNSUPPORTED, "FULL_SHARD");
  o.sharding_strategy = ACCEL_SHARDING_HYBRID_SHARD;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_UNSUPPORTED, "HYBRID_SHARD");
  o.comm_hook = ACCEL_COMM_HOOK_NONE;
  o.sharding_strategy = (accel_sharding_strategy)5; /* one past HYBRID_SHARD */
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_INVALID_ARGUMENT, "5");
  o.sharding_strategy = ACCEL_SHARDING_SHARD_GRAD_OP;
  o.comm_hook = ACCEL_COMM_HOOK_BF16;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_UNSUPPORTED, "SHARD_GRAD_OP");
  BAD_OPTION(bucket_cap_mb, 0.0);
  BAD_OPTION(bucket_cap_mb, -1.0);
  BAD_OPTION(bucket_cap_mb, NAN);
  BAD_OPTION(first_bucket_cap_mb, -1.0);
  BAD_OPTION(gradient_accumulation_steps, -1);
  BAD_OPTION(gradient_accumulation_steps, INT64_MIN);
  BAD_OPTION(total_limit, -1);
  BAD_OPTION(dispatch_batches, -2);
  BAD_OPTION(dispatch_batches, INT32_MIN);
  BAD_OPTION(data_seed, -2);
  BAD_OPTION(data_seed, INT64_MIN);
  BAD_OPTION(scaler_init_scale, 0.0);
  BAD_OPTION(scaler_init_scale, -1.0);
  BAD_OPTION(scaler_init_scale, INFINITY);
  BAD_OPTION(scaler_init_scale, NAN);
  BAD_OPTION(scaler_growth_factor, 1.0);
  BAD_OPTION(scaler_growth_factor, 0.5);
  BAD_OPTION(scaler_growth_factor, 0.0);
  BAD_OPTION(scaler_growth_factor, INFINITY);
  BAD_OPTION(scaler_growth_factor, NAN);
  BAD_OPTION(scaler_backoff_factor, 1.0);
  BAD_OPTION(scaler_backoff_factor, 2.0);
  BAD_OPTION(scaler_backoff_factor, 0.0);
  BAD_OPTION(scaler_backoff_factor, -0.5);
  BAD_OPTION(scaler_backoff_factor, NAN);
  BAD_OPTION(scaler_growth_interval, 0);
  BAD_OPTION(scaler_growth_interval, -5);
#undef BAD_OPTION
  /* The message names the option and the value. */
  accel_accelerator_options_init(&o);
  o.cpu = 1;
  o.scaler_growth_factor = 0.5;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_INVALID_ARGUMENT, "scaler_growth_factor");
  EXPECT(strstr(accel_last_error(), "0.5") != NULL);
  o.scaler_growth_factor = 2.0;
  o.scaler_backoff_factor = 1.0;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_INVALID_ARGUMENT, "scaler_backoff_factor");
  o.scaler_backoff_factor = 0.5;
  o.scaler_growth_interval = 0;
  EXPECT_ERROR(accel_accelerator_create(&o, &acc_out), ACCEL_ERR_INVALID_ARGUMENT, "scaler_growth_interval");

  EACH_BAD(K_ACC, accel_accelerator, a) {
    ARG(accel_accelerator_process_index(a, &i_out));
    ARG(accel_accelerator_local_process_index(a, &i_out));
    ARG(accel_accelerator_num_processes(a, &i_out));
    ARG(accel_accelerator_is_main_process(a, &i_out));
    ARG(accel_accelerator_is_local_main_process(a, &i_out));
    ARG(accel_accelerator_distributed_type(a, &dist_out));
    ARG(accel_accelerator_mixed_precision(a, &mp_out));
    ARG(accel_accelerator_device(a, &s_out));
    ARG(accel_accelerator_timeout_ms(a, &i64_out));
    ARG(accel_accelerator_sharding_strategy(a, &shard_out));
    ARG(accel_accelerator_cpu_offload(a, &i_out));
    ARG(accel_accelerator_parallelism_config(a, &i64_out, &i64_out, &i64_out, &i64_out));
    ARG(accel_accelerator_parallelism_ranks(a, &i64_out, &i64_out, &i64_out, &i64_out));
    ARG(accel_accelerator_held_bytes(a, model, opt, &i64_out, &i64_out, &i64_out));
    ARG(accel_accelerator_wait_for_everyone(a));
    ARG(accel_accelerator_print(a, "hello"));
    ARG(accel_accelerator_set_seed(a, 1));
    ARG(accel_accelerator_set_seed_ext(a, 1, 1, 0));
    ARG(accel_accelerator_gather(a, tx, &t_out));
    ARG(accel_accelerator_gather_for_metrics(a, tx, &t_out));
    ARG(accel_accelerator_reduce(a, tx, ACCEL_REDUCE_SUM, &t_out));
    ARG(accel_accelerator_broadcast(a, tx, 0, &t_out));
    ARG(accel_accelerator_pad_across_processes(a, tx, 0, 0.0, 0, &t_out));
    ARG(accel_accelerator_gather_object(a, "x", 1, &t_out, &t_out2));
    ARG(accel_accelerator_split_between_processes(a, tx, 0, &t_out));
    ARG(accel_accelerator_set_trigger(a));
    ARG(accel_accelerator_check_trigger(a, &i_out));
    ARG(accel_accelerator_main_process_first_begin(a));
    ARG(accel_accelerator_main_process_first_end(a));
    ARG(accel_accelerator_local_main_process_first_begin(a));
    ARG(accel_accelerator_local_main_process_first_end(a));
    ARG(accel_accelerator_free_memory(a));
    accel_accelerator_free(a); /* ignored */
  }
  EACH_BAD(K_TENSOR, accel_tensor, t) {
    ARG(accel_accelerator_gather(acc, t, &t_out));
    ARG(accel_accelerator_gather_for_metrics(acc, t, &t_out));
    ARG(accel_accelerator_reduce(acc, t, ACCEL_REDUCE_SUM, &t_out));
    ARG(accel_accelerator_broadcast(acc, t, 0, &t_out));
    ARG(accel_accelerator_pad_across_processes(acc, t, 0, 0.0, 0, &t_out));
    ARG(accel_accelerator_split_between_processes(acc, t, 0, &t_out));
  }
  ARG(accel_accelerator_process_index(acc, NULL));
  ARG(accel_accelerator_local_process_index(acc, NULL));
  ARG(accel_accelerator_num_processes(acc, NULL));
  ARG(accel_accelerator_is_main_process(acc, NULL));
  ARG(accel_accelerator_is_local_main_process(acc, NULL));
  ARG(accel_accelerator_distributed_type(acc, NULL));
  ARG(accel_accelerator_mixed_precision(acc, NULL));
  ARG(accel_accelerator_device(acc, NULL));
  ARG(accel_accelerator_timeout_ms(acc, NULL));
  ARG(accel_accelerator_sharding_strategy(acc, NULL));
  ARG(accel_accelerator_cpu_offload(acc, NULL));
  ARG(accel_accelerator_held_bytes(acc, NULL, opt, &i64_out, &i64_out, &i64_out));
  ARG(accel_accelerator_held_bytes(acc, model, opt, NULL, &i64_out, &i64_out));
  ARG(accel_accelerator_held_bytes(acc, model, NULL, &i64_out, &i64_out, NULL));
  ARG(accel_accelerator_print(acc, NULL));
  ARG(accel_accelerator_gather(acc, tx, NULL));
  ARG(accel_accelerator_gather_for_metrics(acc, tx, NULL));
  ARG(accel_accelerator_reduce(acc, tx, ACCEL_REDUCE_SUM, NULL));
  ARG(accel_accelerator_reduce(acc, tx, BAD_ENUM(accel_reduce_op), &t_out));
  ARG(accel_accelerator_reduce(acc, tx, NEG_ENUM(accel_reduce_op), &t_out));
  ARG(accel_accelerator_broadcast(acc, tx, 0, NULL));
  ARG(accel_accelerator_broadcast(acc, tx, -1, &t_out));
  ARG(accel_accelerator_broadcast(acc, tx, 1, &t_out)); /* one process */
  ARG(accel_accelerator_broadcast(acc, tx, INT32_MAX, &t_out));
  ARG(accel_accelerator_pad_across_processes(acc, tx, 0, 0.0, 0, NULL));
  ARG(accel_accelerator_pad_across_processes(acc, tx, -3, 0.0, 0, &t_out));
  ARG(accel_accelerator_pad_across_processes(acc, tx, INT64_MIN, 0.0, 0, &t_out));
  ARG(accel_accelerator_pad_across_processes(acc, scalar, -1, 0.0, 0, &t_out));
  ARG(accel_accelerator_gather_object(acc, NULL, 1, &t_out, &t_out2));
  ARG(accel_accelerator_gather_object(acc, NULL, SIZE_MAX, &t_out, &t_out2));
  ARG(accel_accelerator_gather_object(acc, "x", 1, NULL, &t_out2));
  ARG(accel_accelerator_gather_object(acc, "x", 1, &t_out, NULL));
  ARG(accel_accelerator_split_between_processes(acc, tx, 0, NULL));
  ARG(accel_accelerator_split_between_processes(acc, scalar, 0, &t_out));
  ARG(accel_accelerator_check_trigger(acc, NULL));
  /* _end without _begin is a STATE error for every scope (and enters no barrier). */
  STATE(accel_accelerator_main_process_first_end(acc));
  STATE(accel_accelerator_local_main_process_first_end(acc));
  EXPECT_OK(accel_accelerator_main_process_first_begin(acc));
  EXPECT_OK(accel_accelerator_main_process_first_end(acc));
  STATE(accel_accelerator_main_process_first_end(acc));
  EXPECT_OK(accel_accelerator_local_main_process_first_begin(acc));
  EXPECT_OK(accel_accelerator_local_main_process_first_end(acc));
  STATE(accel_accelerator_local_main_process_first_end(acc));
  accel_accelerator_free(NULL);
}

/* Lists of tensors and the other collective helpers (nested structures in the
   bindings). A bad element is named by its index; out is all or nothing. */
static void collective_lists(void) {
  const accel_tensor* one[1];
  one[0] = tx;
  EACH_BAD(K_ACC, accel_accelerator, a) {
    ARG(accel_accelerator_gather_tensors(a, one, 1, &t_out));
    ARG(accel_accelerator_gather_for_metrics_tensors(a, one, 1, &t_out));
    ARG(accel_accelerator_reduce_tensors(a, one, 1, ACCEL_REDUCE_SUM, 1.0, &t_out));
    ARG(accel_accelerator_broadcast_tensors(a, one, 1, 0, &t_out));
    ARG(accel_accelerator_pad_across_processes_tensors(a, one, 1, 0, 0.0, 0, &t_out));
    ARG(accel_accelerator_split_between_processes_tensors(a, one, 1, 0, &t_out));
    ARG(accel_accelerator_metrics_length(a, 1, &i64_out));
    ARG(accel_accelerator_debug_mode(a, &i_out));
    ARG(accel_accelerator_broadcast_object(a, "x", 1, 0, &t_out));
    ARG(accel_accelerator_split_range(a, 3, 0, &i64_out, &i64_out, &i64_out));
  }
  EACH_BAD(K_TENSOR, accel_tensor, t) {
    /* The bad one second: nothing is published for the good first one either. */
    const accel_tensor* two[2];
    accel_tensor* pair[2] = {(accel_tensor*)SENTINEL, (accel_tensor*)SENTINEL};
    two[0] = tx;
    two[1] = t;
    ARG(accel_accelerator_gather_tensors(acc, two, 2, pair));
    ARG(accel_accelerator_gather_for_metrics_tensors(acc, two, 2, pair));
    ARG(accel_accelerator_reduce_tensors(acc, two, 2, ACCEL_REDUCE_SUM, 1.0, pair));
    ARG(accel_accelerator_broadcast_tensors(acc, two, 2, 0, pair));
    ARG(accel_accelerator_pad_across_processes_tensors(acc, two, 2, 0, 0.0, 0, pair));
    ARG(accel_accelerator_split_between_processes_tensors(acc, two, 2, 0, pair));
    EXPECT(pair[0] == SENTINEL && pair[1] == SENTINEL);
    EXPECT(strstr(accel_last_error(), "tensors[1]") != NULL);
  }
  ARG(accel_accelerator_gather_tensors(acc, NULL, 1, &t_out));
  ARG(accel_accelerator_gather_tensors(acc, one, 1, NULL));
  ARG(accel_accelerator_gather_for_metrics_tensors(acc, NULL, 1, &t_out));
  ARG(accel_accelerator_gather_for_metrics_tensors(acc, one, 1, NULL));
  ARG(accel_accelerator_reduce_tensors(acc, one, 1, ACCEL_REDUCE_SUM, 1.0, NULL));
  ARG(accel_accelerator_reduce_tensors(acc, one, 1, BAD_ENUM(accel_reduce_op), 1.0, &t_out));
  ARG(accel_accelerator_reduce_tensors(acc, one, 1, NEG_ENUM(accel_reduce_op), 1.0, &t_out));
  ARG(accel_accelerator_reduce_tensors(acc, one, 1, ACCEL_REDUCE_SUM, NAN, &t_out));
  ARG(accel_accelerator_reduce_tensors(acc, one, 1, ACCEL_REDUCE_SUM, INFINITY, &t_out));
  ARG(accel_accelerator_broadcast_tensors(acc, one, 1, 0, NULL));
  ARG(accel_accelerator_broadcast_tensors(acc, one, 1, 1, &t_out)); /* one process */
  ARG(accel_accelerator_broadcast_tensors(acc, one, 1, -1, &t_out));
  ARG(accel_accelerator_pad_across_processes_tensors(acc, one, 1, 0, 0.0, 0, NULL));
  ARG(accel_accelerator_pad_across_processes_tensors(acc, one, 1, -3, 0.0, 0, &t_out));
  ARG(accel_accelerator_split_between_processes_tensors(acc, one, 1, 0, NULL));
  ARG(accel_accelerator_split_between_processes_tensors(acc, NULL, 1, 0, &t_out));
  {
    const int64_t two_rows[2] = {2, 2};
    accel_tensor* short_one = make_tensor(two_rows, 2);
    const accel_tensor* rows_differ[2];
    accel_tensor* pair[2] = {(accel_tensor*)SENTINEL, (accel_tensor*)SENTINEL};
    rows_differ[0] = tx; /* 4 rows */
    rows_differ[1] = short_one;
    ARG(accel_accelerator_split_between_processes_tensors(acc, rows_differ, 2, 0, pair));
    EXPECT(pair[0] == SENTINEL && pair[1] == SENTINEL);
    EXPECT(strstr(accel_last_error(), "2 rows") != NULL);
    rows_differ[1] = scalar;
    ARG(accel_accelerator_split_between_processes_tensors(acc, rows_differ, 2, 0, pair));
    accel_tensor_free(short_one);
  }
  /* count 0: nothing to do, NULL arrays allowed. */
  EXPECT_OK(accel_accelerator_gather_tensors(acc, NULL, 0, NULL));
  EXPECT_OK(accel_accelerator_reduce_tensors(acc, NULL, 0, ACCEL_REDUCE_MEAN, 1.0, NULL));
  EXPECT_OK(accel_accelerator_split_between_processes_tensors(acc, NULL, 0, 1, NULL));
  ARG(accel_accelerator_metrics_length(acc, -1, &i64_out));
  ARG(accel_accelerator_metrics_length(acc, 1, NULL));
  ARG(accel_accelerator_debug_mode(acc, NULL));
  ARG(accel_accelerator_broadcast_object(acc, NULL, 1, 0, &t_out));
  ARG(accel_accelerator_broadcast_object(acc, "x", 1, 0, NULL));
  ARG(accel_accelerator_broadcast_object(acc, "x", 1, 1, &t_out)); /* one process */
  ARG(accel_accelerator_broadcast_object(acc, "x", 1, -1, &t_out));
  ARG(accel_accelerator_split_range(acc, -1, 0, &i64_out, &i64_out, &i64_out));
  ARG(accel_accelerator_split_range(acc, 3, 0, NULL, &i64_out, &i64_out));
  ARG(accel_accelerator_split_range(acc, 3, 0, &i64_out, NULL, &i64_out));
  ARG(accel_accelerator_split_range(acc, 3, 0, &i64_out, &i64_out, NULL));
}

static void models(void) {
  float x[6] = {0};
  int64_t wrong[2] = {2, 3};
  accel_tensor* wrong_input;
  ARG(accel_model_from_torchscript(NULL, &model_out));
  ARG(accel_model_from_torchscript("model.pt", NULL));
  IO(accel_model_from_torchscript("/nonexistent/model.pt", &model_out));
  ARG(accel_model_from_torchscript("", &model_out));
  ARG(accel_model_from_json(NULL, &model_out));
  ARG(accel_model_from_json(kLinear, NULL));
  ARG(accel_model_from_json("", &model_out));
  ARG(accel_model_from_json("not json", &model_out));
  ARG(accel_model_from_json("[{\"type\": \"Linear\", \"in_features\": -2, \"out_features\": 3}]", &model_out));
  ARG(accel_model_from_json("[{\"type\": \"Nope\"}]", &model_out));
  ARG(accel_model_from_json("{\"layers\": 5}", &model_out));
  EACH_BAD(K_MODEL, accel_model, m) {
    ARG(accel_model_forward(m, tx, &t_out));
    ARG(accel_model_train(m, 1));
    ARG(accel_model_num_parameters(m, 0, &i64_out));
    accel_model_free(m); /* ignored */
  }
  EACH_BAD(K_TENSOR, accel_tensor, t) {
    ARG(accel_model_forward(model, t, &t_out));
    ARG(accel_loss(ACCEL_LOSS_MSE, t, tx, &t_out));
    ARG(accel_loss(ACCEL_LOSS_MSE, tx, t, &t_out));
  }
  ARG(accel_model_forward(model, tx, NULL));
  FIXTURE(accel_tensor_from_buffer(x, sizeof x, ACCEL_FLOAT32, wrong, 2, &wrong_input));
  ARG(accel_model_forward(model, wrong_input, &t_out)); /* 3 features into Linear(2, 3) */
  ARG(accel_model_forward(model, ty, &t_out));          /* int64 [4] */
  ARG(accel_model_num_parameters(model, 0, NULL));
  ARG(accel_loss(ACCEL_LOSS_MSE, tx, tx, NULL));
  ARG(accel_loss(BAD_ENUM(accel_loss_kind), tx, tx, &t_out));
  ARG(accel_loss(NEG_ENUM(accel_loss_kind), tx, tx, &t_out));
  ARG(accel_loss((accel_loss_kind)0, tx, tx, &t_out));
  ARG(accel_loss(ACCEL_LOSS_MSE, tx, wrong_input, &t_out));
  ARG(accel_loss(ACCEL_LOSS_CROSS_ENTROPY, tx, tx, &t_out)); /* float targets */
  ARG(accel_loss(ACCEL_LOSS_NLL, ty, ty, &t_out));
  ARG(accel_loss(ACCEL_LOSS_BCE_WITH_LOGITS, tx, ty, &t_out));
  ARG(accel_loss(ACCEL_LOSS_CAUSAL_LM, tx, tx, &t_out)); /* float labels */
  {
    accel_loss_options lo;
    accel_loss_options_init(NULL);
    accel_loss_options_init(&lo);
    EACH_BAD(K_TENSOR, accel_tensor, t) {
      ARG(accel_loss_ext(ACCEL_LOSS_MSE, t, tx, &lo, &t_out));
      ARG(accel_loss_ext(ACCEL_LOSS_MSE, tx, t, &lo, &t_out));
    }
    ARG(accel_loss_ext(ACCEL_LOSS_MSE, tx, tx, &lo, NULL));
    ARG(accel_loss_ext(BAD_ENUM(accel_loss_kind), tx, tx, &lo, &t_out));
    ARG(accel_loss_ext(NEG_ENUM(accel_loss_kind), tx, tx, &lo, &t_out));
    lo.struct_size = 0;
    ARG(accel_loss_ext(ACCEL_LOSS_MSE, tx, tx, &lo, &t_out));
    lo.struct_size = UINT32_MAX;
    ARG(accel_loss_ext(ACCEL_LOSS_MSE, tx, tx, &lo, &t_out));
    accel_loss_options_init(&lo);
    lo.label_smoothing = -0.5;
    ARG(accel_loss_ext(ACCEL_LOSS_CROSS_ENTROPY, tx, ty, &lo, &t_out));
    lo.label_smoothing = NAN; /* outside [0, 1] too */
    ARG(accel_loss_ext(ACCEL_LOSS_CROSS_ENTROPY, tx, ty, &lo, &t_out));
    accel_loss_options_init(&lo);
    lo.ignore_index = 1;
    ARG(accel_loss_ext(ACCEL_LOSS_BCE_WITH_LOGITS, tx, tx, &lo, &t_out));
  }
  accel_tensor_free(wrong_input);
  accel_model_free(NULL);
}

/* accel_tensor_map and the named model calls. Its out-parameter is checked
   here, beside outs_untouched's. */
static accel_tensor_map* nt_out;
#define NT_ARG(call)                                                                    \
  do {                                                                                  \
    nt_out = (accel_tensor_map*)SENTINEL;                                               \
    ARG(call);                                                                          \
    if (nt_out != SENTINEL) EXPECT(!"an accel_tensor_map** out-parameter was written"); \
  } while (0)

static void named_tensors(void) {
  accel_tensor_map *map, *freed, *outputs;
  char* report = NULL;
  const char* names[2] = {"loss", NULL};
  FIXTURE(accel_tensor_map_create(&map));
  FIXTURE(accel_tensor_map_create(&freed));
  accel_tensor_map_free(freed);
  {
    void* bad_maps[4] = {NULL, freed, tx, garbage};
    for (int i = 0; i < 4; ++i) {
      accel_tensor_map* m = (accel_tensor_map*)bad_maps[i];
      ARG(accel_tensor_map_set(m, "x", tx));
      ARG(accel_tensor_map_count(m, &sz_out));
      ARG(accel_tensor_map_name_at(m, 0, &s_out));
      ARG(accel_tensor_map_get(m, "x", &t_out));
      NT_ARG(accel_model_forward_named(model, m, &nt_out));
      ARG(accel_model_load_state_dict(model, m, 1));
      ARG(accel_model_load_state_dict_report(model, m, 1, &report));
      NT_ARG(accel_accelerator_send_map_to_device(acc, m, &nt_out));
      accel_tensor_map_free(m); /* ignored */
    }
  }
  NT_ARG(accel_tensor_map_create(NULL));
  ARG(accel_tensor_map_set(map, NULL, tx));
  ARG(accel_tensor_map_set(map, "", tx));
  EACH_BAD(K_TENSOR, accel_tensor, t) { ARG(accel_tensor_map_set(map, "x", t)); }
  ARG(accel_tensor_map_count(map, NULL));
  ARG(accel_tensor_map_name_at(map, 0, &s_out)); /* empty */
  ARG(accel_tensor_map_get(map, "x", &t_out));   /* empty: names "none" */
  ARG(accel_tensor_map_get(map, NULL, &t_out));
  FIXTURE(accel_tensor_map_set(map, "x", tx));
  ARG(accel_tensor_map_name_at(map, 1, &s_out));
  ARG(accel_tensor_map_name_at(map, 0, NULL));
  ARG(accel_tensor_map_get(map, "y", &t_out));
  ARG(accel_tensor_map_get(map, "x", NULL));
  EACH_BAD(K_MODEL, accel_model, m) {
    NT_ARG(accel_model_forward_named(m, map, &nt_out));
    NT_ARG(accel_model_named_parameters(m, &nt_out));
    NT_ARG(accel_model_named_buffers(m, &nt_out));
    ARG(accel_model_load_state_dict(m, map, 0));
    ARG(accel_model_load_state_dict_report(m, map, 0, &report));
  }
  ARG(accel_model_load_state_dict_report(model, map, 0, NULL));
  ARG(accel_model_load_state_dict_report(model, map, 1, &report)); /* "x" is unexpected */
  if (report != NULL) EXPECT(!"a failed load_state_dict_report wrote its report");
  EACH_BAD(K_ACC, accel_accelerator, a) NT_ARG(accel_accelerator_send_map_to_device(a, map, &nt_out));
  NT_ARG(accel_accelerator_send_map_to_device(acc, map, NULL));
  ARG(accel_model_load_state_dict(model, map, 1)); /* "x" is no parameter; the model's are missing */
  NT_ARG(accel_model_forward_named(model, map, NULL));
  NT_ARG(accel_model_named_parameters(model, NULL));
  NT_ARG(accel_model_named_buffers(model, NULL));
  FIXTURE(accel_tensor_map_set(map, "x2", tx));
  NT_ARG(accel_model_forward_named(model, map, &nt_out)); /* a JSON model takes one input */
  FIXTURE(accel_tensor_map_create(&outputs));
  NT_ARG(accel_model_forward_named(model, outputs, &nt_out)); /* no inputs */
  accel_tensor_map_free(outputs);
  ARG(accel_model_from_torchscript_outputs(NULL, names, 1, &model_out));
  ARG(accel_model_from_torchscript_outputs("model.pt", names, 1, NULL));
  ARG(accel_model_from_torchscript_outputs("model.pt", NULL, 1, &model_out));
  ARG(accel_model_from_torchscript_outputs("model.pt", names, 2, &model_out)); /* names[1] is NULL */
  IO(accel_model_from_torchscript_outputs("/nonexistent/model.pt", names, 1, &model_out));
  ARG(accel_model_from_torchscript_empty(NULL, NULL, 0, &model_out));
  ARG(accel_model_from_torchscript_empty("model.pt", NULL, 0, NULL));
  ARG(accel_model_from_torchscript_empty("model.pt", NULL, 1, &model_out));
  ARG(accel_model_from_torchscript_empty("model.pt", names, 2, &model_out)); /* names[1] is NULL */
  IO(accel_model_from_torchscript_empty("/nonexistent/model.pt", NULL, 0, &model_out));
  accel_tensor_map_free(map);
  accel_tensor_map_free(NULL);
}

static void optimizers(void) {
  accel_optimizer_options o;
  accel_optimizer_options_init(NULL, ACCEL_OPTIM_SGD);
  accel_optimizer_options_init(&o, BAD_ENUM(accel_optimizer_kind));
  ARG(accel_optimizer_create(model, &o, &opt_out));
  accel_optimizer_options_init(&o, NEG_ENUM(accel_optimizer_kind));
  ARG(accel_optimizer_create(model, &o, &opt_out));
  accel_optimizer_options_init(&o, ACCEL_OPTIM_ADAM);
  EACH_BAD(K_MODEL, accel_model, m) ARG(accel_optimizer_create(m, &o, &opt_out));
  ARG(accel_optimizer_create(model, NULL, &opt_out));
  ARG(accel_optimizer_create(model, &o, NULL));
#define BAD_OPTION(kind, field, value)                \
  do {                                                \
    accel_optimizer_options_init(&o, kind);           \
    o.field = value;                                  \
    ARG(accel_optimizer_create(model, &o, &opt_out)); \
  } while (0)
  BAD_OPTION(ACCEL_OPTIM_ADAM, struct_size, 0);
  BAD_OPTION(ACCEL_OPTIM_ADAM, struct_size, UINT32_MAX);
  BAD_OPTION(ACCEL_OPTIM_ADAM, kind, BAD_ENUM(accel_optimizer_kind));
  BAD_OPTION(ACCEL_OPTIM_ADAM, lr, -1.0);
  BAD_OPTION(ACCEL_OPTIM_ADAM, lr, NAN);
  BAD_OPTION(ACCEL_OPTIM_ADAM, eps, -1.0);
  BAD_OPTION(ACCEL_OPTIM_ADAM, beta1, 1.5);
  BAD_OPTION(ACCEL_OPTIM_ADAM, beta2, -0.1);
  BAD_OPTION(ACCEL_OPTIM_ADAMW, weight_decay, -1.0);
  BAD_OPTION(ACCEL_OPTIM_SGD, momentum, -1.0);
  BAD_OPTION(ACCEL_OPTIM_RMSPROP, alpha, -1.0);
  BAD_OPTION(ACCEL_OPTIM_ADAGRAD, lr_decay, -1.0);
  BAD_OPTION(ACCEL_OPTIM_ADAMW, momentum, 0.9); /* not an AdamW option */
#undef BAD_OPTION
  EACH_BAD(K_OPT, accel_optimizer, p) {
    ARG(accel_optimizer_step(p));
    ARG(accel_optimizer_zero_grad(p));
    ARG(accel_optimizer_get_lr(p, &d_out));
    ARG(accel_optimizer_set_lr(p, 0.1));
    ARG(accel_optimizer_step_was_skipped(p, &i_out));
    accel_optimizer_free(p); /* ignored */
  }
  ARG(accel_optimizer_get_lr(opt, NULL));
  ARG(accel_optimizer_set_lr(opt, -1.0));
  ARG(accel_optimizer_set_lr(opt, NAN));
  ARG(accel_optimizer_step_was_skipped(opt, NULL));
  accel_optimizer_free(NULL);
}

static void schedulers(void) {
  accel_scheduler_options o;
  accel_scheduler_options_init(NULL, ACCEL_SCHED_STEP);
  accel_scheduler_options_init(&o, BAD_ENUM(accel_scheduler_kind));
  ARG(accel_scheduler_create(opt, &o, &sched_out));
  accel_scheduler_options_init(&o, NEG_ENUM(accel_scheduler_kind));
  ARG(accel_scheduler_create(opt, &o, &sched_out));
  accel_scheduler_options_init(&o, ACCEL_SCHED_STEP);
  EACH_BAD(K_OPT, accel_optimizer, p) ARG(accel_scheduler_create(p, &o, &sched_out));
  ARG(accel_scheduler_create(opt, NULL, &sched_out));
  ARG(accel_scheduler_create(opt, &o, NULL));
#define BAD_OPTION(kind, field, value)                \
  do {                                                \
    accel_scheduler_options_init(&o, kind);           \
    o.field = value;                                  \
    ARG(accel_scheduler_create(opt, &o, &sched_out)); \
  } while (0)
  BAD_OPTION(ACCEL_SCHED_STEP, struct_size, 0);
  BAD_OPTION(ACCEL_SCHED_STEP, struct_size, UINT32_MAX);
  BAD_OPTION(ACCEL_SCHED_STEP, step_size, 0);
  BAD_OPTION(ACCEL_SCHED_STEP, step_size, -1);
  BAD_OPTION(ACCEL_SCHED_MULTI_STEP, num_milestones, 3); /* milestones NULL */
  BAD_OPTION(ACCEL_SCHED_MULTI_STEP, num_milestones, SIZE_MAX);
  BAD_OPTION(ACCEL_SCHED_COSINE_ANNEALING, t_max, 0);
  BAD_OPTION(ACCEL_SCHED_LINEAR, total_iters, -1);
  BAD_OPTION(ACCEL_SCHED_ONE_CYCLE, total_steps, 0);
  BAD_OPTION(ACCEL_SCHED_LINEAR_WARMUP, num_training_steps, -1);
  BAD_OPTION(ACCEL_SCHED_REDUCE_ON_PLATEAU, factor, 1.5);
#undef BAD_OPTION
  EACH_BAD(K_SCHED, accel_scheduler, s) {
    ARG(accel_scheduler_step(s));
    ARG(accel_scheduler_step_metric(s, 1.0));
    ARG(accel_scheduler_get_last_lr(s, &d_out));
    ARG(accel_scheduler_last_epoch(s, &i64_out));
    accel_scheduler_free(s); /* ignored */
  }
  ARG(accel_scheduler_get_last_lr(sched, NULL));
  ARG(accel_scheduler_last_epoch(sched, NULL));
  accel_scheduler_free(NULL);
}

static void datasets(void) {
  const char* names[2] = {"x", NULL};
  int64_t zero_shape[1] = {0}, negative_shape[1] = {-3}, ok_shape[1] = {2};
  accel_field_spec field = {ACCEL_FLOAT32, 1, ok_shape};
  accel_dataset_callbacks cb;
  accel_stream_callbacks sc;
  accel_dataloader_options lo;
  accel_tensor* batch[2];
  accel_dataset_callbacks_init(NULL);
  accel_stream_callbacks_init(NULL);
  accel_dataloader_options_init(NULL);

  EACH_BAD(K_TENSOR, accel_tensor, t) {
    ARG(accel_dataset_from_tensors(t, ty, &ds_out));
    ARG(accel_dataset_from_tensors(tx, t, &ds_out));
  }
  ARG(accel_dataset_from_tensors(tx, ty, NULL));
  ARG(accel_dataset_from_tensors(scalar, ty, &ds_out)); /* no dim 0 */
  ARG(accel_dataset_from_tensors(tx, scalar, &ds_out));
  ARG(accel_dataset_from_idx(NULL, "labels", 0.0, 1.0, &ds_out));
  ARG(accel_dataset_from_idx("images", NULL, 0.0, 1.0, &ds_out));
  ARG(accel_dataset_from_idx("images", "labels", 0.0, 1.0, NULL));
  IO(accel_dataset_from_idx("/nonexistent/images", "/nonexistent/labels", 0.0, 1.0, &ds_out));
  ARG(accel_dataset_from_csv(NULL, "label", ACCEL_INT64, &ds_out));
  ARG(accel_dataset_from_csv("x.csv", NULL, ACCEL_INT64, &ds_out));
  ARG(accel_dataset_from_csv("x.csv", "label", ACCEL_INT64, NULL));
  ARG(accel_dataset_from_csv("x.csv", "label", BAD_ENUM(accel_dtype), &ds_out));
  ARG(accel_dataset_from_csv("x.csv", "label", NEG_ENUM(accel_dtype), &ds_out));
  IO(accel_dataset_from_csv("/nonexistent/x.csv", "label", ACCEL_INT64, &ds_out));
  ARG(accel_dataset_from_safetensors(NULL, names, 1, &ds_out));
  ARG(accel_dataset_from_safetensors(dir, NULL, 1, &ds_out));
  ARG(accel_dataset_from_safetensors(dir, names, 0, &ds_out));
  ARG(accel_dataset_from_safetensors(dir, names, -1, &ds_out));
  ARG(accel_dataset_from_safetensors(dir, names, 2, &ds_out)); /* names[1] is NULL */
  ARG(accel_dataset_from_safetensors(dir, names, 1, NULL));
  IO(accel_dataset_from_safetensors("/nonexistent", names, 1, &ds_out));

  accel_dataset_callbacks_init(&cb);
  cb.length = never_length;
  cb.get_sample = never_sample;
  ARG(accel_dataset_from_callbacks(&field, 1, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_callbacks(NULL, 1, &cb, NULL, &ds_out));
  ARG(accel_dataset_from_callbacks(&field, 0, &cb, NULL, &ds_out));
  ARG(accel_dataset_from_callbacks(&field, -1, &cb, NULL, &ds_out));
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, NULL));
  field.dtype = BAD_ENUM(accel_dtype);
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.dtype = NEG_ENUM(accel_dtype);
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.dtype = ACCEL_FLOAT32;
  field.ndim = -1;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.ndim = 1000;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.ndim = 1;
  field.shape = NULL;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.shape = zero_shape;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.shape = negative_shape;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  field.shape = ok_shape;
  cb.struct_size = 0;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out));
  accel_dataset_callbacks_init(&cb);
  cb.get_sample = never_sample;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out)); /* no length */
  accel_dataset_callbacks_init(&cb);
  cb.length = never_length;
  ARG(accel_dataset_from_callbacks(&field, 1, &cb, NULL, &ds_out)); /* no get_sample */

  accel_stream_callbacks_init(&sc);
  ARG(accel_dataset_from_stream(&field, 1, &sc, NULL, &ds_out)); /* no next_sample */
  sc.next_sample = never_next;
  ARG(accel_dataset_from_stream(&field, 1, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_stream(NULL, 1, &sc, NULL, &ds_out));
  ARG(accel_dataset_from_stream(&field, 0, &sc, NULL, &ds_out));
  ARG(accel_dataset_from_stream(&field, 1, &sc, NULL, NULL));
  field.shape = negative_shape;
  ARG(accel_dataset_from_stream(&field, 1, &sc, NULL, &ds_out));
  field.shape = ok_shape;
  sc.struct_size = UINT32_MAX;
  ARG(accel_dataset_from_stream(&field, 1, &sc, NULL, &ds_out));

  EACH_BAD(K_DATASET, accel_dataset, d) {
    ARG(accel_dataset_size(d, &i64_out));
    ARG(accel_dataset_is_iterable(d, &i_out));
    ARG(accel_dataloader_create(d, NULL, &dl_out));
    accel_dataset_free(d); /* ignored */
  }
  ARG(accel_dataset_size(ds, NULL));
  ARG(accel_dataset_is_iterable(ds, NULL));
  ARG(accel_dataloader_create(ds, NULL, NULL));
#define BAD_OPTION(field_name, value)               \
  do {                                              \
    accel_dataloader_options_init(&lo);             \
    lo.field_name = value;                          \
    ARG(accel_dataloader_create(ds, &lo, &dl_out)); \
  } while (0)
  BAD_OPTION(struct_size, 0);
  BAD_OPTION(struct_size, UINT32_MAX);
  BAD_OPTION(batch_size, 0);
  BAD_OPTION(batch_size, -1);
  BAD_OPTION(batch_size, INT64_MIN);
  BAD_OPTION(num_workers, -1);
  BAD_OPTION(num_workers, 257);
  BAD_OPTION(num_workers, 1000000);
  BAD_OPTION(num_workers, INT32_MAX);
  BAD_OPTION(prefetch_factor, 0);
  BAD_OPTION(prefetch_factor, -1);
#undef BAD_OPTION
  accel_dataloader_options_init(&lo);
  lo.num_workers = 1000000;
  EXPECT_ERROR(accel_dataloader_create(ds, &lo, &dl_out), ACCEL_ERR_INVALID_ARGUMENT, "1000000");
  {
    const int64_t idx[3] = {0, 1, 1000000}, lens[2] = {2, 1}, zero_len[2] = {2, 0}, neg_len[1] = {-3};
    EACH_BAD(K_DATASET, accel_dataset, d) { ARG(accel_dataloader_create_from_batches(d, idx, lens, 1, NULL, &dl_out)); }
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, 1, NULL, NULL));
    ARG(accel_dataloader_create_from_batches(ds, NULL, lens, 1, NULL, &dl_out));
    ARG(accel_dataloader_create_from_batches(ds, idx, NULL, 1, NULL, &dl_out));
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, -1, NULL, &dl_out));
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, INT64_MIN, NULL, &dl_out));
    ARG(accel_dataloader_create_from_batches(ds, idx, zero_len, 2, NULL, &dl_out));
    EXPECT_ERROR(accel_dataloader_create_from_batches(ds, idx, neg_len, 1, NULL, &dl_out), ACCEL_ERR_INVALID_ARGUMENT,
                 "-3");
    EXPECT_ERROR(accel_dataloader_create_from_batches(ds, idx, lens, 2, NULL, &dl_out), ACCEL_ERR_INVALID_ARGUMENT,
                 "1000000"); /* index outside the dataset */
    accel_dataloader_options_init(&lo);
    lo.shuffle = 1;
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, 1, &lo, &dl_out));
    accel_dataloader_options_init(&lo);
    lo.batch_size = -1;
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, 1, &lo, &dl_out));
    lo.batch_size = 1;
    lo.struct_size = UINT32_MAX;
    ARG(accel_dataloader_create_from_batches(ds, idx, lens, 1, &lo, &dl_out));
  }

  EACH_BAD(K_LOADER, accel_dataloader, l) {
    ARG(accel_dataloader_next(l, &t_out, &t_out2));
    ARG(accel_dataloader_next_fields(l, batch, 2, &i_out));
    ARG(accel_dataloader_num_batches(l, &i64_out));
    ARG(accel_dataloader_skip_first_batches(l, 0, &dl_out));
    ARG(accel_dataloader_set_epoch(l, 0));
    ARG(accel_dataloader_set_progress(l, "epoch"));
    {
      const int64_t one_index[1] = {0}, one_length[1] = {1};
      uint64_t epoch = 0;
      ARG(accel_dataloader_epoch(l, &epoch));
      ARG(accel_dataloader_set_batches(l, one_index, one_length, 1));
    }
    accel_dataloader_free(l); /* ignored */
  }
  {
    /* set_batches: a plain loader has no batch sampler to replace; bad arrays
       and a started epoch are refused with the batches left as they were. */
    const int64_t idx[3] = {0, 1, 1000000}, lens[2] = {2, 1}, zero_len[2] = {2, 0};
    accel_dataloader* sampled = NULL;
    uint64_t epoch = 99;
    EXPECT_ERROR(accel_dataloader_set_batches(dl, idx, lens, 1), ACCEL_ERR_STATE, "not made from a batch sampler");
    ARG(accel_dataloader_epoch(dl, NULL));
    EXPECT_OK(accel_dataloader_epoch(dl, &epoch));
    EXPECT(epoch == 0);
    EXPECT_OK(accel_dataloader_create_from_batches(ds, idx, lens, 1, NULL, &sampled));
    ARG(accel_dataloader_set_batches(sampled, NULL, lens, 1));
    ARG(accel_dataloader_set_batches(sampled, idx, NULL, 1));
    ARG(accel_dataloader_set_batches(sampled, idx, lens, -1));
    ARG(accel_dataloader_set_batches(sampled, idx, lens, INT64_MIN));
    ARG(accel_dataloader_set_batches(sampled, idx, zero_len, 2));
    EXPECT_ERROR(accel_dataloader_set_batches(sampled, idx, lens, 2), ACCEL_ERR_INVALID_ARGUMENT, "1000000");
    {
      accel_tensor *x = NULL, *y = NULL;
      int64_t rows = 0;
      EXPECT_OK(accel_dataloader_next(sampled, &x, &y)); /* the first batch: samples 0 and 1 */
      EXPECT(y != NULL && accel_tensor_numel(y, &rows) == ACCEL_OK && rows == 2);
      accel_tensor_free(x);
      accel_tensor_free(y);
    }
    EXPECT_ERROR(accel_dataloader_set_batches(sampled, idx, lens, 1), ACCEL_ERR_STATE, "an epoch is in progress");
    accel_dataloader_free(sampled);
  }
  ARG(accel_dataloader_next(dl, NULL, &t_out2));
  ARG(accel_dataloader_next(dl, &t_out, NULL));
  ARG(accel_dataloader_next_fields(dl, NULL, 2, &i_out));
  ARG(accel_dataloader_next_fields(dl, batch, 2, NULL));
  ARG(accel_dataloader_next_fields(dl, batch, 0, &i_out));
  ARG(accel_dataloader_next_fields(dl, batch, -1, &i_out));
  ARG(accel_dataloader_next_fields(dl, batch, INT32_MIN, &i_out));
  ARG(accel_dataloader_next_fields(dl, batch, 1, &i_out)); /* two fields: nothing consumed */
  ARG(accel_dataloader_num_batches(dl, NULL));
  ARG(accel_dataloader_skip_first_batches(dl, 0, NULL));
  ARG(accel_dataloader_skip_first_batches(dl, -1, &dl_out));
  ARG(accel_dataloader_skip_first_batches(dl, INT64_MIN, &dl_out));
  {
    /* The capacity error consumed nothing: the first batch is still sample 0. */
    accel_tensor *x = NULL, *y = NULL;
    int64_t first = -1;
    EXPECT_OK(accel_dataloader_next(dl, &x, &y));
    EXPECT(y != NULL && accel_tensor_copy_to(y, &first, sizeof first) == ACCEL_OK && first == 0);
    accel_tensor_free(x);
    accel_tensor_free(y);
    EXPECT_OK(accel_dataloader_set_epoch(dl, 0));
    EXPECT_OK(accel_dataloader_set_progress(dl, NULL)); /* off, as it was */
  }
  accel_dataset_free(NULL);
  accel_dataloader_free(NULL);
}

/* Token sequences, padding and collate datasets, length-grouped loaders, field names. */
static accel_status collate_nothing(void* user, const accel_tensor* const* ids, const accel_tensor* const* labels,
                                    size_t n, accel_tensor** fields, size_t num_fields) {
  (void)user;
  (void)ids;
  (void)labels;
  (void)n;
  (void)fields;
  (void)num_fields;
  accel_set_error("collate_nothing refuses");
  return ACCEL_ERR_INVALID_ARGUMENT;
}
static void sequences(void) {
  const int64_t ids[3] = {1, 2, 3}, offsets[3] = {0, 1, 3}, bad_offsets[3] = {0, 2, 1}, neg[1] = {-4};
  const char* names[2] = {"input_ids", NULL};
  const char* got[4];
  accel_sequences *seq = NULL, *freed = NULL, *seq_out = NULL;
  accel_sequences* bad_seqs[4];
  accel_padding_options po;
  accel_dataloader_options lo;
  accel_dataset* padded = NULL;
  int b;
  accel_padding_options_init(NULL);
  accel_padding_options_init(&po);
  EXPECT_OK(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, 0, &seq));
  EXPECT_OK(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, 0, &freed));
  accel_sequences_free(freed);
  bad_seqs[0] = NULL;
  bad_seqs[1] = freed;
  bad_seqs[2] = (accel_sequences*)ds;
  bad_seqs[3] = (accel_sequences*)(void*)garbage;
  for (b = 0; b < 4; ++b) {
    bad_index = b;
    ARG(accel_sequences_count(bad_seqs[b], &i64_out));
    ARG(accel_sequences_length(bad_seqs[b], 0, &i64_out));
    ARG(accel_sequences_get(bad_seqs[b], 0, &t_out, &t_out2));
    ARG(accel_dataset_from_sequences(bad_seqs[b], NULL, &ds_out));
    ARG(accel_dataset_from_sequences_collate(bad_seqs[b], names, 1, collate_nothing, NULL, NULL, &ds_out));
    accel_sequences_free(bad_seqs[b]); /* ignored */
  }
  bad_index = -1;
  seq_out = (accel_sequences*)SENTINEL;
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, 0, NULL));
  ARG(accel_sequences_from_arrays(NULL, 3, offsets, 3, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, NULL, 3, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 2, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, bad_offsets, 3, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 1, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, -1, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, NULL, 0, 3, &seq_out)); /* id 3 >= vocab 3 */
  ARG(accel_sequences_from_arrays(neg, 1, offsets, 2, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_arrays(ids, 3, offsets, 3, ids, 1, 0, &seq_out)); /* labels: neither 2 nor 3 */
  ARG(accel_sequences_from_jsonl(NULL, "input_ids", NULL, 0, &seq_out));
  ARG(accel_sequences_from_jsonl("x.jsonl", "input_ids", NULL, 0, NULL));
  ARG(accel_sequences_from_jsonl("x.jsonl", "input_ids", NULL, -1, &seq_out));
  IO(accel_sequences_from_jsonl("/nonexistent/x.jsonl", "input_ids", NULL, 0, &seq_out));
  ARG(accel_sequences_from_text(NULL, ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text("x.txt", ACCEL_TEXT_LINES, NULL, 0, 0, NULL));
  ARG(accel_sequences_from_text("x.txt", BAD_ENUM(accel_text_split), NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text("x.txt", NEG_ENUM(accel_text_split), NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text("x.txt", ACCEL_TEXT_CHUNKS, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text("x.txt", ACCEL_TEXT_CHUNKS, NULL, 4, -1, &seq_out));
  ARG(accel_sequences_from_text("x.txt", ACCEL_TEXT_SEPARATOR, "", 0, 0, &seq_out));
  IO(accel_sequences_from_text("/nonexistent/x.txt", ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab(NULL, "v.txt", ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", NULL, ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", ACCEL_TEXT_LINES, NULL, 0, 0, NULL));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", BAD_ENUM(accel_text_split), NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", ACCEL_TEXT_CHUNKS, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", ACCEL_TEXT_CHUNKS, NULL, 4, -1, &seq_out));
  ARG(accel_sequences_from_text_vocab("x.txt", "v.txt", ACCEL_TEXT_SEPARATOR, "", 0, 0, &seq_out));
  IO(accel_sequences_from_text_vocab("x.txt", "/nonexistent/v.txt", ACCEL_TEXT_LINES, NULL, 0, 0, &seq_out));
  ARG(accel_sequences_from_safetensors(NULL, NULL, NULL, NULL, 0, &seq_out));
  ARG(accel_sequences_from_safetensors("x.safetensors", NULL, NULL, NULL, 0, NULL));
  IO(accel_sequences_from_safetensors("/nonexistent/x.safetensors", NULL, NULL, NULL, 0, &seq_out));
  EXPECT(seq_out == (accel_sequences*)SENTINEL);
  ARG(accel_sequences_count(seq, NULL));
  ARG(accel_sequences_length(seq, 0, NULL));
  ARG(accel_sequences_length(seq, 2, &i64_out));
  ARG(accel_sequences_length(seq, -1, &i64_out));
  ARG(accel_sequences_length(seq, INT64_MIN, &i64_out));
  ARG(accel_sequences_get(seq, 0, NULL, &t_out2));
  ARG(accel_sequences_get(seq, 2, &t_out, &t_out2));
  ARG(accel_sequences_get(seq, -1, &t_out, NULL));
  {
    accel_sequences* labelled = NULL;
    EXPECT_OK(accel_sequences_from_arrays(ids, 3, offsets, 3, ids, 2, 0, &labelled));
    ARG(accel_sequences_get(labelled, 0, &t_out, NULL)); /* labels exist: the out-parameter is required */
    accel_sequences_free(labelled);
  }

  ARG(accel_dataset_from_sequences(seq, NULL, NULL));
  po.pad_id = -1;
  ARG(accel_dataset_from_sequences(seq, &po, &ds_out));
  accel_padding_options_init(&po);
  po.max_length = -2;
  ARG(accel_dataset_from_sequences(seq, &po, &ds_out));
  accel_padding_options_init(&po);
  po.pad_to_multiple_of = INT64_MIN;
  ARG(accel_dataset_from_sequences(seq, &po, &ds_out));
  accel_padding_options_init(&po);
  po.struct_size = UINT32_MAX;
  ARG(accel_dataset_from_sequences(seq, &po, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, names, 1, NULL, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, NULL, 1, collate_nothing, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, names, 0, collate_nothing, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, names, -1, collate_nothing, NULL, NULL, &ds_out));
  ARG(accel_dataset_from_sequences_collate(seq, names, 2, collate_nothing, NULL, NULL, &ds_out)); /* NULL name */
  ARG(accel_dataset_from_sequences_collate(seq, names, 1, collate_nothing, NULL, NULL, NULL));
  {
    const char* twice[2] = {"a", "a"};
    const char* empty[1] = {""};
    ARG(accel_dataset_from_sequences_collate(seq, twice, 2, collate_nothing, NULL, NULL, &ds_out));
    ARG(accel_dataset_from_sequences_collate(seq, empty, 1, collate_nothing, NULL, NULL, &ds_out));
  }

  EXPECT_OK(accel_dataset_from_sequences(seq, NULL, &padded));
  accel_dataloader_options_init(&lo);
  EACH_BAD(K_DATASET, accel_dataset, d) { ARG(accel_dataloader_create_length_grouped(d, &lo, &dl_out)); }
  ARG(accel_dataloader_create_length_grouped(ds, &lo, &dl_out)); /* not a sequence dataset */
  ARG(accel_dataloader_create_length_grouped(padded, &lo, NULL));
  lo.shuffle = 1;
  ARG(accel_dataloader_create_length_grouped(padded, &lo, &dl_out));
  lo.shuffle = 0;
  lo.batch_size = 0;
  ARG(accel_dataloader_create_length_grouped(padded, &lo, &dl_out));
  lo.batch_size = 1;
  lo.num_workers = -1;
  ARG(accel_dataloader_create_length_grouped(padded, &lo, &dl_out));
  lo.num_workers = 0;
  lo.struct_size = UINT32_MAX;
  ARG(accel_dataloader_create_length_grouped(padded, &lo, &dl_out));

  EACH_BAD(K_LOADER, accel_dataloader, l) { ARG(accel_dataloader_field_names(l, got, 4, &i_out)); }
  ARG(accel_dataloader_field_names(dl, got, 4, NULL));
  ARG(accel_dataloader_field_names(dl, NULL, 4, &i_out));
  {
    accel_dataloader* named = NULL;
    EXPECT_OK(accel_dataloader_create(padded, NULL, &named));
    ARG(accel_dataloader_field_names(named, got, 2, &i_out)); /* three names */
    ARG(accel_dataloader_field_names(named, got, -1, &i_out));
    EXPECT_OK(accel_dataloader_field_names(dl, NULL, 0, &i_out)); /* positional fields: no names */
    EXPECT(i_out == 0);
    accel_dataloader_free(named);
  }
  accel_dataset_free(padded);
  accel_sequences_free(NULL);
  accel_sequences_free(seq);
}

static void training(void) {
  accel_tensor *out = NULL, *loss = NULL;
  EACH_BAD(K_ACC, accel_accelerator, a) {
    ARG(accel_accelerator_prepare_model(a, model));
    ARG(accel_accelerator_prepare_optimizer(a, opt));
    ARG(accel_accelerator_prepare_dataloader(a, dl));
    ARG(accel_accelerator_prepare_scheduler(a, sched));
    ARG(accel_accelerator_backward(a, tx));
    ARG(accel_accelerator_accumulate_begin(a, model));
    ARG(accel_accelerator_accumulate_end(a, model));
    ARG(accel_accelerator_end_of_dataloader(a, &i_out));
    ARG(accel_accelerator_remainder(a, &i64_out));
    ARG(accel_accelerator_sync_gradients(a, &i_out));
    ARG(accel_accelerator_gradient_accumulation_steps(a, &i64_out));
    ARG(accel_accelerator_accumulation_step(a, &i64_out));
    ARG(accel_accelerator_set_sync_gradients(a, 1));
    ARG(accel_accelerator_set_gradient_accumulation_steps(a, 2));
    ARG(accel_accelerator_split_batches(a, &i_out));
    ARG(accel_accelerator_even_batches(a, &i_out));
    ARG(accel_accelerator_set_even_batches(a, 1));
    ARG(accel_accelerator_dispatch_batches(a, &i_out));
    ARG(accel_accelerator_use_seedable_sampler(a, &i_out));
    ARG(accel_accelerator_data_seed(a, &i64_out));
    ARG(accel_accelerator_non_blocking(a, &i_out));
    ARG(accel_accelerator_use_stateful_dataloader(a, &i_out));
    ARG(accel_accelerator_synchronize_rng_states(a, "torch"));
    ARG(accel_accelerator_no_sync_begin(a, model));
    ARG(accel_accelerator_no_sync_end(a, model));
    ARG(accel_accelerator_average_parameters(a, model));
    ARG(accel_accelerator_trigger_sync_in_backward(a, model));
    ARG(accel_accelerator_clip_grad_norm(a, model, 1.0, 2.0, &d_out));
    ARG(accel_accelerator_clip_grad_value(a, model, 1.0));
    ARG(accel_accelerator_unscale_gradients(a, opt));
    ARG(accel_accelerator_loss_scale(a, &d_out));
    ARG(accel_accelerator_join_uneven_inputs_begin(a));
    ARG(accel_accelerator_join_uneven_inputs_end(a));
    ARG(accel_accelerator_autocast_begin(a, 1));
    ARG(accel_accelerator_autocast_end(a));
    ARG(accel_accelerator_no_grad_begin(a));
    ARG(accel_accelerator_no_grad_end(a));
    ARG(accel_accelerator_send_to_device(a, tx, &t_out));
  }
  EACH_BAD(K_MODEL, accel_model, m) {
    ARG(accel_accelerator_prepare_model(acc, m));
    ARG(accel_accelerator_accumulate_begin(acc, m));
    ARG(accel_accelerator_accumulate_end(acc, m));
    ARG(accel_accelerator_no_sync_begin(acc, m));
    ARG(accel_accelerator_no_sync_end(acc, m));
    ARG(accel_accelerator_average_parameters(acc, m));
    ARG(accel_accelerator_trigger_sync_in_backward(acc, m));
    ARG(accel_accelerator_clip_grad_norm(acc, m, 1.0, 2.0, &d_out));
    ARG(accel_accelerator_clip_grad_value(acc, m, 1.0));
  }
  EACH_BAD(K_OPT, accel_optimizer, p) {
    ARG(accel_accelerator_prepare_optimizer(acc, p));
    ARG(accel_accelerator_unscale_gradients(acc, p));
  }
  EACH_BAD(K_LOADER, accel_dataloader, l) ARG(accel_accelerator_prepare_dataloader(acc, l));
  EACH_BAD(K_SCHED, accel_scheduler, s) ARG(accel_accelerator_prepare_scheduler(acc, s));
  EACH_BAD(K_TENSOR, accel_tensor, t) ARG(accel_accelerator_backward(acc, t));
  ARG(accel_accelerator_end_of_dataloader(acc, NULL));
  ARG(accel_accelerator_remainder(acc, NULL));
  ARG(accel_accelerator_sync_gradients(acc, NULL));
  ARG(accel_accelerator_gradient_accumulation_steps(acc, NULL));
  ARG(accel_accelerator_accumulation_step(acc, NULL));
  ARG(accel_accelerator_set_gradient_accumulation_steps(acc, 0));
  ARG(accel_accelerator_set_gradient_accumulation_steps(acc, INT64_MIN));
  ARG(accel_accelerator_split_batches(acc, NULL));
  ARG(accel_accelerator_even_batches(acc, NULL));
  ARG(accel_accelerator_dispatch_batches(acc, NULL));
  ARG(accel_accelerator_use_seedable_sampler(acc, NULL));
  ARG(accel_accelerator_data_seed(acc, NULL));
  ARG(accel_accelerator_non_blocking(acc, NULL));
  ARG(accel_accelerator_use_stateful_dataloader(acc, NULL));
  ARG(accel_accelerator_synchronize_rng_states(acc, NULL));
  ARG(accel_accelerator_synchronize_rng_states(acc, "torch,dice"));
  EXPECT_ERROR(accel_accelerator_synchronize_rng_states(acc, "xla"), ACCEL_ERR_UNSUPPORTED, "\"xla\"");
  ARG(accel_accelerator_autocast_begin(acc, 2));
  ARG(accel_accelerator_autocast_begin(acc, -2));
  ARG(accel_accelerator_loss_scale(acc, NULL));
  ARG(accel_accelerator_backward(acc, tx)); /* 8 elements, no grad */

  /* Scopes: every _end without its _begin is STATE, and a closed scope stays closed. */
  STATE(accel_accelerator_accumulate_end(acc, model));
  STATE(accel_accelerator_no_sync_end(acc, model));
  STATE(accel_accelerator_join_uneven_inputs_end(acc));
  STATE(accel_accelerator_autocast_end(acc));
  STATE(accel_accelerator_no_grad_end(acc));
  EXPECT_OK(accel_accelerator_no_grad_begin(acc));
  EXPECT_OK(accel_accelerator_no_grad_end(acc));
  STATE(accel_accelerator_no_grad_end(acc));
  EACH_BAD(K_TENSOR, accel_tensor, t) ARG(accel_accelerator_send_to_device(acc, t, &t_out));
  ARG(accel_accelerator_send_to_device(acc, tx, NULL));
  EXPECT_OK(accel_accelerator_accumulate_begin(acc, model));
  EXPECT_OK(accel_accelerator_accumulate_end(acc, model));
  STATE(accel_accelerator_accumulate_end(acc, model));
  {
    accel_model* unprepared = NULL;
    EXPECT_OK(accel_model_from_json(kLinear, &unprepared));
    ARG(accel_accelerator_average_parameters(acc, unprepared)); /* LocalSGD needs a prepared model */
    accel_model_free(unprepared);
  }
  EXPECT_OK(accel_accelerator_no_sync_begin(acc, model));
  STATE(accel_accelerator_accumulate_end(acc, model)); /* another scope's _end */
  EXPECT_OK(accel_accelerator_no_sync_end(acc, model));
  STATE(accel_accelerator_no_sync_end(acc, model));
  EXPECT_OK(accel_accelerator_autocast_begin(acc, 1));
  EXPECT_OK(accel_accelerator_autocast_end(acc));
  STATE(accel_accelerator_autocast_end(acc));
  EXPECT_OK(accel_accelerator_join_uneven_inputs_begin(acc));
  STATE(accel_accelerator_join_uneven_inputs_begin(acc)); /* nested */
  EXPECT_OK(accel_accelerator_join_uneven_inputs_end(acc));
  STATE(accel_accelerator_join_uneven_inputs_end(acc));

  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  STATE(accel_accelerator_prepare_model(acc, model)); /* prepared once */
  EXPECT_OK(accel_accelerator_prepare_optimizer(acc, opt));
  EXPECT_OK(accel_accelerator_prepare_scheduler(acc, sched));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, dl));
  EXPECT_OK(accel_model_forward(model, tx, &out));
  EXPECT_OK(accel_loss(ACCEL_LOSS_MSE, out, out, &loss));
  EXPECT_OK(accel_accelerator_backward(acc, loss));
  ARG(accel_accelerator_clip_grad_norm(acc, model, 1.0, 2.0, NULL));
  ARG(accel_accelerator_clip_grad_norm(acc, model, 0.0, 2.0, &d_out));
  ARG(accel_accelerator_clip_grad_norm(acc, model, -1.0, 2.0, &d_out));
  ARG(accel_accelerator_clip_grad_norm(acc, model, NAN, 2.0, &d_out));
  ARG(accel_accelerator_clip_grad_norm(acc, model, 1.0, 0.0, &d_out));
  ARG(accel_accelerator_clip_grad_norm(acc, model, 1.0, NAN, &d_out));
  ARG(accel_accelerator_clip_grad_value(acc, model, 0.0));
  ARG(accel_accelerator_clip_grad_value(acc, model, -1.0));
  ARG(accel_accelerator_clip_grad_value(acc, model, NAN));
  accel_tensor_free(loss);
  accel_tensor_free(out);
}

static void checkpoints(void) {
  accel_checkpoint_callbacks cb;
  const char* names[2] = {"a", NULL};
  const accel_tensor* tensors[2] = {NULL, NULL};
  char path[128];
  accel_checkpoint_callbacks_init(NULL);
  EACH_BAD(K_ACC, accel_accelerator, a) {
    ARG(accel_accelerator_save_state(a, dir));
    ARG(accel_accelerator_save_state_ext(a, dir, 0));
    ARG(accel_accelerator_load_state(a, dir));
    ARG(accel_accelerator_save_iteration(a, &i64_out));
    ARG(accel_accelerator_set_save_iteration(a, 1));
    ARG(accel_accelerator_last_checkpoint_dir(a, &s_out));
    ARG(accel_accelerator_save_model(a, model, dir, NULL, 1));
    ARG(accel_accelerator_load_checkpoint_in_model(a, model, "x.safetensors", 1, NULL, NULL));
    ARG(accel_accelerator_save_tensors(a, names, tensors, 0, "x.safetensors"));
    ARG(accel_accelerator_get_state_dict(a, model, NULL, NULL, 0, &sz_out));
    accel_checkpoint_callbacks_init(&cb);
    cb.save = remember_writer;
    cb.load = ignore_load;
    ARG(accel_accelerator_register_for_checkpointing(a, &cb, NULL));
    ARG(accel_accelerator_register_save_state_pre_hook(a, ok_hook, NULL, NULL, &i64_out));
    ARG(accel_accelerator_register_load_state_pre_hook(a, ok_hook, NULL, NULL, &i64_out));
    ARG(accel_accelerator_remove_hook(a, 1));
  }
  EACH_BAD(K_MODEL, accel_model, m) {
    ARG(accel_accelerator_save_model(acc, m, dir, NULL, 1));
    ARG(accel_accelerator_load_checkpoint_in_model(acc, m, "x.safetensors", 1, NULL, NULL));
    ARG(accel_accelerator_get_state_dict(acc, m, NULL, NULL, 0, &sz_out));
  }
  EACH_BAD(K_TENSOR, accel_tensor, t) {
    tensors[0] = t;
    ARG(accel_accelerator_save_tensors(acc, names, tensors, 1, "x.safetensors"));
  }
  tensors[0] = tx;
  STATE(accel_accelerator_save_state(acc, NULL)); /* no automatic naming */
  STATE(accel_accelerator_save_state(acc, ""));
  STATE(accel_accelerator_save_state_ext(acc, NULL, 0));
  snprintf(path, sizeof path, "%s/missing_checkpoint", dir);
  IO(accel_accelerator_load_state(acc, path));
  ARG(accel_accelerator_save_iteration(acc, NULL));
  ARG(accel_accelerator_set_save_iteration(acc, -1));
  ARG(accel_accelerator_set_save_iteration(acc, INT64_MIN));
  ARG(accel_accelerator_last_checkpoint_dir(acc, NULL));
  ARG(accel_accelerator_save_model(acc, model, NULL, NULL, 1));
  ARG(accel_accelerator_save_model(acc, model, "", NULL, 1));
  ARG(accel_accelerator_save_model(acc, model, dir, "lots", 1));
  ARG(accel_accelerator_save_model(acc, model, dir, "-5GB", 1));
  ARG(accel_accelerator_save_model(acc, model, dir, "lots", 0)); /* pickles: the same checks */
  ARG(accel_accelerator_load_checkpoint_in_model(acc, model, NULL, 1, NULL, NULL));
  IO(accel_accelerator_load_checkpoint_in_model(acc, model, "/nonexistent.safetensors", 1, &i64_out, &i64_out));
  ARG(accel_accelerator_get_state_dict(acc, model, NULL, NULL, 0, NULL));
  {
    const char* few_names[1] = {NULL};
    accel_tensor* few[1] = {NULL};
    ARG(accel_accelerator_get_state_dict(acc, model, few_names, few, 1, &sz_out)); /* 2 entries */
    EXPECT(few_names[0] == NULL && few[0] == NULL);
  }
  ARG(accel_accelerator_save_tensors(acc, names, tensors, 1, NULL));
  ARG(accel_accelerator_save_tensors(acc, NULL, tensors, 1, "x.safetensors"));
  ARG(accel_accelerator_save_tensors(acc, names, NULL, 1, "x.safetensors"));
  ARG(accel_accelerator_save_tensors(acc, NULL, NULL, SIZE_MAX, "x.safetensors"));
  ARG(accel_accelerator_save_tensors(acc, names, tensors, 2, "x.safetensors")); /* names[1] NULL */

  ARG(accel_accelerator_register_for_checkpointing(acc, NULL, NULL));
  accel_checkpoint_callbacks_init(&cb);
  ARG(accel_accelerator_register_for_checkpointing(acc, &cb, NULL)); /* no save, no load */
  cb.save = remember_writer;
  ARG(accel_accelerator_register_for_checkpointing(acc, &cb, NULL)); /* no load */
  cb.load = ignore_load;
  cb.struct_size = 0;
  ARG(accel_accelerator_register_for_checkpointing(acc, &cb, NULL));
  ARG(accel_accelerator_register_save_state_pre_hook(acc, NULL, NULL, NULL, &i64_out));
  ARG(accel_accelerator_register_save_state_pre_hook(acc, ok_hook, NULL, NULL, NULL));
  ARG(accel_accelerator_register_load_state_pre_hook(acc, NULL, NULL, NULL, &i64_out));
  ARG(accel_accelerator_register_load_state_pre_hook(acc, ok_hook, NULL, NULL, NULL));
  ARG(accel_accelerator_remove_hook(acc, 0));
  ARG(accel_accelerator_remove_hook(acc, -1));
  ARG(accel_accelerator_remove_hook(acc, INT64_MAX));

  /* A writer is valid only inside its save callback; NULL, garbage and a stale one are refused. */
  ARG(accel_bytes_write(NULL, "x", 1));
  ARG(accel_bytes_write((accel_bytes_writer*)(garbage + 64), "x", 1));
  ARG(accel_bytes_write((accel_bytes_writer*)tx, "x", 1));
  accel_checkpoint_callbacks_init(&cb);
  cb.save = remember_writer;
  cb.load = ignore_load;
  EXPECT_OK(accel_accelerator_register_for_checkpointing(acc, &cb, NULL));
  snprintf(path, sizeof path, "%s/ckpt", dir);
  EXPECT_OK(accel_accelerator_save_state(acc, path));
  EXPECT_OK(accel_accelerator_last_checkpoint_dir(acc, &s_out));
  EXPECT(strcmp(s_out, path) == 0);
  EXPECT(stale_writer != NULL);
  ARG(accel_bytes_write(stale_writer, "x", 1));
  /* A hook returning a value outside accel_status fails the call, naming it. */
  {
    int64_t id = 0;
    EXPECT_OK(accel_accelerator_register_save_state_pre_hook(acc, bogus_status_hook, NULL, NULL, &id));
    EXPECT_STATUS(ACCEL_ERR_INTERNAL, accel_accelerator_save_state(acc, path));
    EXPECT(strstr(accel_last_error(), "12345") != NULL);
    EXPECT_OK(accel_accelerator_remove_hook(acc, id));
    ARG(accel_accelerator_remove_hook(acc, id)); /* already removed */
  }
}

static void tracking(void) {
  accel_tracker_callbacks cb;
  const char* names[2] = {"loss", NULL};
  double values[2] = {1.0, 2.0};
  accel_tracker_callbacks_init(NULL);
  accel_tracker_callbacks_init(&cb);
  EXPECT(accel_builtin_tracker_names() == accel_builtin_tracker_names()); /* static, takes nothing to misuse */
  cb.name = "mine";
  EACH_BAD(K_ACC, accel_accelerator, a) {
    ARG(accel_accelerator_add_tracker(a, &cb));
    ARG(accel_accelerator_init_trackers(a, "run", NULL));
    ARG(accel_accelerator_init_trackers_with(a, "run", NULL, NULL));
    ARG(accel_accelerator_log(a, names, values, 1, 0));
    ARG(accel_accelerator_log_text(a, "tag", "text", 0));
    ARG(accel_accelerator_log_to(a, "mine", names, values, 1, 0));
    ARG(accel_accelerator_log_text_to(a, "mine", "tag", "text", 0));
    ARG(accel_accelerator_has_tracker(a, "mine", &i_out));
    ARG(accel_accelerator_end_training(a));
    ARG(accel_profile_begin(a, dir, &prof_out));
  }
  ARG(accel_accelerator_add_tracker(acc, NULL));
  cb.name = NULL;
  ARG(accel_accelerator_add_tracker(acc, &cb));
  cb.name = "";
  ARG(accel_accelerator_add_tracker(acc, &cb));
  cb.name = "mine";
  cb.struct_size = 0;
  ARG(accel_accelerator_add_tracker(acc, &cb));
  cb.struct_size = UINT32_MAX;
  ARG(accel_accelerator_add_tracker(acc, &cb));
  accel_tracker_callbacks_init(&cb);
  cb.name = "mine";
  EXPECT_OK(accel_accelerator_add_tracker(acc, &cb));
  ARG(accel_accelerator_add_tracker(acc, &cb)); /* repeated name */
  ARG(accel_accelerator_init_trackers(acc, NULL, NULL));
  ARG(accel_accelerator_init_trackers(acc, "run", "not json"));
  ARG(accel_accelerator_init_trackers(acc, "run", "[1, 2]"));
  ARG(accel_accelerator_init_trackers(acc, "run", "{\"nested\": {\"a\": 1}}"));
  ARG(accel_accelerator_init_trackers_with(acc, NULL, NULL, NULL));
  ARG(accel_accelerator_init_trackers_with(acc, "run", NULL, "not json"));
  ARG(accel_accelerator_init_trackers_with(acc, "run", NULL, "{\"neptune\": {}}"));     /* not a built-in */
  ARG(accel_accelerator_init_trackers_with(acc, "run", NULL, "{\"wandb\": [1]}"));      /* not an object */
  ARG(accel_accelerator_init_trackers_with(acc, "run", NULL, "{\"csv\": {\"x\": 1}}")); /* takes none */
  ARG(accel_accelerator_log(acc, NULL, values, 1, 0));
  ARG(accel_accelerator_log(acc, names, NULL, 1, 0));
  ARG(accel_accelerator_log(acc, NULL, NULL, SIZE_MAX, 0));
  ARG(accel_accelerator_log(acc, names, values, 2, 0)); /* names[1] NULL */
  ARG(accel_accelerator_log_text(acc, NULL, "text", 0));
  ARG(accel_accelerator_log_text(acc, "tag", NULL, 0));
  ARG(accel_accelerator_log_to(acc, NULL, names, values, 1, 0));
  ARG(accel_accelerator_log_to(acc, "mine", NULL, values, 1, 0));
  ARG(accel_accelerator_log_to(acc, "mine", names, values, 2, 0)); /* names[1] NULL */
  ARG(accel_accelerator_log_text_to(acc, NULL, "tag", "text", 0));
  ARG(accel_accelerator_log_text_to(acc, "mine", "tag", NULL, 0));
  ARG(accel_accelerator_has_tracker(acc, NULL, &i_out));
  ARG(accel_accelerator_has_tracker(acc, "mine", NULL));
  EXPECT_OK(accel_accelerator_init_trackers(acc, "run", NULL));
  ARG(accel_accelerator_log_to(acc, "nope", names, values, 1, 0)); /* no running tracker of that name */
  ARG(accel_accelerator_log_text_to(acc, "nope", "tag", "text", 0));
  STATE(accel_accelerator_init_trackers(acc, "run", NULL)); /* twice */
  STATE(accel_accelerator_add_tracker(acc, &cb));           /* after init_trackers */
  EXPECT_OK(accel_accelerator_end_training(acc));
  EXPECT_OK(accel_accelerator_end_training(acc)); /* idempotent */

  ARG(accel_log(NULL, ACCEL_LOG_ERROR, "message", 0));
  ARG(accel_log("misuse", ACCEL_LOG_ERROR, NULL, 0));
  ARG(accel_log("misuse", BAD_ENUM(accel_log_level), "message", 0));
  ARG(accel_log("misuse", NEG_ENUM(accel_log_level), "message", 0));
  ARG(accel_log("misuse", (accel_log_level)11, "message", 0));

  ARG(accel_progress_create(-1, "bar", 1, &prog_out));
  ARG(accel_progress_create(INT64_MIN, "bar", 1, &prog_out));
  ARG(accel_progress_create(10, NULL, 1, &prog_out));
  ARG(accel_progress_create(10, "bar", 1, NULL));
  EACH_BAD(K_PROGRESS, accel_progress, p) {
    ARG(accel_progress_update(p, 1));
    accel_progress_free(p); /* ignored */
  }
  ARG(accel_progress_update(prog, -1));
  ARG(accel_progress_update(prog, INT64_MIN));
  EXPECT_OK(accel_progress_update(prog, INT64_MAX));
  EXPECT_OK(accel_progress_update(prog, INT64_MAX)); /* saturates, no overflow */
  {
    accel_progress* big = NULL;
    EXPECT_OK(accel_progress_create(INT64_MAX, "big", 0, &big));
    EXPECT_OK(accel_progress_update(big, INT64_MAX - 1));
    EXPECT_OK(accel_progress_update(big, INT64_MAX));
    accel_progress_free(big);
  }
  accel_progress_free(NULL);

  ARG(accel_profile_begin(acc, NULL, &prof_out));
  ARG(accel_profile_begin(acc, "", &prof_out));
  ARG(accel_profile_begin(acc, dir, NULL));
  ARG(accel_profile_begin_with(acc, dir, 64, &prof_out));
  ARG(accel_profile_begin_with(acc, NULL, 1, &prof_out));
  ARG(accel_profile_begin_with(NULL, dir, 1, &prof_out));
  EACH_BAD(K_PROFILE, accel_profile, f) {
    ARG(accel_profile_end(f));
    ARG(accel_profile_step(f, &i_out));
  }
  {
    accel_profile_schedule schedule;
    accel_profile_schedule_init(NULL);
    accel_profile_schedule_init(&schedule);
    schedule.active = 1;
    EACH_BAD(K_ACC, accel_accelerator, a) ARG(accel_profile_begin_scheduled(a, dir, 0, &schedule, &prof_out));
    ARG(accel_profile_begin_scheduled(acc, dir, 0, NULL, &prof_out));
    ARG(accel_profile_begin_scheduled(acc, dir, 0, &schedule, NULL));
    ARG(accel_profile_begin_scheduled(acc, NULL, 0, &schedule, &prof_out));
    ARG(accel_profile_begin_scheduled(acc, dir, 64, &schedule, &prof_out));
    schedule.wait = -1; /* a negative count */
    ARG(accel_profile_begin_scheduled(acc, dir, 0, &schedule, &prof_out));
    schedule.wait = 2;
    schedule.active = 0; /* nothing would be recorded */
    ARG(accel_profile_begin_scheduled(acc, dir, 0, &schedule, &prof_out));
    schedule.struct_size = 0;
    ARG(accel_profile_begin_scheduled(acc, dir, 0, &schedule, &prof_out));
    accel_profile_schedule_init(&schedule);
    schedule.active = 1;
    {
      accel_profile* profile = NULL;
      int ready = -1;
      EXPECT_OK(accel_profile_begin_scheduled(acc, dir, 0, &schedule, &profile));
      ARG(accel_profile_step(profile, NULL));
      EXPECT_OK(accel_profile_step(profile, &ready));
      EXPECT(ready == 1); /* active 1: every step ends a cycle */
      EXPECT_OK(accel_profile_end(profile));
    }
  }
  {
    accel_profile* profile = NULL;
    EXPECT_OK(accel_profile_begin(acc, dir, &profile));
    STATE(accel_profile_begin(acc, dir, &prof_out)); /* one per thread */
    EXPECT_OK(accel_profile_end(profile));
    ARG(accel_profile_end(profile)); /* already ended and freed */
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

/* Partial states (accel_partial_state.h): bad handles, NULL outs, bad options. */
static void partial_states(void) {
  accel_partial_state_options opts;
  int64_t a = 0, b = 0, c = 0;
  accel_partial_state_options_init(NULL);
  EACH_BAD(K_STATE, accel_partial_state, s) {
    ARG(accel_partial_state_process_index(s, &i_out));
    ARG(accel_partial_state_local_process_index(s, &i_out));
    ARG(accel_partial_state_num_processes(s, &i_out));
    ARG(accel_partial_state_distributed_type(s, &dist_out));
    ARG(accel_partial_state_device(s, &s_out));
    ARG(accel_partial_state_split_range(s, 4, 0, &a, &b, &c));
    ARG(accel_partial_state_wait_for_everyone(s));
  }
  ARG(accel_partial_state_create(NULL, NULL));
  ARG(accel_partial_state_process_index(pstate, NULL));
  ARG(accel_partial_state_local_process_index(pstate, NULL));
  ARG(accel_partial_state_num_processes(pstate, NULL));
  ARG(accel_partial_state_distributed_type(pstate, NULL));
  ARG(accel_partial_state_device(pstate, NULL));
  ARG(accel_partial_state_split_range(pstate, 4, 0, NULL, &b, &c));
  ARG(accel_partial_state_split_range(pstate, 4, 0, &a, NULL, &c));
  ARG(accel_partial_state_split_range(pstate, 4, 0, &a, &b, NULL));
  ARG(accel_partial_state_split_range(pstate, -1, 0, &a, &b, &c)); /* a negative count */
  accel_partial_state_options_init(&opts);
  opts.timeout_ms = 0;
  ARG(accel_partial_state_create(&opts, &state_out));
  accel_partial_state_options_init(&opts);
  opts.struct_size = 0;
  ARG(accel_partial_state_create(&opts, &state_out));
  EXPECT_OK(accel_partial_state_split_range(pstate, 4, 0, &a, &b, &c));
  EXPECT(a == 0 && b == 4 && c == 4);
  EXPECT_OK(accel_partial_state_wait_for_everyone(pstate));
  accel_partial_state_free(NULL);
  accel_partial_state_free((accel_partial_state*)tx); /* another kind: ignored */
  EXPECT_OK(accel_partial_state_num_processes(pstate, &i_out));
  EXPECT(i_out == 1);
  /* accel_set_seed takes no handle or pointer: every seed is valid, the extremes included. */
  EXPECT_OK(accel_set_seed(UINT64_MAX, 0));
  EXPECT_OK(accel_set_seed(0, 0));
  ARG(accel_cuda_device_count(NULL));
  i_out = -1;
  EXPECT_OK(accel_cuda_device_count(&i_out));
  EXPECT(i_out >= 0);
}

/* Big-model tools (big_model.h): every bad argument is refused, out untouched. */
static void big_models(void) {
  static const char* kGraph =
      "{\"inputs\": [\"x\"], \"nodes\": [{\"name\": \"a\", \"type\": \"Linear\", \"in_features\": 2,"
      " \"out_features\": 3}], \"outputs\": [\"a\"]}";
  static const char* kSplit[1] = {"Linear"};
  static const char* kNullSplit[1] = {NULL};
  char* text = NULL;
  accel_model* empty = NULL;
  accel_string_free(NULL); /* does nothing */
  ARG(accel_model_from_json_empty(NULL, &model_out));
  ARG(accel_model_from_json_empty(kLinear, NULL));
  ARG(accel_model_from_json_empty("not json", &model_out));
  FIXTURE(accel_model_from_json_empty(kGraph, &empty));
  ARG(accel_model_materialize(empty, NULL, NULL));
  IO(accel_model_materialize(empty, "/nonexistent/model.safetensors", NULL));
  ARG(accel_model_module_sizes(empty, NULL, NULL));
  ARG(accel_model_module_sizes(empty, "float13", &text));
  EXPECT(text == NULL);
  ARG(accel_available_memory(NULL));
  ARG(accel_infer_auto_device_map(empty, "{\"cpu\": 100}", NULL, 1, NULL, &text));
  ARG(accel_infer_auto_device_map(empty, "{\"cpu\": 100}", kNullSplit, 1, NULL, &text));
  ARG(accel_infer_auto_device_map(empty, "{\"cpu\": 100}", kSplit, 1, NULL, NULL));
  ARG(accel_infer_auto_device_map(empty, "{\"tpu\": 100}", kSplit, 1, NULL, &text));
  ARG(accel_infer_auto_device_map(empty, "{\"cpu\": \"lots\"}", kSplit, 1, NULL, &text));
  ARG(accel_infer_auto_device_map(empty, "{\"cpu\": 10}", kSplit, 1, NULL, &text)); /* < the 36-byte layer */
  ARG(accel_infer_auto_device_map(empty, "[]", NULL, 0, NULL, &text));
  ARG(accel_disk_offload(empty, NULL));
  ARG(accel_disk_offload(empty, ""));
  ARG(accel_disk_offload_on_device(empty, NULL, NULL));
  ARG(accel_disk_offload_on_device(empty, "offload", "tpu"));
  ARG(accel_cpu_offload(empty, NULL, 0)); /* its tensors are on meta */
  ARG(accel_dispatch_model(empty, NULL, NULL));
  ARG(accel_dispatch_model(empty, "not json", NULL));
  ARG(accel_dispatch_model(empty, "{\"\": \"cpu\"}", NULL)); /* on meta */
  ARG(accel_balanced_memory(empty, "{\"cuda:0\": 100}", NULL, 1, NULL, 0, &text));
  ARG(accel_balanced_memory(empty, "{\"cuda:0\": 100}", kNullSplit, 1, NULL, 0, &text));
  ARG(accel_balanced_memory(empty, "{\"cuda:0\": 100}", kSplit, 1, NULL, 0, NULL));
  ARG(accel_balanced_memory(empty, "{\"npu:0\": 100}", kSplit, 1, NULL, 0, &text));
  ARG(accel_balanced_memory(empty, "{\"cuda:0\": -1}", kSplit, 1, NULL, 1, &text));
  ARG(accel_balanced_memory(empty, "{\"cuda:0\": 100}", kSplit, 1, "float13", 1, &text));
  EXPECT(text == NULL);
  ARG(accel_verify_device_map(empty, NULL));
  ARG(accel_verify_device_map(empty, "{\"b\": \"cpu\"}"));
  ARG(accel_verify_device_map(empty, "{}"));
  ARG(accel_verify_device_map(empty, "{\"a\": \"cuda:9\"}"));
  ARG(accel_load_checkpoint_and_dispatch(empty, NULL, NULL, NULL, NULL));
  ARG(accel_load_checkpoint_and_dispatch(empty, "model.safetensors", "not json", NULL, NULL));
  ARG(accel_load_checkpoint_and_dispatch(empty, "model.safetensors", "{\"b\": \"cpu\"}", NULL, NULL));
  ARG(accel_load_checkpoint_and_dispatch(empty, "model.safetensors", "\"balanced_low_1\"", NULL, NULL));
  ARG(accel_load_checkpoint_and_dispatch(empty, "model.safetensors", "[\"auto\"]", NULL, NULL));
  ARG(accel_load_checkpoint_and_dispatch(empty, "model.safetensors", "{}", NULL, NULL)); /* places nothing */
  ARG(accel_model_hf_device_map(empty, NULL));
  ARG(accel_load_checkpoint_and_dispatch(empty, "model.safetensors", NULL, NULL, "float13"));
  IO(accel_load_checkpoint_and_dispatch(empty, "/nonexistent/model.safetensors", "{\"a\": \"disk\"}", "o", NULL));
  EACH_BAD(K_MODEL, accel_model, m) {
    ARG(accel_model_materialize(m, "model.safetensors", NULL));
    ARG(accel_model_module_sizes(m, NULL, &text));
    ARG(accel_infer_auto_device_map(m, "{\"cpu\": 100}", NULL, 0, NULL, &text));
    ARG(accel_balanced_memory(m, "{\"cuda:0\": 100}", NULL, 0, NULL, 0, &text));
    ARG(accel_disk_offload(m, "offload"));
    ARG(accel_disk_offload_on_device(m, "offload", NULL));
    ARG(accel_cpu_offload(m, "cpu", 0));
    ARG(accel_dispatch_model(m, "{\"\": \"cpu\"}", NULL));
    ARG(accel_verify_device_map(m, "{\"\": \"cpu\"}"));
    ARG(accel_model_hf_device_map(m, &text));
    ARG(accel_load_checkpoint_and_dispatch(m, "model.safetensors", NULL, NULL, NULL));
  }
  accel_model_free(empty);
}

int main(void) {
  setup();
  version_and_errors();
  tensors();
  accelerator();
  collective_lists();
  models();
  named_tensors();
  optimizers();
  schedulers();
  datasets();
  sequences();
  training();
  checkpoints();
  tracking();
  big_models();
  partial_states();
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
