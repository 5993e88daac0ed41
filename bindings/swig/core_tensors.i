/* Tensors, the named-tensor and tensor lists the collectives take, and batches.
 * Part of accel_core.i, which declares the handles and includes this file. */

%newobject AccelTensor::from_buffer;
%newobject AccelTensor::argmax;
%newobject AccelTensor::softmax;
%newobject AccelTensor::topk;
%newobject AccelTensor::mean;
%newobject AccelTensor::mean_dim;
%newobject AccelTensor::reshape;
%newobject AccelTensor::narrow;
%newobject AccelTensor::compare;
%newobject AccelTensor::loss_ext;
%newobject AccelTensor::eq;
%newobject AccelTensor::sum;
%newobject AccelTensor::loss;
%extend AccelTensor {
  /* Copies nbytes from data into a new CPU tensor of dtype and shape. */
  static AccelTensor* from_buffer(const void* data, size_t nbytes, accel_dtype dtype, const std::vector<int64_t>& shape) {
    accel_tensor* out = 0;
    accel_check(accel_tensor_from_buffer(data, nbytes, dtype, shape.data(), shape.size(), &out));
    return out;
  }
  ~AccelTensor() { accel_tensor_free($self); }
  /* Copies the elements (row-major) into data, which holds exactly nbytes. */
  void copy_to(void* data, size_t nbytes) const { accel_check(accel_tensor_copy_to($self, data, nbytes)); }
  std::vector<int64_t> shape() const {
    size_t ndim = 0;
    accel_check(accel_tensor_ndim($self, &ndim));
    std::vector<int64_t> dims(ndim);
    accel_check(accel_tensor_shape($self, dims.data(), ndim));
    return dims;
  }
  accel_dtype dtype() const {
    accel_dtype d;
    accel_check(accel_tensor_dtype($self, &d));
    return d;
  }
  int64_t numel() const {
    int64_t n = 0;
    accel_check(accel_tensor_numel($self, &n));
    return n;
  }
  size_t nbytes() const {
    int64_t n = 0;
    accel_dtype d;
    accel_check(accel_tensor_numel($self, &n));
    accel_check(accel_tensor_dtype($self, &d));
    return static_cast<size_t>(n) * accel_dtype_size(d);
  }
  double item() const {
    double v = 0;
    accel_check(accel_tensor_item($self, &v));
    return v;
  }
  AccelTensor* argmax(int64_t dim) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_argmax($self, dim, &out));
    return out;
  }
  AccelTensor* eq(const AccelTensor* other) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_eq($self, other, &out));
    return out;
  }
  AccelTensor* sum() const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_sum($self, &out));
    return out;
  }
  /* The mean loss of these predictions against target. */
  AccelTensor* loss(accel_loss_kind kind, const AccelTensor* target) const {
    accel_tensor* out = 0;
    accel_check(accel_loss(kind, $self, target, &out));
    return out;
  }
  AccelTensor* loss_ext(accel_loss_kind kind, const AccelTensor* target, int64_t ignore_index = -100,
                        double label_smoothing = 0.0) const {
    accel_loss_options options = ACCEL_LOSS_OPTIONS_INIT;
    options.ignore_index = ignore_index;
    options.label_smoothing = label_smoothing;
    accel_tensor* out = 0;
    accel_check(accel_loss_ext(kind, $self, target, &options, &out));
    return out;
  }
  AccelTensor* softmax(int64_t dim) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_softmax($self, dim, &out));
    return out;
  }
  /* "values" and "indices" in a map: one call returns both in every language. */
  AccelTensorMap* topk(int64_t k, int64_t dim) const {
    accel_tensor *values = 0, *indices = 0;
    accel_check(accel_tensor_topk($self, k, dim, &values, &indices));
    accel_tensor_map* out = 0;
    accel_status status = accel_tensor_map_create(&out);
    if (status == ACCEL_OK) status = accel_tensor_map_set(out, "values", values);
    if (status == ACCEL_OK) status = accel_tensor_map_set(out, "indices", indices);
    accel_tensor_free(values);
    accel_tensor_free(indices);
    if (status != ACCEL_OK) accel_tensor_map_free(out);
    accel_check(status);
    return out;
  }
  AccelTensor* mean() const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_mean($self, &out));
    return out;
  }
  AccelTensor* mean_dim(int64_t dim) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_mean_dim($self, dim, &out));
    return out;
  }
  AccelTensor* reshape(const std::vector<int64_t>& shape) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_reshape($self, shape.data(), shape.size(), &out));
    return out;
  }
  AccelTensor* narrow(int64_t dim, int64_t start, int64_t length) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_narrow($self, dim, start, length, &out));
    return out;
  }
  AccelTensor* compare(const AccelTensor* other, accel_compare_op op) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_compare($self, other, op, &out));
    return out;
  }
}

%extend AccelNamedTensors {
  AccelNamedTensors() { return new AccelNamedTensors(); }
  ~AccelNamedTensors() { delete $self; }
  void add(const std::string& name, const AccelTensor* tensor) {
    if (tensor == 0) accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "NamedTensors.add: tensor '" + name + "' is null");
    $self->names.push_back(name);
    $self->tensors.push_back(tensor);
  }
  size_t size() const { return $self->names.size(); }
}

%extend AccelTensorList {
  AccelTensorList() { return new AccelTensorList(); }
  ~AccelTensorList() { delete $self; }
  void add(const AccelTensor* tensor) {
    if (tensor == 0) {
      accel_fail(ACCEL_ERR_INVALID_ARGUMENT,
                 "TensorList.add: tensor " + std::to_string($self->tensors.size()) + " is null");
    }
    $self->tensors.push_back(tensor);
  }
  size_t size() const { return $self->tensors.size(); }
}

%newobject AccelBatch::take;
%extend AccelBatch {
  ~AccelBatch() { delete $self; }
  int size() const { return static_cast<int>($self->tensors.size()); }
  /* Hands tensor i to the caller (once). */
  AccelTensor* take(int i) {
    if (i < 0 || i >= static_cast<int>($self->tensors.size())) {
      accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "batch index " + std::to_string(i) + " out of range");
    }
    accel_tensor* t = $self->tensors[i];
    if (!t) accel_fail(ACCEL_ERR_STATE, "batch tensor " + std::to_string(i) + " was already taken");
    $self->tensors[i] = 0;
    return t;
  }
}
