/* Misuse cases of the training loop, checkpoints (accel_checkpoint.h) and tracking
   (accel_tracking.h). */
#include "misuse.h"

void misuse_training(void) {
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
    ARG(accel_accelerator_in_dataloader(a, &i_out));
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
  ARG(accel_accelerator_in_dataloader(acc, NULL));
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

void misuse_checkpoints(void) {
  accel_checkpoint_callbacks cb;
  const char* names[2] = {"a", NULL};
  const accel_tensor* tensors[2] = {NULL, NULL};
  char path[128];
  accel_checkpoint_callbacks_init(NULL);
  EACH_BAD(K_ACC, accel_accelerator, a) {
    ARG(accel_accelerator_save_state(a, misuse_dir));
    ARG(accel_accelerator_save_state_ext(a, misuse_dir, 0));
    ARG(accel_accelerator_load_state(a, misuse_dir));
    ARG(accel_accelerator_save_iteration(a, &i64_out));
    ARG(accel_accelerator_set_save_iteration(a, 1));
    ARG(accel_accelerator_last_checkpoint_dir(a, &s_out));
    ARG(accel_accelerator_save_model(a, model, misuse_dir, NULL, 1));
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
    ARG(accel_accelerator_save_model(acc, m, misuse_dir, NULL, 1));
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
  snprintf(path, sizeof path, "%s/missing_checkpoint", misuse_dir);
  IO(accel_accelerator_load_state(acc, path));
  ARG(accel_accelerator_save_iteration(acc, NULL));
  ARG(accel_accelerator_set_save_iteration(acc, -1));
  ARG(accel_accelerator_set_save_iteration(acc, INT64_MIN));
  ARG(accel_accelerator_last_checkpoint_dir(acc, NULL));
  ARG(accel_accelerator_save_model(acc, model, NULL, NULL, 1));
  ARG(accel_accelerator_save_model(acc, model, "", NULL, 1));
  ARG(accel_accelerator_save_model(acc, model, misuse_dir, "lots", 1));
  ARG(accel_accelerator_save_model(acc, model, misuse_dir, "-5GB", 1));
  ARG(accel_accelerator_save_model(acc, model, misuse_dir, "lots", 0)); /* pickles: the same checks */
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
  snprintf(path, sizeof path, "%s/ckpt", misuse_dir);
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

void misuse_tracking(void) {
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
    ARG(accel_profile_begin(a, misuse_dir, &prof_out));
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
  ARG(accel_profile_begin(acc, misuse_dir, NULL));
  ARG(accel_profile_begin_with(acc, misuse_dir, 64, &prof_out));
  ARG(accel_profile_begin_with(acc, NULL, 1, &prof_out));
  ARG(accel_profile_begin_with(NULL, misuse_dir, 1, &prof_out));
  EACH_BAD(K_PROFILE, accel_profile, f) {
    ARG(accel_profile_end(f));
    ARG(accel_profile_step(f, &i_out));
  }
  {
    accel_profile_schedule schedule;
    accel_profile_schedule_init(NULL);
    accel_profile_schedule_init(&schedule);
    schedule.active = 1;
    EACH_BAD(K_ACC, accel_accelerator, a) ARG(accel_profile_begin_scheduled(a, misuse_dir, 0, &schedule, &prof_out));
    ARG(accel_profile_begin_scheduled(acc, misuse_dir, 0, NULL, &prof_out));
    ARG(accel_profile_begin_scheduled(acc, misuse_dir, 0, &schedule, NULL));
    ARG(accel_profile_begin_scheduled(acc, NULL, 0, &schedule, &prof_out));
    ARG(accel_profile_begin_scheduled(acc, misuse_dir, 64, &schedule, &prof_out));
    schedule.wait = -1; /* a negative count */
    ARG(accel_profile_begin_scheduled(acc, misuse_dir, 0, &schedule, &prof_out));
    schedule.wait = 2;
    schedule.active = 0; /* nothing would be recorded */
    ARG(accel_profile_begin_scheduled(acc, misuse_dir, 0, &schedule, &prof_out));
    schedule.struct_size = 0;
    ARG(accel_profile_begin_scheduled(acc, misuse_dir, 0, &schedule, &prof_out));
    accel_profile_schedule_init(&schedule);
    schedule.active = 1;
    {
      accel_profile* profile = NULL;
      int ready = -1;
      EXPECT_OK(accel_profile_begin_scheduled(acc, misuse_dir, 0, &schedule, &profile));
      ARG(accel_profile_step(profile, NULL));
      EXPECT_OK(accel_profile_step(profile, &ready));
      EXPECT(ready == 1); /* active 1: every step ends a cycle */
      EXPECT_OK(accel_profile_end(profile));
    }
  }
  {
    accel_profile* profile = NULL;
    EXPECT_OK(accel_profile_begin(acc, misuse_dir, &profile));
    STATE(accel_profile_begin(acc, misuse_dir, &prof_out)); /* one per thread */
    EXPECT_OK(accel_profile_end(profile));
    ARG(accel_profile_end(profile)); /* already ended and freed */
  }
}
