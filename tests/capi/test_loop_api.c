/* What a training loop needs around the model (issue 18 item 5): no_grad
   scopes, cross-entropy options and the causal LM loss, the metric tensor
   operations, load_state_dict and send_to_device. Expected values come from
   PyTorch 1.13 (torch.nn.functional) on the same inputs. */
#include <math.h>

#include "capi_test.h"

static accel_tensor* make_f32(const float* data, size_t count, const int64_t* shape, size_t ndim) {
  accel_tensor* t = NULL;
  EXPECT_OK(accel_tensor_from_buffer(data, count * sizeof(float), ACCEL_FLOAT32, shape, ndim, &t));
  return t;
}

static accel_tensor* make_i64(const int64_t* data, size_t count, const int64_t* shape, size_t ndim) {
  accel_tensor* t = NULL;
  EXPECT_OK(accel_tensor_from_buffer(data, count * sizeof(int64_t), ACCEL_INT64, shape, ndim, &t));
  return t;
}

static double item_of(accel_tensor* t) {
  double value = NAN;
  EXPECT_OK(accel_tensor_item(t, &value));
  accel_tensor_free(t);
  return value;
}

/* [[-1, 0, 1, -0.5], [0.5, -1, 0, 1], [-0.5, 0.5, -1, 0]] */
static accel_tensor* scores(void) {
  static const int64_t shape[2] = {3, 4};
  float data[12];
  int i;
  for (i = 0; i < 12; ++i) data[i] = (float)((i * 7) % 5) * 0.5f - 1.0f;
  return make_f32(data, 12, shape, 2);
}

static void test_no_grad(void) {
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_tensor *x = NULL, *y = NULL, *loss = NULL;
  const float ones[4] = {1, 1, 1, 1};
  const int64_t shape[2] = {1, 4};
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_model_from_json("[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 1}]", &model));
  x = make_f32(ones, 4, shape, 2);
  EXPECT_ERROR(accel_accelerator_no_grad_end(acc), ACCEL_ERR_STATE, "no_grad_end without a matching no_grad_begin");
  /* Nested scopes: the inner end leaves the outer scope's no_grad in force. */
  EXPECT_OK(accel_accelerator_no_grad_begin(acc));
  EXPECT_OK(accel_accelerator_no_grad_begin(acc));
  EXPECT_OK(accel_accelerator_no_grad_end(acc));
  EXPECT_OK(accel_model_forward(model, x, &y));
  EXPECT_OK(accel_tensor_sum(y, &loss));
  EXPECT_ERROR(accel_accelerator_backward(acc, loss), ACCEL_ERR_INVALID_ARGUMENT, "does not require grad");
  accel_tensor_free(loss);
  accel_tensor_free(y);
  EXPECT_OK(accel_accelerator_no_grad_end(acc));
  /* After the last end, autograd records again. */
  EXPECT_OK(accel_model_forward(model, x, &y));
  EXPECT_OK(accel_tensor_sum(y, &loss));
  EXPECT_OK(accel_accelerator_backward(acc, loss));
  EXPECT_ERROR(accel_accelerator_no_grad_end(acc), ACCEL_ERR_STATE, "no_grad_end");
  accel_tensor_free(loss);
  accel_tensor_free(y);
  accel_tensor_free(x);
  accel_model_free(model);
  accel_accelerator_free(acc);
}

static void test_loss_options(void) {
  accel_tensor* x = scores();
  const int64_t n[1] = {3};
  const int64_t t1[3] = {1, -100, 3}, t2[3] = {1, 2, 3}, bad[3] = {1, 4, 3};
  accel_tensor *target = make_i64(t1, 3, n, 1), *target2 = make_i64(t2, 3, n, 1), *wrong = make_i64(bad, 3, n, 1);
  accel_tensor* out = NULL;
  accel_loss_options opts = ACCEL_LOSS_OPTIONS_INIT;
  accel_loss_options from_init;
  accel_loss_options_init(&from_init);
  EXPECT(from_init.ignore_index == -100 && from_init.label_smoothing == 0.0);

  opts.label_smoothing = 0.1;
  EXPECT_OK(accel_loss_ext(ACCEL_LOSS_CROSS_ENTROPY, x, target, &opts, &out));
  EXPECT(fabs(item_of(out) - 1.435422658920288) < 1e-5);
  opts.label_smoothing = 0.0;
  opts.ignore_index = 2;
  EXPECT_OK(accel_loss_ext(ACCEL_LOSS_CROSS_ENTROPY, x, target2, &opts, &out));
  EXPECT(fabs(item_of(out) - 1.4166725873947144) < 1e-5);
  /* NULL options are accel_loss's defaults. */
  EXPECT_OK(accel_loss_ext(ACCEL_LOSS_CROSS_ENTROPY, x, target2, NULL, &out));
  {
    double with_null = item_of(out);
    EXPECT_OK(accel_loss(ACCEL_LOSS_CROSS_ENTROPY, x, target2, &out));
    EXPECT(item_of(out) == with_null);
  }
  out = NULL;
  EXPECT_ERROR(accel_loss_ext(ACCEL_LOSS_CROSS_ENTROPY, x, wrong, NULL, &out), ACCEL_ERR_INVALID_ARGUMENT,
               "target holds class 4, outside [0, 4)");
  opts.ignore_index = -100;
  opts.label_smoothing = 1.5;
  EXPECT_ERROR(accel_loss_ext(ACCEL_LOSS_CROSS_ENTROPY, x, target, &opts, &out), ACCEL_ERR_INVALID_ARGUMENT,
               "label_smoothing must be in [0, 1], got 1.5");
  opts.label_smoothing = 0.1;
  EXPECT_ERROR(accel_loss_ext(ACCEL_LOSS_NLL, x, target, &opts, &out), ACCEL_ERR_INVALID_ARGUMENT,
               "applies to cross_entropy and causal_lm only");
  opts.label_smoothing = 0.0;
  opts.ignore_index = 0;
  EXPECT_ERROR(accel_loss_ext(ACCEL_LOSS_MSE, x, x, &opts, &out), ACCEL_ERR_INVALID_ARGUMENT, "ignore_index 0");
  opts.struct_size = 1;
  EXPECT_ERROR(accel_loss_ext(ACCEL_LOSS_CROSS_ENTROPY, x, target, &opts, &out), ACCEL_ERR_INVALID_ARGUMENT,
               "struct_size is 1");
  EXPECT_ERROR(accel_loss_ext((accel_loss_kind)6, x, target, NULL, &out), ACCEL_ERR_INVALID_ARGUMENT, "kind 6");
  EXPECT(out == NULL);
  accel_tensor_free(wrong);
  accel_tensor_free(target2);
  accel_tensor_free(target);
  accel_tensor_free(x);
}

/* The causal LM kind equals Hugging Face's shifted loss and the JSON graph's
   CausalLMLoss node on the same logits and labels. */
static void test_causal_lm_loss(void) {
  const int64_t lshape[3] = {2, 3, 4}, bshape[2] = {2, 3}, short_shape[2] = {2, 2};
  const int64_t labels_data[6] = {0, 1, 2, 3, -100, 1};
  float data[24];
  accel_tensor *logits = NULL, *labels = NULL, *out = NULL, *graph_loss = NULL;
  accel_tensor_map *inputs = NULL, *outputs = NULL;
  accel_model* graph = NULL;
  accel_loss_options opts = ACCEL_LOSS_OPTIONS_INIT;
  double loss = 0;
  int i;
  for (i = 0; i < 24; ++i) data[i] = (float)((i * 5) % 7) * 0.25f;
  logits = make_f32(data, 24, lshape, 3);
  labels = make_i64(labels_data, 6, bshape, 2);
  EXPECT_OK(accel_loss(ACCEL_LOSS_CAUSAL_LM, logits, labels, &out));
  loss = item_of(out);
  EXPECT(fabs(loss - 1.5713521242141724) < 1e-5);
  opts.label_smoothing = 0.2;
  EXPECT_OK(accel_loss_ext(ACCEL_LOSS_CAUSAL_LM, logits, labels, &opts, &out));
  EXPECT(fabs(item_of(out) - 1.558852195739746) < 1e-5);

  EXPECT_OK(
      accel_model_from_json("{\"inputs\": [\"logits\", \"labels\"], \"nodes\": [{\"name\": \"loss\", "
                            "\"type\": \"CausalLMLoss\", \"input\": [\"logits\", \"labels\"]}], "
                            "\"outputs\": [\"loss\"]}",
                            &graph));
  EXPECT_OK(accel_tensor_map_create(&inputs));
  EXPECT_OK(accel_tensor_map_set(inputs, "logits", logits));
  EXPECT_OK(accel_tensor_map_set(inputs, "labels", labels));
  EXPECT_OK(accel_model_forward_named(graph, inputs, &outputs));
  EXPECT_OK(accel_tensor_map_get(outputs, "loss", &graph_loss));
  EXPECT(item_of(graph_loss) == loss);

  accel_tensor_free(labels);
  labels = make_i64(labels_data, 4, short_shape, 2);
  EXPECT_ERROR(accel_loss(ACCEL_LOSS_CAUSAL_LM, logits, labels, &out), ACCEL_ERR_INVALID_ARGUMENT,
               "the labels must have shape [2, 3]");
  accel_tensor_map_free(outputs);
  accel_tensor_map_free(inputs);
  accel_model_free(graph);
  accel_tensor_free(labels);
  accel_tensor_free(logits);
}

static void test_metric_ops(void) {
  accel_tensor *x = scores(), *out = NULL, *values = NULL, *indices = NULL, *flat = NULL, *cmp = NULL;
  float probs[4] = {0}, top[6] = {0};
  int64_t top_idx[6] = {0}, dims[2] = {0, 0};
  const int64_t flat_shape[1] = {-1}, bad_shape[2] = {5, -1};
  size_t ndim = 0;

  EXPECT_OK(accel_tensor_softmax(x, -1, &out));
  {
    accel_tensor* row = NULL;
    EXPECT_OK(accel_tensor_narrow(out, 0, 0, 1, &row));
    EXPECT_OK(accel_tensor_copy_to(row, probs, sizeof probs));
    accel_tensor_free(row);
  }
  EXPECT(fabs(probs[2] - 0.5792585611343384) < 1e-6 && fabs(probs[0] - 0.07839412242174149) < 1e-6);
  accel_tensor_free(out);

  EXPECT_OK(accel_tensor_topk(x, 2, 1, &values, &indices));
  EXPECT_OK(accel_tensor_copy_to(values, top, sizeof top));
  EXPECT_OK(accel_tensor_copy_to(indices, top_idx, sizeof top_idx));
  EXPECT(top[0] == 1.0f && top[1] == 0.0f && top[4] == 0.5f && top[5] == 0.0f);
  EXPECT(top_idx[0] == 2 && top_idx[1] == 1 && top_idx[2] == 3 && top_idx[3] == 0 && top_idx[4] == 1);

  EXPECT_OK(accel_tensor_mean(x, &out));
  EXPECT(fabs(item_of(out) - (-1.0 / 12.0)) < 1e-7);
  EXPECT_OK(accel_tensor_mean_dim(x, 0, &out));
  EXPECT_OK(accel_tensor_ndim(out, &ndim));
  EXPECT(ndim == 1);
  accel_tensor_free(out);

  /* Accuracy of the top-1 against labels, the way an eval loop computes it. */
  EXPECT_OK(accel_tensor_reshape(indices, flat_shape, 1, &flat));
  EXPECT_OK(accel_tensor_shape(flat, dims, 1));
  EXPECT(dims[0] == 6);
  EXPECT_ERROR(accel_tensor_compare(values, x, ACCEL_COMPARE_GT, &cmp), ACCEL_ERR_INVALID_ARGUMENT,
               "compare: shapes [3, 2] and [3, 4] do not broadcast");
  {
    const int64_t lab_shape[2] = {3, 1}, labels[3] = {2, 0, 1};
    accel_tensor *lab = make_i64(labels, 3, lab_shape, 2), *first = NULL, *hits = NULL;
    EXPECT_OK(accel_tensor_narrow(indices, 1, 0, 1, &first));
    EXPECT_OK(accel_tensor_compare(first, lab, ACCEL_COMPARE_EQ, &hits));
    EXPECT_OK(accel_tensor_mean(hits, &out));
    EXPECT(fabs(item_of(out) - 2.0 / 3.0) < 1e-6);
    EXPECT_OK(accel_tensor_compare(first, lab, ACCEL_COMPARE_LT, &cmp));
    EXPECT_OK(accel_tensor_sum(cmp, &out));
    EXPECT(item_of(out) == 0.0);
    accel_tensor_free(cmp);
    EXPECT_OK(accel_tensor_compare(first, lab, ACCEL_COMPARE_GE, &cmp));
    EXPECT_OK(accel_tensor_sum(cmp, &out));
    EXPECT(item_of(out) == 3.0);
    accel_tensor_free(hits);
    accel_tensor_free(first);
    accel_tensor_free(lab);
  }

  out = NULL;
  EXPECT_ERROR(accel_tensor_softmax(x, 2, &out), ACCEL_ERR_INVALID_ARGUMENT, "softmax: dim 2 is out of range");
  EXPECT_ERROR(accel_tensor_softmax(indices, 1, &out), ACCEL_ERR_INVALID_ARGUMENT, "floating point, got Long");
  EXPECT_ERROR(accel_tensor_topk(x, 5, 1, &values, &indices), ACCEL_ERR_INVALID_ARGUMENT, "k is 5 but dim 1");
  EXPECT_ERROR(accel_tensor_mean_dim(x, -3, &out), ACCEL_ERR_INVALID_ARGUMENT, "dim -3");
  EXPECT_ERROR(accel_tensor_reshape(x, bad_shape, 2, &out), ACCEL_ERR_INVALID_ARGUMENT, "cannot take shape [5, -1]");
  EXPECT_ERROR(accel_tensor_narrow(x, 1, 3, 2, &out), ACCEL_ERR_INVALID_ARGUMENT, "start 3 and length 2");
  EXPECT_ERROR(accel_tensor_narrow(x, 1, 1, INT64_MAX, &out), ACCEL_ERR_INVALID_ARGUMENT, "do not fit dim 1");
  EXPECT_ERROR(accel_tensor_compare(x, flat, ACCEL_COMPARE_LT, &out), ACCEL_ERR_INVALID_ARGUMENT, "do not broadcast");
  EXPECT_ERROR(accel_tensor_compare(x, x, (accel_compare_op)9, &out), ACCEL_ERR_INVALID_ARGUMENT, "op 9");
  EXPECT(out == NULL);
  accel_tensor_free(flat);
  accel_tensor_free(values);
  accel_tensor_free(indices);
  accel_tensor_free(x);
}

static void test_load_state_dict(void) {
  accel_model *model = NULL, *other = NULL;
  accel_tensor_map *params = NULL, *mine = NULL, *bad = NULL;
  accel_tensor *w = NULL, *b = NULL, *wrong = NULL, *ids = NULL, *wrong_weight = NULL, *int_bias = NULL;
  const char* spec = "[{\"type\": \"Linear\", \"in_features\": 2, \"out_features\": 2}]";
  const float wdata[4] = {1, 2, 3, 4}, nines[4] = {9, 9, 9, 9}, bdata[2] = {5, 6}, wrong_data[2] = {0, 0};
  const int64_t wshape[2] = {2, 2}, bshape[1] = {2}, ishape[2] = {2, 2};
  const int64_t idata[4] = {1, 2, 3, 4};
  float back[4] = {0}, before[4] = {0};
  EXPECT_OK(accel_model_from_json(spec, &model));
  EXPECT_OK(accel_model_from_json(spec, &other));
  w = make_f32(wdata, 4, wshape, 2);
  b = make_f32(bdata, 2, bshape, 1);
  wrong = make_f32(wrong_data, 2, bshape, 1);
  ids = make_i64(idata, 4, ishape, 2);
  wrong_weight = make_f32(nines, 4, wshape, 2);
  int_bias = make_i64(idata, 2, bshape, 1);
  EXPECT_OK(accel_tensor_map_create(&mine));
  EXPECT_OK(accel_tensor_map_set(mine, "0.weight", w));
  EXPECT_OK(accel_tensor_map_set(mine, "0.bias", b));
  EXPECT_OK(accel_model_load_state_dict(model, mine, 1));
  EXPECT_OK(accel_model_named_parameters(model, &params));
  {
    accel_tensor* got = NULL;
    EXPECT_OK(accel_tensor_map_get(params, "0.weight", &got));
    EXPECT_OK(accel_tensor_copy_to(got, back, sizeof back));
    EXPECT(memcmp(back, wdata, sizeof back) == 0);
    memcpy(before, back, sizeof before);
    accel_tensor_free(got);
  }
  /* One model's parameters load into another: the C side of model copies. */
  EXPECT_OK(accel_model_load_state_dict(other, params, 1));

  /* All or nothing: a good weight next to a bad bias changes nothing. */
  EXPECT_OK(accel_tensor_map_create(&bad));
  EXPECT_OK(accel_tensor_map_set(bad, "0.weight", b));
  EXPECT_ERROR(accel_model_load_state_dict(model, bad, 1), ACCEL_ERR_INVALID_ARGUMENT,
               "tensor \"0.weight\" has shape [2], the model's has [2, 2]");
  EXPECT_OK(accel_tensor_map_set(bad, "0.weight", ids));
  EXPECT_ERROR(accel_model_load_state_dict(model, bad, 0), ACCEL_ERR_INVALID_ARGUMENT, "is Long, the model's is Float");
  EXPECT_OK(accel_tensor_map_set(bad, "0.weight", w));
  EXPECT_OK(accel_tensor_map_set(bad, "head.bias", wrong));
  EXPECT_ERROR(accel_model_load_state_dict(model, bad, 1), ACCEL_ERR_INVALID_ARGUMENT,
               "missing 0.bias; unexpected head.bias");
  /* The weight (checked first) is fine, the bias is not: neither is copied. */
  EXPECT_OK(accel_tensor_map_set(bad, "0.weight", wrong_weight));
  EXPECT_OK(accel_tensor_map_set(bad, "0.bias", int_bias));
  EXPECT_ERROR(accel_model_load_state_dict(model, bad, 0), ACCEL_ERR_INVALID_ARGUMENT,
               "tensor \"0.bias\" is Long, the model's is Float");
  {
    accel_tensor* got = NULL;
    EXPECT_OK(accel_tensor_map_get(params, "0.weight", &got));
    EXPECT_OK(accel_tensor_copy_to(got, back, sizeof back));
    EXPECT(memcmp(back, before, sizeof back) == 0);
    accel_tensor_free(got);
  }
  EXPECT_OK(accel_tensor_map_set(bad, "0.bias", wrong));
  /* Not strict: unknown names are skipped, known ones load. */
  EXPECT_OK(accel_tensor_map_set(bad, "0.weight", w));
  EXPECT_OK(accel_model_load_state_dict(model, bad, 0));
  {
    /* What a non-strict load skipped, as PyTorch's load_state_dict returns it. */
    char* report = NULL;
    accel_tensor_map* partial = NULL;
    EXPECT_OK(accel_tensor_map_create(&partial));
    EXPECT_OK(accel_tensor_map_set(partial, "z.extra", wrong));
    EXPECT_OK(accel_tensor_map_set(partial, "0.weight", w));
    EXPECT_OK(accel_tensor_map_set(partial, "a.extra", wrong));
    EXPECT_OK(accel_model_load_state_dict_report(model, partial, 0, &report));
    EXPECT(report != NULL &&
           strcmp(report, "{\"missing_keys\":[\"0.bias\"],\"unexpected_keys\":[\"a.extra\",\"z.extra\"]}") == 0);
    accel_string_free(report);
    report = NULL;
    EXPECT_ERROR(accel_model_load_state_dict_report(model, partial, 1, &report), ACCEL_ERR_INVALID_ARGUMENT,
                 "missing 0.bias; unexpected a.extra, z.extra");
    EXPECT(report == NULL);
    EXPECT_OK(accel_model_load_state_dict_report(model, mine, 1, &report));
    EXPECT(report != NULL && strcmp(report, "{\"missing_keys\":[],\"unexpected_keys\":[]}") == 0);
    accel_string_free(report);
    accel_tensor_map_free(partial);
  }
  EXPECT_ERROR(accel_model_load_state_dict(NULL, bad, 0), ACCEL_ERR_INVALID_ARGUMENT, "model");
  accel_tensor_map_free(bad);
  accel_tensor_map_free(mine);
  accel_tensor_map_free(params);
  accel_tensor_free(int_bias);
  accel_tensor_free(wrong_weight);
  accel_tensor_free(ids);
  accel_tensor_free(wrong);
  accel_tensor_free(b);
  accel_tensor_free(w);
  accel_model_free(other);
  accel_model_free(model);
}

static void test_send_to_device(void) {
  accel_accelerator* acc = NULL;
  accel_tensor *x = scores(), *moved = NULL, *got = NULL;
  accel_tensor_map *batch = NULL, *placed = NULL;
  const char* name = NULL;
  size_t count = 0;
  float a[12] = {0}, b[12] = {0};
  EXPECT_OK(accel_accelerator_create(NULL, &acc));
  EXPECT_OK(accel_accelerator_send_to_device(acc, x, &moved));
  EXPECT_OK(accel_tensor_copy_to(x, a, sizeof a));
  EXPECT_OK(accel_tensor_copy_to(moved, b, sizeof b));
  EXPECT(memcmp(a, b, sizeof a) == 0);
  EXPECT_OK(accel_tensor_map_create(&batch));
  EXPECT_OK(accel_tensor_map_set(batch, "input_ids", x));
  EXPECT_OK(accel_tensor_map_set(batch, "labels", moved));
  EXPECT_OK(accel_accelerator_send_map_to_device(acc, batch, &placed));
  EXPECT_OK(accel_tensor_map_count(placed, &count));
  EXPECT(count == 2);
  EXPECT_OK(accel_tensor_map_name_at(placed, 1, &name));
  EXPECT(strcmp(name, "labels") == 0);
  EXPECT_OK(accel_tensor_map_get(placed, "input_ids", &got));
  accel_tensor_free(got);
  EXPECT_ERROR(accel_accelerator_send_to_device(acc, NULL, &got), ACCEL_ERR_INVALID_ARGUMENT, "tensor");
  accel_tensor_map_free(placed);
  accel_tensor_map_free(batch);
  accel_tensor_free(moved);
  accel_tensor_free(x);
  accel_accelerator_free(acc);
}

int main(void) {
  test_no_grad();
  test_loss_options();
  test_causal_lm_loss();
  test_metric_ops();
  test_load_state_dict();
  test_send_to_device();
  return capi_report("test_loop_api");
}
