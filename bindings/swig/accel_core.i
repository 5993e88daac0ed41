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

/* Big-model calls (core_models.i): an empty string stands for NULL; returned strings are freed here. */
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

/* The handles' methods, by area. */
%include "core_tensors.i"
%include "core_models.i"
%include "core_data.i"
%include "core_accelerator.i"
