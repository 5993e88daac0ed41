/* Misuse cases of models, losses, named tensors, optimizers and schedulers (accel_model.h),
   and big-model dispatch (big_model.h). */
#include "misuse.h"

void misuse_models(void) {
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

void misuse_named_tensors(void) {
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

void misuse_optimizers(void) {
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

void misuse_schedulers(void) {
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

/* Big-model tools (big_model.h): every bad argument is refused, out untouched. */
void misuse_big_models(void) {
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
