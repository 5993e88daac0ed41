/* Misuse cases of the accelerator (accel.h): version and errors, tensors, the accelerator
   and its collectives, and partial states (accel_partial_state.h). */
#include "misuse.h"

void misuse_version_and_errors(void) {
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

void misuse_tensors(void) {
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

void misuse_accelerator(void) {
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
void misuse_collective_lists(void) {
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

/* Partial states (accel_partial_state.h): bad handles, NULL outs, bad options. */
void misuse_partial_states(void) {
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
