/* The interface shared by every language: the C ABI's handles as classes,
 * its options structs, enums and the callback classes of accel_bridge.hpp.
 * Each language's file (accel_python.i, accel_java.i, accel_go.i) starts the
 * module, adds its typemaps (errors, buffers) and then includes this file.
 *
 * Every method calls one accel_* function; a non-OK status throws
 * AccelFailure, which the language file turns into its own error. */

%include <stdint.i>
%include <std_string.i>
%include <std_vector.i>

%{
#include "accel_bridge.hpp"
#include "accel/big_model.h"

/* Big-model calls (below): an empty string stands for NULL; returned strings are freed here. */
static const char* accel_null_if_empty(const std::string& text) { return text.empty() ? 0 : text.c_str(); }
static std::string accel_take_string(char* text) {
  std::string out = text ? text : "";
  accel_string_free(text);
  return out;
}

/* Aliases of the opaque handles: %extend on the C names would generate
   helpers named like the C functions (accel_tensor_free ...). */
typedef accel_tensor AccelTensor;
typedef accel_accelerator AccelAccelerator;
typedef accel_model AccelModel;
typedef accel_optimizer AccelOptimizer;
typedef accel_scheduler AccelScheduler;
typedef accel_dataset AccelDataset;
typedef accel_dataloader AccelDataLoader;
typedef accel_sequences AccelSequences;
typedef accel_progress AccelProgress;
typedef accel_tensor_map AccelTensorMap;
typedef accel_partial_state AccelPartialState;

/* Trackers added through the bindings belong to their accelerator: the C API
   borrows them until end_training or accel_accelerator_free, so they are
   deleted only after both (see accel_bindings_free_accelerator). */
#include <map>
#include <mutex>
static std::mutex accel_tracker_mutex;
static std::map<const accel_accelerator*, std::vector<Tracker*> > accel_owned_trackers;

static void accel_bindings_free_accelerator(accel_accelerator* acc) {
  if (!acc) return;
  std::vector<Tracker*> trackers;
  {
    std::lock_guard<std::mutex> lock(accel_tracker_mutex);
    auto it = accel_owned_trackers.find(acc);
    if (it != accel_owned_trackers.end()) {
      trackers.swap(it->second);
      accel_owned_trackers.erase(it);
    }
  }
  if (!trackers.empty()) accel_accelerator_end_training(acc);  /* last calls into the trackers */
  accel_accelerator_free(acc);
  for (Tracker* t : trackers) delete t;
}

struct AccelProfileRun {
  accel_profile* handle = 0;
};

/* Named tensors for save_tensors; borrows the tensors (the language layers keep
   them alive until the save returns). */
struct AccelNamedTensors {
  std::vector<std::string> names;
  std::vector<const accel_tensor*> tensors;
};

/* A flat list of tensors for the list collectives (a binding's nested
   structure, flattened); borrows them, as AccelNamedTensors does. */
struct AccelTensorList {
  std::vector<const accel_tensor*> tensors;
};

/* One batch from a loader: its tensors until each is taken. */
struct AccelBatch {
  std::vector<accel_tensor*> tensors;
  ~AccelBatch() {
    for (accel_tensor* t : tensors) accel_tensor_free(t);
  }
};
/* ProfileKwargs' flags as accel_profile_option bits. */
static unsigned profile_options(bool record_shapes, bool profile_memory, bool with_flops, bool with_stack,
                                bool with_modules) {
  return (record_shapes ? ACCEL_PROFILE_RECORD_SHAPES : 0u) | (profile_memory ? ACCEL_PROFILE_MEMORY : 0u) |
         (with_flops ? ACCEL_PROFILE_WITH_FLOPS : 0u) | (with_stack ? ACCEL_PROFILE_WITH_STACK : 0u) |
         (with_modules ? ACCEL_PROFILE_WITH_MODULES : 0u);
}
/* The C calls over batch arrays read sum(lengths) indices: never more than
   there are. A length < 1 is left to them to name. */
static void check_batch_layout(const std::vector<int64_t>& indices, const std::vector<int64_t>& lengths) {
  int64_t total = 0;
  bool positive = true;
  for (size_t b = 0; b < lengths.size() && positive; ++b) {
    positive = lengths[b] >= 1;
    if (positive) total += lengths[b];
    if (total > (int64_t)indices.size()) break;
  }
  if (positive ? total != (int64_t)indices.size() : total > (int64_t)indices.size()) {
    accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "batch lengths add up to " + std::to_string(total) + ", not the " +
                                               std::to_string(indices.size()) + " indices");
  }
}

/* log's and log_to's names as the C calls take them; as many values as names. */
static std::vector<const char*> scalar_names(const std::vector<std::string>& names, const std::vector<double>& values) {
  if (names.size() != values.size()) {
    accel_fail(ACCEL_ERR_INVALID_ARGUMENT,
               std::to_string(names.size()) + " names but " + std::to_string(values.size()) + " values");
  }
  std::vector<const char*> raw;
  for (const std::string& n : names) raw.push_back(n.c_str());
  return raw;
}
%}

%template(Int64Vector) std::vector<int64_t>;
%template(DoubleVector) std::vector<double>;
%template(StringVector) std::vector<std::string>;
%template(FieldSpecVector) std::vector<FieldSpec>;

/* ---- enums and options structs from the C headers ---- */
%rename("%(strip:[ACCEL_])s", %$isenumitem) "";
%rename("$ignore", regextarget=1, %$isfunction) "^accel_";
%ignore accel_tensor;
%ignore accel_accelerator;
%ignore accel_model;
%ignore accel_optimizer;
%ignore accel_scheduler;
%ignore accel_dataset;
%ignore accel_dataloader;
%ignore accel_sequences;
%ignore accel_collate_fn;
%ignore accel_progress;
%ignore accel_tensor_map;
%ignore accel_partial_state;
%ignore accel_partial_state_options;
%ignore accel_profile;
%ignore accel_profile_schedule;
%ignore accel_bytes_writer;
%ignore accel_field_spec;
%ignore accel_dataset_callbacks;
%ignore accel_stream_callbacks;
%ignore accel_checkpoint_callbacks;
%ignore accel_tracker_callbacks;
%ignore accel_state_hook;
%ignore struct_size;
%ignore accel_scheduler_options::milestones;
%ignore accel_scheduler_options::num_milestones;
%rename(AcceleratorOptions) accel_accelerator_options;
%rename(OptimizerOptions) accel_optimizer_options;
%rename(SchedulerOptions) accel_scheduler_options;
%rename(DataLoaderOptions) accel_dataloader_options;
%rename(PaddingOptions) accel_padding_options;
%rename(TextSplit) accel_text_split;
%rename(Status) accel_status;
%rename(DType) accel_dtype;
%rename(DistributedType) accel_distributed_type;
%rename(MixedPrecision) accel_mixed_precision;
%rename(ReduceOp) accel_reduce_op;
%rename(CommHook) accel_comm_hook;
%rename(ShardingStrategy) accel_sharding_strategy;
%rename(LossKind) accel_loss_kind;
%rename(LossOptions) accel_loss_options;
%rename(CompareOp) accel_compare_op;
%rename(OptimizerKind) accel_optimizer_kind;
%rename(SchedulerKind) accel_scheduler_kind;
%rename(LogLevel) accel_log_level;
%rename(Feature) accel_feature;
%warnfilter(451) accel_accelerator_options;  /* const char* fields are copied; old values leak a few bytes */
#define ACCEL_API
%include "accel/types.h"
%include "accel/accel.h"
%include "accel/accel_model.h"
%include "accel/accel_data.h"
%include "accel/accel_checkpoint.h"
%include "accel/accel_tracking.h"

%extend accel_accelerator_options {
  accel_accelerator_options() {
    accel_accelerator_options* o = new accel_accelerator_options;
    accel_accelerator_options_init(o);
    return o;
  }
}
%extend accel_optimizer_options {
  accel_optimizer_options(accel_optimizer_kind kind = ACCEL_OPTIM_ADAMW) {
    accel_optimizer_options* o = new accel_optimizer_options;
    accel_optimizer_options_init(o, kind);
    return o;
  }
}
%extend accel_scheduler_options {
  accel_scheduler_options(accel_scheduler_kind kind) {
    accel_scheduler_options* o = new accel_scheduler_options;
    accel_scheduler_options_init(o, kind);
    return o;
  }
}
%extend accel_dataloader_options {
  accel_dataloader_options() {
    accel_dataloader_options* o = new accel_dataloader_options;
    accel_dataloader_options_init(o);
    return o;
  }
}

%extend accel_padding_options {
  accel_padding_options() {
    accel_padding_options* o = new accel_padding_options;
    accel_padding_options_init(o);
    return o;
  }
}

/* ---- callback classes (directors) ---- */
%feature("director") DatasetSource;
%feature("director") StreamSource;
%feature("director") Collator;
%feature("director") CheckpointObject;
%feature("director") StateHook;
%feature("director") Tracker;
%ignore AccelFailure;
%ignore accel_check;
%ignore accel_fail;
%ignore accel_bridge;
%ignore SampleWriter::SampleWriter;
%ignore StateWriter::StateWriter;
%ignore CollateWriter::CollateWriter;
/* Bindings pass Tensor objects: put() below takes the handle type SWIG knows. */
%ignore CollateWriter::write_tensor;
%include "accel_bridge.hpp"

%extend CollateWriter {
  /* Copies tensor (any dtype and shape) into field `field` of the batch. */
  void put(int field, const AccelTensor* tensor) { $self->write_tensor(field, tensor); }
}

/* ---- module functions ---- */
%inline %{
static std::string version() { return accel_version(); }
/* The built-in trackers' names, comma-separated (what log_with takes besides "all"). */
static std::string builtin_tracker_names() { return accel_builtin_tracker_names(); }
static std::string available_memory_json() {
  char* out = 0;
  accel_check(accel_available_memory(&out));
  return accel_take_string(out);
}
static int abi_version() { return accel_abi_version(); }
static bool has_feature(accel_feature feature) { return accel_has_feature(feature) != 0; }
static size_t dtype_size(accel_dtype dtype) { return accel_dtype_size(dtype); }
static std::string status_name(int status) { return accel_status_name(static_cast<accel_status>(status)); }
/* Accelerate's accelerate.utils.set_seed without an accelerator (accel_set_seed):
   LibTorch's generators only; the language layer adds its own and the process index. */
static void set_seed(uint64_t seed, bool deterministic = false) { accel_check(accel_set_seed(seed, deterministic)); }
/* The CUDA devices LibTorch sees (accel_cuda_device_count). */
static int cuda_device_count() {
  int n = 0;
  accel_check(accel_cuda_device_count(&n));
  return n;
}
static void log_message(const std::string& name, accel_log_level level, const std::string& message,
                        bool main_process_only = true) {
  accel_check(accel_log(name.c_str(), level, message.c_str(), main_process_only));
}
/* The results of a list collective in a batch: on failure nothing was
   published, so only the empty batch goes. */
static AccelBatch* accel_new_list_result(size_t count) {
  AccelBatch* batch = new AccelBatch;
  batch->tensors.assign(count, 0);
  return batch;
}
static AccelBatch* accel_list_result(AccelBatch* batch, accel_status status) {
  if (status != ACCEL_OK) {
    delete batch;
    accel_check(status);
  }
  return batch;
}
%}

/* ---- handles ---- */
%nodefaultctor AccelTensor;
%nodefaultctor AccelBatch;
%nodefaultctor AccelModel;
%nodefaultctor AccelDataset;
%nodefaultctor AccelSequences;
%nodefaultctor AccelProfileRun;
%rename(Tensor) AccelTensor;
%rename(Batch) AccelBatch;
%rename(Accelerator) AccelAccelerator;
%rename(Model) AccelModel;
%rename(Optimizer) AccelOptimizer;
%rename(Scheduler) AccelScheduler;
%rename(Dataset) AccelDataset;
%rename(DataLoader) AccelDataLoader;
%rename(Sequences) AccelSequences;
%rename(ProgressBar) AccelProgress;
%rename(Profile) AccelProfileRun;
%rename(NamedTensors) AccelNamedTensors;
%rename(TensorList) AccelTensorList;
%rename(TensorMap) AccelTensorMap;
%rename(PartialState) AccelPartialState;
struct AccelTensor {};
struct AccelBatch {};
struct AccelAccelerator {};
struct AccelModel {};
struct AccelOptimizer {};
struct AccelScheduler {};
struct AccelDataset {};
struct AccelDataLoader {};
struct AccelSequences {};
struct AccelProgress {};
struct AccelProfileRun {};
struct AccelNamedTensors {};
struct AccelTensorList {};
struct AccelTensorMap {};
struct AccelPartialState {};

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

%newobject AccelModel::from_json;
%newobject AccelModel::from_torchscript;
%newobject AccelModel::forward;
%extend AccelModel {
  static AccelModel* from_json(const std::string& spec) {
    accel_model* out = 0;
    accel_check(accel_model_from_json(spec.c_str(), &out));
    return out;
  }
  static AccelModel* from_torchscript(const std::string& path) {
    accel_model* out = 0;
    accel_check(accel_model_from_torchscript(path.c_str(), &out));
    return out;
  }
  ~AccelModel() { accel_model_free($self); }
  AccelTensor* forward(const AccelTensor* input) {
    accel_tensor* out = 0;
    accel_check(accel_model_forward($self, input, &out));
    return out;
  }
  void train(bool training = true) { accel_check(accel_model_train($self, training)); }
  int64_t num_parameters(bool trainable_only = false) const {
    int64_t n = 0;
    accel_check(accel_model_num_parameters($self, trainable_only, &n));
    return n;
  }
}

/* Named tensors in and out of a model (accel_tensor_map): the language layers
   turn them into a dict/Map/map. */
%newobject AccelTensorMap::get;
%extend AccelTensorMap {
  AccelTensorMap() {
    accel_tensor_map* out = 0;
    accel_check(accel_tensor_map_create(&out));
    return out;
  }
  ~AccelTensorMap() { accel_tensor_map_free($self); }
  void set(const std::string& name, const AccelTensor* tensor) {
    accel_check(accel_tensor_map_set($self, name.c_str(), tensor));
  }
  size_t count() const {
    size_t n = 0;
    accel_check(accel_tensor_map_count($self, &n));
    return n;
  }
  std::string name_at(size_t index) const {
    const char* name = 0;
    accel_check(accel_tensor_map_name_at($self, index, &name));
    return name;
  }
  AccelTensor* get(const std::string& name) const {
    accel_tensor* out = 0;
    accel_check(accel_tensor_map_get($self, name.c_str(), &out));
    return out;
  }
}

/* ---- big models (accel/big_model.h) ----
   Device maps and sizes cross as JSON strings; the language layers turn them
   into a dict / Map / map. An empty string stands for C's NULL (no dtype, no
   offload folder, the default map). */
%newobject AccelModel::from_json_empty;
%newobject AccelModel::from_torchscript_empty;
%extend AccelModel {
  static AccelModel* from_json_empty(const std::string& spec) {
    accel_model* out = 0;
    accel_check(accel_model_from_json_empty(spec.c_str(), &out));
    return out;
  }
  static AccelModel* from_torchscript_empty(const std::string& path, const std::vector<std::string>& output_names) {
    std::vector<const char*> names;
    for (const auto& name : output_names) names.push_back(name.c_str());
    accel_model* out = 0;
    accel_check(accel_model_from_torchscript_empty(path.c_str(), names.data(), names.size(), &out));
    return out;
  }
  std::string module_sizes_json(const std::string& dtype = "") const {
    char* out = 0;
    accel_check(accel_model_module_sizes($self, accel_null_if_empty(dtype), &out));
    return accel_take_string(out);
  }
  /* transformers' hf_device_map as JSON ("{}": not dispatched). */
  std::string hf_device_map_json() const {
    char* out = 0;
    accel_check(accel_model_hf_device_map($self, &out));
    return accel_take_string(out);
  }
  std::string infer_auto_device_map_json(const std::string& max_memory_json,
                                         const std::vector<std::string>& no_split_module_classes,
                                         const std::string& dtype = "") const {
    std::vector<const char*> names;
    for (const auto& name : no_split_module_classes) names.push_back(name.c_str());
    char* out = 0;
    /* "" is NULL: every GPU's free memory and the RAM available (accel_available_memory). */
    accel_check(accel_infer_auto_device_map($self, accel_null_if_empty(max_memory_json), names.empty() ? 0 : names.data(),
                                            names.size(), accel_null_if_empty(dtype), &out));
    return accel_take_string(out);
  }
  std::string balanced_memory_json(const std::string& max_memory_json,
                                   const std::vector<std::string>& no_split_module_classes,
                                   const std::string& dtype = "", bool low_zero = false) const {
    std::vector<const char*> names;
    for (const auto& name : no_split_module_classes) names.push_back(name.c_str());
    char* out = 0;
    /* "" is NULL: the budgets read from the devices (a lone GPU then keeps 10% free). */
    accel_check(accel_balanced_memory($self, accel_null_if_empty(max_memory_json), names.empty() ? 0 : names.data(),
                                      names.size(), accel_null_if_empty(dtype), low_zero ? 1 : 0, &out));
    return accel_take_string(out);
  }
  void verify_device_map_json(const std::string& device_map_json) const {
    accel_check(accel_verify_device_map($self, device_map_json.c_str()));
  }
  /* "" is the CPU. */
  void disk_offload(const std::string& offload_dir, const std::string& execution_device = "") {
    accel_check(accel_disk_offload_on_device($self, offload_dir.c_str(), accel_null_if_empty(execution_device)));
  }
  void dispatch_model_json(const std::string& device_map_json, const std::string& offload_dir = "") {
    accel_check(accel_dispatch_model($self, device_map_json.c_str(), accel_null_if_empty(offload_dir)));
  }
  /* "" is NULL: the device of the first parameter (Accelerate's default). */
  void cpu_offload(const std::string& execution_device = "", bool offload_buffers = false) {
    accel_check(accel_cpu_offload($self, accel_null_if_empty(execution_device), offload_buffers ? 1 : 0));
  }
  void materialize(const std::string& checkpoint, const std::string& dtype = "") {
    accel_check(accel_model_materialize($self, checkpoint.c_str(), accel_null_if_empty(dtype)));
  }
  void load_checkpoint_and_dispatch_json(const std::string& checkpoint, const std::string& device_map_json,
                                         const std::string& offload_folder = "", const std::string& dtype = "") {
    accel_check(accel_load_checkpoint_and_dispatch($self, checkpoint.c_str(), accel_null_if_empty(device_map_json),
                                                   accel_null_if_empty(offload_folder), accel_null_if_empty(dtype)));
  }
}

%newobject AccelModel::from_torchscript_outputs;
%newobject AccelModel::forward_named;
%newobject AccelModel::named_parameters;
%newobject AccelModel::named_buffers;
%extend AccelModel {
  static AccelModel* from_torchscript_outputs(const std::string& path, const std::vector<std::string>& output_names) {
    std::vector<const char*> names;
    for (const auto& name : output_names) names.push_back(name.c_str());
    accel_model* out = 0;
    accel_check(accel_model_from_torchscript_outputs(path.c_str(), names.data(), names.size(), &out));
    return out;
  }
  AccelTensorMap* forward_named(const AccelTensorMap* inputs) {
    accel_tensor_map* out = 0;
    accel_check(accel_model_forward_named($self, inputs, &out));
    return out;
  }
  AccelTensorMap* named_parameters() const {
    accel_tensor_map* out = 0;
    accel_check(accel_model_named_parameters($self, &out));
    return out;
  }
  AccelTensorMap* named_buffers() const {
    accel_tensor_map* out = 0;
    accel_check(accel_model_named_buffers($self, &out));
    return out;
  }
  /* PyTorch's load_state_dict; returns {"missing_keys": [...], "unexpected_keys": [...]}. */
  std::string load_state_dict_report_json(const AccelTensorMap* tensors, bool strict = true) {
    char* out = 0;
    accel_check(accel_model_load_state_dict_report($self, tensors, strict ? 1 : 0, &out));
    return accel_take_string(out);
  }
}

%extend AccelOptimizer {
  AccelOptimizer(AccelModel* model, const accel_optimizer_options* options = 0) {
    accel_optimizer* out = 0;
    accel_check(accel_optimizer_create(model, options, &out));
    return out;
  }
  ~AccelOptimizer() { accel_optimizer_free($self); }
  void step() { accel_check(accel_optimizer_step($self)); }
  void zero_grad() { accel_check(accel_optimizer_zero_grad($self)); }
  double get_lr() const {
    double lr = 0;
    accel_check(accel_optimizer_get_lr($self, &lr));
    return lr;
  }
  void set_lr(double lr) { accel_check(accel_optimizer_set_lr($self, lr)); }
  bool step_was_skipped() const {
    int v = 0;
    accel_check(accel_optimizer_step_was_skipped($self, &v));
    return v != 0;
  }
}

%extend AccelScheduler {
  AccelScheduler(AccelOptimizer* optimizer, const accel_scheduler_options* options,
                 const std::vector<int64_t>& milestones = std::vector<int64_t>()) {
    accel_scheduler_options o = *options;
    o.milestones = milestones.data();
    o.num_milestones = milestones.size();
    accel_scheduler* out = 0;
    accel_check(accel_scheduler_create(optimizer, &o, &out));
    return out;
  }
  ~AccelScheduler() { accel_scheduler_free($self); }
  void step() { accel_check(accel_scheduler_step($self)); }
  void step_metric(double metric) { accel_check(accel_scheduler_step_metric($self, metric)); }
  double get_last_lr() const {
    double lr = 0;
    accel_check(accel_scheduler_get_last_lr($self, &lr));
    return lr;
  }
  int64_t last_epoch() const {
    int64_t e = 0;
    accel_check(accel_scheduler_last_epoch($self, &e));
    return e;
  }
}

%newobject AccelDataset::from_tensors;
%newobject AccelDataset::from_idx;
%newobject AccelDataset::from_csv;
%newobject AccelDataset::from_safetensors;
%newobject AccelDataset::from_source;
%newobject AccelDataset::from_stream;
%newobject AccelDataset::from_sequences;
%newobject AccelDataset::from_sequences_collate;
%extend AccelDataset {
  static AccelDataset* from_tensors(const AccelTensor* inputs, const AccelTensor* targets) {
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_tensors(inputs, targets, &out));
    return out;
  }
  static AccelDataset* from_idx(const std::string& images_path, const std::string& labels_path, double mean = 0.0,
                                double std = 1.0) {
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_idx(images_path.c_str(), labels_path.c_str(), mean, std, &out));
    return out;
  }
  static AccelDataset* from_csv(const std::string& path, const std::string& label_column,
                                accel_dtype label_dtype = ACCEL_INT64) {
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_csv(path.c_str(), label_column.c_str(), label_dtype, &out));
    return out;
  }
  /* Every *.safetensors file of directory, concatenated in file-name order;
     each name in fields becomes one field of a sample. */
  static AccelDataset* from_safetensors(const std::string& directory, const std::vector<std::string>& fields) {
    std::vector<const char*> names;
    for (const std::string& name : fields) names.push_back(name.c_str());
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_safetensors(directory.c_str(), names.data(), static_cast<int>(names.size()), &out));
    return out;
  }
  /* A map-style dataset of length samples read from source, which the dataset
     owns from now on (the language adapters hand it over). */
  static AccelDataset* from_source(DatasetSource* source, int64_t length, const std::vector<FieldSpec>& fields) {
    std::vector<accel_field_spec> specs;
    for (const FieldSpec& f : fields) specs.push_back({f.dtype, static_cast<int>(f.shape.size()), f.shape.data()});
    accel_dataset_callbacks callbacks;
    accel_dataset_callbacks_init(&callbacks);
    callbacks.length = accel_bridge::map_length;
    callbacks.get_sample = accel_bridge::map_get_sample;
    callbacks.release = accel_bridge::map_release;
    auto* context = new accel_bridge::MapContext{source, length, static_cast<int>(fields.size())};
    accel_dataset* out = 0;
    accel_status status = accel_dataset_from_callbacks(specs.data(), static_cast<int>(specs.size()), &callbacks,
                                                       context, &out);
    if (status != ACCEL_OK) delete context;  /* the source stays the caller's */
    accel_check(status);
    return out;
  }
  static AccelDataset* from_stream(StreamSource* source, const std::vector<FieldSpec>& fields) {
    std::vector<accel_field_spec> specs;
    for (const FieldSpec& f : fields) specs.push_back({f.dtype, static_cast<int>(f.shape.size()), f.shape.data()});
    accel_stream_callbacks callbacks;
    accel_stream_callbacks_init(&callbacks);
    callbacks.next_sample = accel_bridge::stream_next;
    callbacks.reset = accel_bridge::stream_reset;
    callbacks.release = accel_bridge::stream_release;
    auto* context = new accel_bridge::StreamContext{source, static_cast<int>(fields.size())};
    accel_dataset* out = 0;
    accel_status status = accel_dataset_from_stream(specs.data(), static_cast<int>(specs.size()), &callbacks,
                                                    context, &out);
    if (status != ACCEL_OK) delete context;
    accel_check(status);
    return out;
  }
  /* Batches padded to their longest sequence (input_ids, attention_mask, labels). */
  static AccelDataset* from_sequences(const AccelSequences* sequences, const accel_padding_options* options = 0) {
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_sequences(sequences, options, &out));
    return out;
  }
  /* Batches made by collator, which the dataset owns from now on (the language
     adapters hand it over), with these field names. */
  static AccelDataset* from_sequences_collate(const AccelSequences* sequences, const std::vector<std::string>& names,
                                              Collator* collator) {
    std::vector<const char*> pointers;
    for (const std::string& name : names) pointers.push_back(name.c_str());
    accel_dataset* out = 0;
    accel_check(accel_dataset_from_sequences_collate(sequences, pointers.data(), static_cast<int>(pointers.size()),
                                                     accel_bridge::collate_call, collator,
                                                     accel_bridge::collate_release, &out));
    return out;
  }
  ~AccelDataset() { accel_dataset_free($self); }
  int64_t size() const {
    int64_t n = 0;
    accel_check(accel_dataset_size($self, &n));
    return n;
  }
  bool is_iterable() const {
    int v = 0;
    accel_check(accel_dataset_is_iterable($self, &v));
    return v != 0;
  }
}

/* Token sequences (accel_data.h: accel_sequences_*). */
%newobject AccelSequences::from_arrays;
%newobject AccelSequences::from_jsonl;
%newobject AccelSequences::from_text;
%newobject AccelSequences::from_text_vocab;
%newobject AccelSequences::from_safetensors;
%newobject AccelSequences::ids;
%newobject AccelSequences::labels;
%extend AccelSequences {
  static AccelSequences* from_arrays(const std::vector<int64_t>& ids, const std::vector<int64_t>& offsets,
                                     const std::vector<int64_t>& labels, int64_t vocab_size = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_arrays(ids.data(), ids.size(), offsets.data(), offsets.size(),
                                            labels.empty() ? 0 : labels.data(), labels.size(), vocab_size, &out));
    return out;
  }
  static AccelSequences* from_jsonl(const std::string& path, const std::string& ids_key = "input_ids",
                                    const std::string& labels_key = "", int64_t vocab_size = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_jsonl(path.c_str(), ids_key.c_str(), labels_key.c_str(), vocab_size, &out));
    return out;
  }
  static AccelSequences* from_text(const std::string& path, accel_text_split rule = ACCEL_TEXT_LINES,
                                   const std::string& separator = "%", int64_t chunk_length = 128,
                                   int64_t stride = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_text(path.c_str(), rule, separator.c_str(), chunk_length, stride, &out));
    return out;
  }
  static AccelSequences* from_text_vocab(const std::string& path, const std::string& vocab_path,
                                         accel_text_split rule = ACCEL_TEXT_LINES, const std::string& separator = "%",
                                         int64_t chunk_length = 128, int64_t stride = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_text_vocab(path.c_str(), vocab_path.c_str(), rule, separator.c_str(),
                                                chunk_length, stride, &out));
    return out;
  }
  static AccelSequences* from_safetensors(const std::string& path, const std::string& ids_name = "input_ids",
                                          const std::string& offsets_name = "offsets",
                                          const std::string& labels_name = "", int64_t vocab_size = 0) {
    accel_sequences* out = 0;
    accel_check(accel_sequences_from_safetensors(path.c_str(), ids_name.c_str(), offsets_name.c_str(),
                                                 labels_name.c_str(), vocab_size, &out));
    return out;
  }
  ~AccelSequences() { accel_sequences_free($self); }
  int64_t size() const {
    int64_t n = 0;
    accel_check(accel_sequences_count($self, &n));
    return n;
  }
  int64_t length(int64_t index) const {
    int64_t n = 0;
    accel_check(accel_sequences_length($self, index, &n));
    return n;
  }
  /* Sequence index's ids, int64 [length]. */
  AccelTensor* ids(int64_t index) const {
    accel_tensor *ids = 0, *labels = 0;
    accel_check(accel_sequences_get($self, index, &ids, &labels));
    accel_tensor_free(labels);
    return ids;
  }
  /* Its labels, or null when the sequences have none. */
  AccelTensor* labels(int64_t index) const {
    accel_tensor *ids = 0, *labels = 0;
    accel_check(accel_sequences_get($self, index, &ids, &labels));
    accel_tensor_free(ids);
    return labels;
  }
}

%newobject AccelDataLoader::next_batch;
%newobject AccelDataLoader::skip_first_batches;
%extend AccelDataLoader {
  AccelDataLoader(AccelDataset* dataset, const accel_dataloader_options* options = 0) {
    accel_dataloader* out = 0;
    accel_check(accel_dataloader_create(dataset, options, &out));
    return out;
  }
  /* length_grouped true: length-grouped batches over a sequence dataset
     (accel_dataloader_create_length_grouped). */
  AccelDataLoader(AccelDataset* dataset, const accel_dataloader_options* options, bool length_grouped) {
    accel_dataloader* out = 0;
    accel_check(length_grouped ? accel_dataloader_create_length_grouped(dataset, options, &out)
                               : accel_dataloader_create(dataset, options, &out));
    return out;
  }
  /* A loader over a user's batch sampler: batch b holds lengths[b] indices,
     taken in order from indices (accel_dataloader_create_from_batches). */
  AccelDataLoader(AccelDataset* dataset, const std::vector<int64_t>& indices, const std::vector<int64_t>& lengths,
                  const accel_dataloader_options* options) {
    check_batch_layout(indices, lengths);
    accel_dataloader* out = 0;
    accel_check(accel_dataloader_create_from_batches(dataset, indices.data(), lengths.data(),
                                                     (int64_t)lengths.size(), options, &out));
    return out;
  }
  ~AccelDataLoader() { accel_dataloader_free($self); }
  /* The next batch, or null at the end of the epoch (the call after starts the next). */
  AccelBatch* next_batch() {
    accel_tensor* fields[16] = {0};
    int count = 0;
    accel_check(accel_dataloader_next_fields($self, fields, 16, &count));
    if (count == 0) return 0;
    AccelBatch* batch = new AccelBatch;
    batch->tensors.assign(fields, fields + count);
    return batch;
  }
  int64_t num_batches() const {
    int64_t n = 0;
    accel_check(accel_dataloader_num_batches($self, &n));
    return n;
  }
  AccelDataLoader* skip_first_batches(int64_t num_batches) const {
    accel_dataloader* out = 0;
    accel_check(accel_dataloader_skip_first_batches($self, num_batches, &out));
    return out;
  }
  void set_epoch(uint64_t epoch) { accel_check(accel_dataloader_set_epoch($self, epoch)); }
  /* The epoch being iterated, or the next one between epochs (accel_dataloader_epoch). */
  uint64_t epoch() const {
    uint64_t out = 0;
    accel_check(accel_dataloader_epoch($self, &out));
    return out;
  }
  /* New batch sampler batches from the next epoch on, laid out as in the
     constructor (accel_dataloader_set_batches). */
  void set_batches(const std::vector<int64_t>& indices, const std::vector<int64_t>& lengths) {
    check_batch_layout(indices, lengths);
    accel_check(accel_dataloader_set_batches($self, indices.data(), lengths.data(), (int64_t)lengths.size()));
  }
  /* A progress bar per epoch on rank 0 (accel_dataloader_set_progress): "" labels it
     "epoch N"; None/null turns it off. */
  void set_progress(const char* description = "") { accel_check(accel_dataloader_set_progress($self, description)); }
  /* Turns the bar off (set_progress(NULL)), for languages whose strings cannot be null. */
  void hide_progress() { accel_check(accel_dataloader_set_progress($self, 0)); }
  /* The names of the batch's fields (empty when they are positional). */
  std::vector<std::string> field_names() const {
    const char* names[64];
    int count = 0;
    accel_check(accel_dataloader_field_names($self, names, 64, &count));
    return std::vector<std::string>(names, names + count);
  }
}

%newobject AccelAccelerator::gather;
%newobject AccelAccelerator::send_to_device;
%newobject AccelAccelerator::send_map_to_device;
%newobject AccelAccelerator::gather_for_metrics;
%newobject AccelAccelerator::reduce;
%newobject AccelAccelerator::broadcast;
%newobject AccelAccelerator::pad_across_processes;
%newobject AccelAccelerator::split_between_processes;
%newobject AccelAccelerator::state_dict_tensors;
%newobject AccelAccelerator::gather_list;
%newobject AccelAccelerator::gather_for_metrics_list;
%newobject AccelAccelerator::reduce_list;
%newobject AccelAccelerator::broadcast_list;
%newobject AccelAccelerator::pad_across_processes_list;
%newobject AccelAccelerator::split_between_processes_list;
%extend AccelAccelerator {
  AccelAccelerator(const accel_accelerator_options* options = 0) {
    accel_accelerator* out = 0;
    accel_check(accel_accelerator_create(options, &out));
    return out;
  }
  ~AccelAccelerator() { accel_bindings_free_accelerator($self); }

  int process_index() const { int v = 0; accel_check(accel_accelerator_process_index($self, &v)); return v; }
  int local_process_index() const { int v = 0; accel_check(accel_accelerator_local_process_index($self, &v)); return v; }
  int num_processes() const { int v = 0; accel_check(accel_accelerator_num_processes($self, &v)); return v; }
  bool is_main_process() const { int v = 0; accel_check(accel_accelerator_is_main_process($self, &v)); return v != 0; }
  bool is_local_main_process() const {
    int v = 0;
    accel_check(accel_accelerator_is_local_main_process($self, &v));
    return v != 0;
  }
  accel_distributed_type distributed_type() const {
    accel_distributed_type v;
    accel_check(accel_accelerator_distributed_type($self, &v));
    return v;
  }
  accel_mixed_precision mixed_precision() const {
    accel_mixed_precision v;
    accel_check(accel_accelerator_mixed_precision($self, &v));
    return v;
  }
  std::string device() const { const char* v = 0; accel_check(accel_accelerator_device($self, &v)); return v; }
  int64_t timeout_ms() const { int64_t v = 0; accel_check(accel_accelerator_timeout_ms($self, &v)); return v; }
  accel_sharding_strategy sharding_strategy() const {
    accel_sharding_strategy v;
    accel_check(accel_accelerator_sharding_strategy($self, &v));
    return v;
  }
  bool cpu_offload() const { int v = 0; accel_check(accel_accelerator_cpu_offload($self, &v)); return v != 0; }
  /* [dp_replicate_size, dp_shard_size, tp_size, cp_size] of the mesh in use; each
     language's layer turns it into its ParallelismConfig. */
  std::vector<int64_t> parallelism_sizes() const {
    int64_t replicate = 0, shard = 0, tp = 0, cp = 0;
    accel_check(accel_accelerator_parallelism_config($self, &replicate, &shard, &tp, &cp));
    return std::vector<int64_t>{replicate, shard, tp, cp};
  }
  std::vector<int64_t> parallelism_ranks() const {
    int64_t replicate = 0, shard = 0, tp = 0, cp = 0;
    accel_check(accel_accelerator_parallelism_ranks($self, &replicate, &shard, &tp, &cp));
    return std::vector<int64_t>{replicate, shard, tp, cp};
  }

  void wait_for_everyone() { accel_check(accel_accelerator_wait_for_everyone($self)); }
  void print(const std::string& message) const { accel_check(accel_accelerator_print($self, message.c_str())); }
  void set_seed(uint64_t seed) { accel_check(accel_accelerator_set_seed($self, seed)); }
  /* Accelerate's set_seed(seed, device_specific, deterministic); the language
     layers also seed their own generators (no defaults: SWIG-Go would make
     them variadic). */
  void set_seed_ext(uint64_t seed, bool device_specific, bool deterministic) {
    accel_check(accel_accelerator_set_seed_ext($self, seed, device_specific, deterministic));
  }

  AccelTensor* gather(const AccelTensor* tensor) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_gather($self, tensor, &out));
    return out;
  }
  AccelTensor* gather_for_metrics(const AccelTensor* tensor) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_gather_for_metrics($self, tensor, &out));
    return out;
  }
  AccelTensor* reduce(const AccelTensor* tensor, accel_reduce_op op = ACCEL_REDUCE_SUM) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_reduce($self, tensor, op, &out));
    return out;
  }
  AccelTensor* broadcast(const AccelTensor* tensor, int from_process = 0) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_broadcast($self, tensor, from_process, &out));
    return out;
  }
  AccelTensor* pad_across_processes(const AccelTensor* tensor, int64_t dim = 0, double pad_value = 0.0,
                                    bool pad_first = false) {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_pad_across_processes($self, tensor, dim, pad_value, pad_first, &out));
    return out;
  }
  AccelTensor* split_between_processes(const AccelTensor* tensor, bool apply_padding = false) const {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_split_between_processes($self, tensor, apply_padding, &out));
    return out;
  }
  /* List collectives (accel.h): one result per tensor, in a Batch. */
  AccelBatch* gather_list(const AccelTensorList& tensors) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_gather_tensors($self, tensors.tensors.data(), tensors.tensors.size(),
                                                                   out->tensors.data()));
  }
  AccelBatch* gather_for_metrics_list(const AccelTensorList& tensors) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_gather_for_metrics_tensors(
                                      $self, tensors.tensors.data(), tensors.tensors.size(), out->tensors.data()));
  }
  AccelBatch* reduce_list(const AccelTensorList& tensors, accel_reduce_op op = ACCEL_REDUCE_SUM, double scale = 1.0) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_reduce_tensors($self, tensors.tensors.data(), tensors.tensors.size(),
                                                                   op, scale, out->tensors.data()));
  }
  AccelBatch* broadcast_list(const AccelTensorList& tensors, int from_process = 0) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_broadcast_tensors($self, tensors.tensors.data(),
                                                                      tensors.tensors.size(), from_process,
                                                                      out->tensors.data()));
  }
  AccelBatch* pad_across_processes_list(const AccelTensorList& tensors, int64_t dim = 0, double pad_value = 0.0,
                                        bool pad_first = false) {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_pad_across_processes_tensors(
                                      $self, tensors.tensors.data(), tensors.tensors.size(), dim, pad_value,
                                      pad_first, out->tensors.data()));
  }
  AccelBatch* split_between_processes_list(const AccelTensorList& tensors, bool apply_padding = false) const {
    AccelBatch* out = accel_new_list_result(tensors.tensors.size());
    return accel_list_result(out, accel_accelerator_split_between_processes_tensors(
                                      $self, tensors.tensors.data(), tensors.tensors.size(), apply_padding,
                                      out->tensors.data()));
  }
  /* {start, end, padded_length}: the items of n this process takes (accel_accelerator_split_range). */
  std::vector<int64_t> split_range(int64_t n, bool apply_padding = false) const {
    int64_t start = 0, end = 0, padded = 0;
    accel_check(accel_accelerator_split_range($self, n, apply_padding, &start, &end, &padded));
    return std::vector<int64_t>{start, end, padded};
  }
  int64_t metrics_length(int64_t gathered) const {
    int64_t v = 0;
    accel_check(accel_accelerator_metrics_length($self, gathered, &v));
    return v;
  }
  bool debug_mode() const { int v = 0; accel_check(accel_accelerator_debug_mode($self, &v)); return v != 0; }
  /* Process from_process's string on every process (the bytes travel unchanged). */
  std::string broadcast_object(const std::string& data, int from_process = 0) {
    accel_tensor* bytes = 0;
    accel_check(accel_accelerator_broadcast_object($self, data.data(), data.size(), from_process, &bytes));
    int64_t total = 0;
    accel_tensor_numel(bytes, &total);
    std::string all(static_cast<size_t>(total), '\0');
    accel_status s = total > 0 ? accel_tensor_copy_to(bytes, &all[0], all.size()) : ACCEL_OK;
    accel_tensor_free(bytes);
    accel_check(s);
    return all;
  }
  /* Accelerate's accelerator.save for named tensors: one safetensors file,
     written by the main process. Borrows the tensors. */
  void save_tensors(const AccelNamedTensors& tensors, const std::string& path) {
    std::vector<const char*> names;
    for (const std::string& name : tensors.names) names.push_back(name.c_str());
    accel_check(accel_accelerator_save_tensors($self, names.data(), tensors.tensors.data(), names.size(), path.c_str()));
  }
  /* Every process's string, in rank order (the bytes travel unchanged). */
  std::vector<std::string> gather_object(const std::string& data) {
    accel_tensor* bytes = 0;
    accel_tensor* lengths = 0;
    accel_check(accel_accelerator_gather_object($self, data.data(), data.size(), &bytes, &lengths));
    int64_t total = 0, count = 0;
    accel_tensor_numel(bytes, &total);
    accel_tensor_numel(lengths, &count);
    std::string all(static_cast<size_t>(total), '\0');
    std::vector<int64_t> sizes(static_cast<size_t>(count));
    accel_status s1 = accel_tensor_copy_to(bytes, &all[0], all.size());
    accel_status s2 = accel_tensor_copy_to(lengths, sizes.data(), sizes.size() * sizeof(int64_t));
    accel_tensor_free(bytes);
    accel_tensor_free(lengths);
    accel_check(s1);
    accel_check(s2);
    std::vector<std::string> result;
    size_t offset = 0;
    for (int64_t n : sizes) {
      result.push_back(all.substr(offset, static_cast<size_t>(n)));
      offset += static_cast<size_t>(n);
    }
    return result;
  }
  void set_trigger() { accel_check(accel_accelerator_set_trigger($self)); }
  bool check_trigger() { int v = 0; accel_check(accel_accelerator_check_trigger($self, &v)); return v != 0; }
  void main_process_first_begin() { accel_check(accel_accelerator_main_process_first_begin($self)); }
  void main_process_first_end() { accel_check(accel_accelerator_main_process_first_end($self)); }
  void local_main_process_first_begin() { accel_check(accel_accelerator_local_main_process_first_begin($self)); }
  void local_main_process_first_end() { accel_check(accel_accelerator_local_main_process_first_end($self)); }
  /* Forgets every prepared object, resets accumulation, empties the CUDA cache. */
  void free_memory() { accel_check(accel_accelerator_free_memory($self)); }
  void clear() { accel_check(accel_accelerator_free_memory($self)); }  /* Accelerate's alias */

  void prepare_model(AccelModel* model) { accel_check(accel_accelerator_prepare_model($self, model)); }
  void prepare_optimizer(AccelOptimizer* optimizer) { accel_check(accel_accelerator_prepare_optimizer($self, optimizer)); }
  void prepare_dataloader(AccelDataLoader* loader) { accel_check(accel_accelerator_prepare_dataloader($self, loader)); }
  void prepare_scheduler(AccelScheduler* scheduler) { accel_check(accel_accelerator_prepare_scheduler($self, scheduler)); }
  void backward(const AccelTensor* loss) { accel_check(accel_accelerator_backward($self, loss)); }

  void accumulate_begin(AccelModel* model) { accel_check(accel_accelerator_accumulate_begin($self, model)); }
  void accumulate_end(AccelModel* model) { accel_check(accel_accelerator_accumulate_end($self, model)); }
  bool end_of_dataloader() const { int v = 0; accel_check(accel_accelerator_end_of_dataloader($self, &v)); return v != 0; }
  int64_t remainder() const { int64_t v = 0; accel_check(accel_accelerator_remainder($self, &v)); return v; }
  bool sync_gradients() const { int v = 0; accel_check(accel_accelerator_sync_gradients($self, &v)); return v != 0; }
  int64_t gradient_accumulation_steps() const {
    int64_t v = 0;
    accel_check(accel_accelerator_gradient_accumulation_steps($self, &v));
    return v;
  }
  /* Accelerate's accelerator.step: micro-steps counted into the accumulation window. */
  int64_t accumulation_step() const {
    int64_t v = 0;
    accel_check(accel_accelerator_accumulation_step($self, &v));
    return v;
  }
  /* Accelerate's setters: accelerator.sync_gradients = ..., gradient_accumulation_steps = ..., even_batches = ... */
  void set_sync_gradients(bool sync) { accel_check(accel_accelerator_set_sync_gradients($self, sync)); }
  void set_gradient_accumulation_steps(int64_t steps) {
    accel_check(accel_accelerator_set_gradient_accumulation_steps($self, steps));
  }
  void set_even_batches(bool even) { accel_check(accel_accelerator_set_even_batches($self, even)); }
  /* The DataLoaderConfiguration in use; dispatch_batches -1 when unset, data_seed -1 when none. */
  bool split_batches() const { int v = 0; accel_check(accel_accelerator_split_batches($self, &v)); return v != 0; }
  bool even_batches() const { int v = 0; accel_check(accel_accelerator_even_batches($self, &v)); return v != 0; }
  int dispatch_batches() const { int v = 0; accel_check(accel_accelerator_dispatch_batches($self, &v)); return v; }
  bool use_seedable_sampler() const {
    int v = 0;
    accel_check(accel_accelerator_use_seedable_sampler($self, &v));
    return v != 0;
  }
  int64_t data_seed() const { int64_t v = 0; accel_check(accel_accelerator_data_seed($self, &v)); return v; }
  bool non_blocking() const { int v = 0; accel_check(accel_accelerator_non_blocking($self, &v)); return v != 0; }
  bool use_stateful_dataloader() const {
    int v = 0;
    accel_check(accel_accelerator_use_stateful_dataloader($self, &v));
    return v != 0;
  }
  /* Comma-separated generator names: "torch", "cuda", "generator". Collective. */
  void synchronize_rng_states(const std::string& rng_types) {
    accel_check(accel_accelerator_synchronize_rng_states($self, rng_types.c_str()));
  }
  void no_sync_begin(AccelModel* model) { accel_check(accel_accelerator_no_sync_begin($self, model)); }
  void no_sync_end(AccelModel* model) { accel_check(accel_accelerator_no_sync_end($self, model)); }
  void average_parameters(AccelModel* model) { accel_check(accel_accelerator_average_parameters($self, model)); }
  void trigger_sync_in_backward(AccelModel* model) { accel_check(accel_accelerator_trigger_sync_in_backward($self, model)); }
  /* Returns the total norm before clipping. */
  /* Bytes held for the model's parameters, gradients and the optimizer's state (optimizer may
     be null): {parameters, gradients, optimizer_state}. */
  std::vector<int64_t> held_bytes(const AccelModel* model, const AccelOptimizer* optimizer = 0) const {
    int64_t parameters = 0, gradients = 0, state = 0;
    accel_check(accel_accelerator_held_bytes($self, model, optimizer, &parameters, &gradients, &state));
    return {parameters, gradients, state};
  }
  double clip_grad_norm(AccelModel* model, double max_norm, double norm_type = 2.0) {
    double total = 0;
    accel_check(accel_accelerator_clip_grad_norm($self, model, max_norm, norm_type, &total));
    return total;
  }
  void clip_grad_value(AccelModel* model, double clip_value) {
    accel_check(accel_accelerator_clip_grad_value($self, model, clip_value));
  }
  void unscale_gradients(AccelOptimizer* optimizer) { accel_check(accel_accelerator_unscale_gradients($self, optimizer)); }
  double loss_scale() const { double v = 0; accel_check(accel_accelerator_loss_scale($self, &v)); return v; }
  void join_uneven_inputs_begin() { accel_check(accel_accelerator_join_uneven_inputs_begin($self)); }
  void join_uneven_inputs_end() { accel_check(accel_accelerator_join_uneven_inputs_end($self)); }
  void autocast_begin(bool enabled) { accel_check(accel_accelerator_autocast_begin($self, enabled ? 1 : 0)); }
  /* Follows the options' autocast_enabled (AutocastKwargs given at creation). */
  void autocast_begin_default() { accel_check(accel_accelerator_autocast_begin($self, -1)); }
  void autocast_end() { accel_check(accel_accelerator_autocast_end($self)); }
  void no_grad_begin() { accel_check(accel_accelerator_no_grad_begin($self)); }
  void no_grad_end() { accel_check(accel_accelerator_no_grad_end($self)); }
  AccelTensor* send_to_device(const AccelTensor* tensor) const {
    accel_tensor* out = 0;
    accel_check(accel_accelerator_send_to_device($self, tensor, &out));
    return out;
  }
  AccelTensorMap* send_map_to_device(const AccelTensorMap* tensors) const {
    accel_tensor_map* out = 0;
    accel_check(accel_accelerator_send_map_to_device($self, tensors, &out));
    return out;
  }

  /* ---- checkpoints ---- */
  /* Returns the directory written (dir, or the automatic checkpoint_{i}). */
  /* safe_serialization=false: pytorch_model.bin instead of model.safetensors (Accelerate 0.22 reads it). */
  std::string save_state(const std::string& dir = "", bool safe_serialization = true) {
    accel_check(accel_accelerator_save_state_ext($self, dir.c_str(), safe_serialization));
    const char* written = "";
    accel_check(accel_accelerator_last_checkpoint_dir($self, &written));
    return written;
  }
  void load_state(const std::string& dir = "") { accel_check(accel_accelerator_load_state($self, dir.c_str())); }
  int64_t save_iteration() const { int64_t v = 0; accel_check(accel_accelerator_save_iteration($self, &v)); return v; }
  /* Accelerate's project_configuration.iteration = n. */
  void set_save_iteration(int64_t iteration) { accel_check(accel_accelerator_set_save_iteration($self, iteration)); }
  void save_model(const AccelModel* model, const std::string& dir, const std::string& max_shard_size = "10GB",
                  bool safe_serialization = true) {
    accel_check(accel_accelerator_save_model($self, model, dir.c_str(), max_shard_size.c_str(), safe_serialization));
  }
  /* Accelerate's get_state_dict, in two calls: the names, then CPU copies of
     the tensors in the same order (a Batch whose tensors are taken one by one). */
  std::vector<std::string> state_dict_names(const AccelModel* model) {
    size_t count = 0;
    accel_check(accel_accelerator_get_state_dict($self, model, 0, 0, 0, &count));
    std::vector<const char*> names(count);
    accel_check(accel_accelerator_get_state_dict($self, model, names.data(), 0, count, &count));
    return std::vector<std::string>(names.begin(), names.end());
  }
  AccelBatch* state_dict_tensors(const AccelModel* model) {
    size_t count = 0;
    accel_check(accel_accelerator_get_state_dict($self, model, 0, 0, 0, &count));
    AccelBatch* batch = new AccelBatch;
    batch->tensors.assign(count, 0);
    accel_status status = accel_accelerator_get_state_dict($self, model, 0, batch->tensors.data(), count, &count);
    if (status != ACCEL_OK) {
      delete batch;
      accel_check(status);
    }
    return batch;
  }
  /* Returns {missing, unexpected}: the model tensors the file lacks and the file tensors the model lacks. */
  /* strict defaults to false, as Accelerate's load_checkpoint_in_model (which loads with strict=False). */
  std::vector<int64_t> load_checkpoint_in_model(AccelModel* model, const std::string& path, bool strict = false) {
    int64_t missing = 0, unexpected = 0;
    accel_check(accel_accelerator_load_checkpoint_in_model($self, model, path.c_str(), strict, &missing, &unexpected));
    return std::vector<int64_t>{missing, unexpected};
  }
  /* The accelerator owns object from now on (the language adapters hand it over). */
  void register_for_checkpointing(CheckpointObject* object) {
    accel_checkpoint_callbacks callbacks;
    accel_checkpoint_callbacks_init(&callbacks);
    callbacks.save = accel_bridge::checkpoint_save;
    callbacks.load = accel_bridge::checkpoint_load;
    callbacks.release = accel_bridge::checkpoint_release;
    accel_check(accel_accelerator_register_for_checkpointing($self, &callbacks, object));
  }
  /* Both take ownership of hook; the returned id removes it. */
  int64_t register_save_state_pre_hook(StateHook* hook) {
    int64_t id = 0;
    accel_check(accel_accelerator_register_save_state_pre_hook($self, accel_bridge::hook_run, hook,
                                                               accel_bridge::hook_release, &id));
    return id;
  }
  int64_t register_load_state_pre_hook(StateHook* hook) {
    int64_t id = 0;
    accel_check(accel_accelerator_register_load_state_pre_hook($self, accel_bridge::hook_run, hook,
                                                               accel_bridge::hook_release, &id));
    return id;
  }
  void remove_hook(int64_t id) { accel_check(accel_accelerator_remove_hook($self, id)); }

  /* ---- tracking ---- */
  /* The accelerator owns tracker from now on (the language adapters hand it over). */
  void add_tracker(Tracker* tracker, const std::string& name) {
    accel_tracker_callbacks callbacks;
    accel_tracker_callbacks_init(&callbacks);
    callbacks.name = name.c_str();
    callbacks.user = tracker;
    callbacks.init = accel_bridge::tracker_init;
    callbacks.log = accel_bridge::tracker_log;
    callbacks.finish = accel_bridge::tracker_finish;
    accel_check(accel_accelerator_add_tracker($self, &callbacks));
    std::lock_guard<std::mutex> lock(accel_tracker_mutex);
    accel_owned_trackers[$self].push_back(tracker);
  }
  void init_trackers(const std::string& project_name, const std::string& config_json = "",
                     const std::string& init_kwargs_json = "") {
    accel_check(accel_accelerator_init_trackers_with($self, project_name.c_str(),
                                                     config_json.empty() ? 0 : config_json.c_str(),
                                                     init_kwargs_json.c_str()));
  }
  void log(const std::vector<std::string>& names, const std::vector<double>& values, int64_t step = -1) {
    const std::vector<const char*> raw = scalar_names(names, values);
    accel_check(accel_accelerator_log($self, raw.data(), values.data(), values.size(), step));
  }
  void log_text(const std::string& tag, const std::string& text, int64_t step = -1) {
    accel_check(accel_accelerator_log_text($self, tag.c_str(), text.c_str(), step));
  }
  /* Accelerate's get_tracker(tracker).log: to one running tracker. */
  void log_to(const std::string& tracker, const std::vector<std::string>& names, const std::vector<double>& values,
              int64_t step = -1) {
    const std::vector<const char*> raw = scalar_names(names, values);
    accel_check(accel_accelerator_log_to($self, tracker.c_str(), raw.data(), values.data(), values.size(), step));
  }
  void log_text_to(const std::string& tracker, const std::string& tag, const std::string& text, int64_t step = -1) {
    accel_check(accel_accelerator_log_text_to($self, tracker.c_str(), tag.c_str(), text.c_str(), step));
  }
  bool has_tracker(const std::string& name) const {
    int v = 0;
    accel_check(accel_accelerator_has_tracker($self, name.c_str(), &v));
    return v != 0;
  }
  void end_training() { accel_check(accel_accelerator_end_training($self)); }
}

/* Accelerate's PartialState: this process's place in the launch and the
   world's process group, shared with every accelerator of the process. */
%extend AccelPartialState {
  AccelPartialState(bool cpu = false, int64_t timeout_ms = 1800000) {
    accel_partial_state_options opts;
    accel_partial_state_options_init(&opts);
    opts.cpu = cpu ? 1 : 0;
    opts.timeout_ms = timeout_ms;
    accel_partial_state* out = 0;
    accel_check(accel_partial_state_create(&opts, &out));
    return out;
  }
  ~AccelPartialState() { accel_partial_state_free($self); }
  int process_index() const { int v = 0; accel_check(accel_partial_state_process_index($self, &v)); return v; }
  int local_process_index() const {
    int v = 0;
    accel_check(accel_partial_state_local_process_index($self, &v));
    return v;
  }
  int num_processes() const { int v = 0; accel_check(accel_partial_state_num_processes($self, &v)); return v; }
  accel_distributed_type distributed_type() const {
    accel_distributed_type v;
    accel_check(accel_partial_state_distributed_type($self, &v));
    return v;
  }
  std::string device() const { const char* v = 0; accel_check(accel_partial_state_device($self, &v)); return v; }
  /* {start, end, padded_length}, as Accelerator's split_range. */
  std::vector<int64_t> split_range(int64_t n, bool apply_padding = false) const {
    int64_t start = 0, end = 0, padded = 0;
    accel_check(accel_partial_state_split_range($self, n, apply_padding, &start, &end, &padded));
    return std::vector<int64_t>{start, end, padded};
  }
  void wait_for_everyone() { accel_check(accel_partial_state_wait_for_everyone($self)); }
}

%extend AccelProgress {
  AccelProgress(int64_t total, const std::string& description = "", bool main_process_only = true) {
    accel_progress* out = 0;
    accel_check(accel_progress_create(total, description.c_str(), main_process_only, &out));
    return out;
  }
  ~AccelProgress() { accel_progress_free($self); }
  void update(int64_t steps = 1) { accel_check(accel_progress_update($self, steps)); }
}

/* A running profile (Accelerate's accelerator.profile()); end() writes the
   Chrome trace. Dropping a running profile ends it too. */
%newobject AccelProfileRun::begin;
%newobject AccelProfileRun::begin_with;
%newobject AccelProfileRun::begin_scheduled;
%extend AccelProfileRun {
  /* ProfileKwargs' record_shapes, profile_memory, with_flops, with_stack and with_modules. */
  static AccelProfileRun* begin_with(const AccelAccelerator* accelerator, const std::string& output_trace_dir,
                                     bool record_shapes, bool profile_memory, bool with_flops, bool with_stack,
                                     bool with_modules) {
    const unsigned options = profile_options(record_shapes, profile_memory, with_flops, with_stack, with_modules);
    accel_profile* handle = 0;
    accel_check(accel_profile_begin_with(accelerator, output_trace_dir.c_str(), options, &handle));
    AccelProfileRun* run = new AccelProfileRun;
    run->handle = handle;
    return run;
  }
  /* The same under ProfileKwargs' schedule_option (accel_profile_begin_scheduled). */
  static AccelProfileRun* begin_scheduled(const AccelAccelerator* accelerator, const std::string& output_trace_dir,
                                          bool record_shapes, bool profile_memory, bool with_flops,
                                          bool with_stack, bool with_modules, int64_t wait, int64_t warmup,
                                          int64_t active, int64_t repeat, int64_t skip_first) {
    const unsigned options = profile_options(record_shapes, profile_memory, with_flops, with_stack, with_modules);
    accel_profile_schedule schedule;
    accel_profile_schedule_init(&schedule);
    schedule.wait = wait;
    schedule.warmup = warmup;
    schedule.active = active;
    schedule.repeat = repeat;
    schedule.skip_first = skip_first;
    accel_profile* handle = 0;
    accel_check(accel_profile_begin_scheduled(accelerator, output_trace_dir.c_str(), options, &schedule, &handle));
    AccelProfileRun* run = new AccelProfileRun;
    run->handle = handle;
    return run;
  }
  /* prof.step(): true when a scheduled cycle just ended and its trace was written. */
  bool step() {
    if (!$self->handle) accel_fail(ACCEL_ERR_STATE, "the profile has already ended");
    int ready = 0;
    accel_check(accel_profile_step($self->handle, &ready));
    return ready != 0;
  }
  static AccelProfileRun* begin(const AccelAccelerator* accelerator, const std::string& output_trace_dir) {
    accel_profile* handle = 0;
    accel_check(accel_profile_begin(accelerator, output_trace_dir.c_str(), &handle));
    AccelProfileRun* run = new AccelProfileRun;
    run->handle = handle;
    return run;
  }
  ~AccelProfileRun() {
    if ($self->handle) accel_profile_end($self->handle);
    delete $self;
  }
  void end() {
    if (!$self->handle) accel_fail(ACCEL_ERR_STATE, "the profile has already ended");
    // STATE (called on another thread than begin's): still running, the handle stays valid.
    const accel_status status = accel_profile_end($self->handle);
    if (status != ACCEL_ERR_STATE) $self->handle = 0;
    accel_check(status);
  }
}
