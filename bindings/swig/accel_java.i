/* Java: package org.libaccel, JNI library libaccel_jni.so. The generated
 * classes (Accelerator, Model, Tensor, ...) are the public API; the hand-written
 * classes in bindings/java/src/main/java add the Java idioms (AutoCloseable,
 * scopes, builders, arrays, interfaces for datasets, trackers and checkpoint
 * objects), and the javacode blocks below declare the generated classes' Java
 * methods, delegating to package-private classes there.
 *
 * Errors: a non-OK status becomes org.libaccel.AccelException (unchecked,
 * getStatus()/getCode(), message = the C message); a closed object throws
 * IllegalStateException("<Type> is closed").
 * Lifetimes: close() (AutoCloseable) frees at once; a java.lang.ref.Cleaner
 * frees objects that were never closed once they are unreachable. */
%module(directors="1") Accel

%begin %{
/* Native loader threads call Java datasets: attach them as daemons once and
   detach when the thread ends, instead of attaching on every callback. */
#define SWIG_JAVA_ATTACH_CURRENT_THREAD_AS_DAEMON
#define SWIG_JAVA_DETACH_ON_THREAD_END
#define SWIG_JAVA_USE_THREAD_NAME
%}

%{
#include "accel_bridge.hpp"

namespace accel_java {

/* Throws org.libaccel.AccelException(code, message) unless a Java exception is
   already pending (that one is more precise). */
void throw_accel(JNIEnv* env, int code, const char* message) {
  if (env->ExceptionCheck()) return;
  jclass cls = env->FindClass("org/libaccel/AccelException");
  if (!cls) return;
  jmethodID ctor = env->GetMethodID(cls, "<init>", "(ILjava/lang/String;)V");
  jstring text = env->NewStringUTF(message ? message : "");
  if (ctor && text) {
    jobject error = env->NewObject(cls, ctor, (jint)code, text);
    if (error) env->Throw(static_cast<jthrowable>(error));
    env->DeleteLocalRef(error);
  }
  env->DeleteLocalRef(text);
  env->DeleteLocalRef(cls);
}

/* A primitive Java array pinned for one scope (GetPrimitiveArrayCritical):
   no JNI call may happen until it is released, so everything that can fail
   is checked before pinning, and the destructor releases it even when a
   libaccel call throws. */
class PinnedArray {
 public:
  PinnedArray(JNIEnv* env, jobject array, bool write_back)
      : env_(env), array_(static_cast<jarray>(array)), write_back_(write_back) {
    data_ = env_->GetPrimitiveArrayCritical(array_, 0);
    if (!data_) accel_fail(ACCEL_ERR_INTERNAL, "could not pin a Java array");
  }
  ~PinnedArray() { env_->ReleasePrimitiveArrayCritical(array_, data_, write_back_ ? 0 : JNI_ABORT); }
  void* data() const { return data_; }

 private:
  PinnedArray(const PinnedArray&);
  PinnedArray& operator=(const PinnedArray&);
  JNIEnv* env_;
  jarray array_;
  bool write_back_;
  void* data_;
};

/* Bytes in a primitive array of item_size-byte elements (checked first: no JNI call while pinned). */
size_t array_bytes(JNIEnv* env, jobject array, int item_size) {
  if (!array) accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "the array is null");
  return static_cast<size_t>(env->GetArrayLength(static_cast<jarray>(array))) * static_cast<size_t>(item_size);
}

/* The start of bytes [offset, offset + nbytes) of a direct buffer whose capacity is in item_size units. */
char* direct_bytes(JNIEnv* env, jobject buffer, int64_t offset, int64_t nbytes, int item_size) {
  if (!buffer) accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "the buffer is null");
  char* base = static_cast<char*>(env->GetDirectBufferAddress(buffer));
  jlong capacity = env->GetDirectBufferCapacity(buffer);
  if (!base || capacity < 0) accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "the buffer is not a direct buffer");
  if (offset < 0 || nbytes < 0 || offset + nbytes > capacity * item_size) {
    accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + nbytes) +
                                               ") lie outside the buffer's " +
                                               std::to_string(capacity * item_size) + " bytes");
  }
  return base + offset;
}

std::vector<int64_t> read_shape(JNIEnv* env, jlongArray shape) {
  if (!shape) accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "the shape is null");
  std::vector<int64_t> dims(static_cast<size_t>(env->GetArrayLength(shape)));
  if (!dims.empty()) env->GetLongArrayRegion(shape, 0, static_cast<jsize>(dims.size()), reinterpret_cast<jlong*>(dims.data()));
  return dims;
}

}  // namespace accel_java
%}

%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) jniclasscode=%{
  static {
    NativeLibrary.load();
  }
%}
%pragma(java) moduleclassmodifiers="public final class"
%javamethodmodifiers available_memory_json "private";
%rename(nativeSetSeed) set_seed;
%javamethodmodifiers set_seed "";
%pragma(java) modulecode=%{
  /**
   * Accelerate's accelerate.utils.set_seed without an accelerator: seeds LibTorch's generators
   * (CPU and CUDA) and {@link Accelerator#random()} with seed, plus this process's index with
   * deviceSpecific (read from a {@link PartialState}, as Accelerate reads it: joining the process
   * group, collective when that creates it); with deterministic LibTorch uses deterministic
   * algorithms from now on in this process. The seed is unsigned 64-bit.
   */
  public static void setSeed(long seed, boolean deviceSpecific, boolean deterministic) {
    AcceleratorSupport.setSeed(seed, deviceSpecific, deterministic);
  }

  /**
   * Accelerate's get_max_memory(): the bytes each device can take now, in inferAutoDeviceMap's
   * order: "cuda:N" (free memory of every GPU), then "cpu" (the RAM the system has available).
   */
  public static java.util.LinkedHashMap<String, Long> getMaxMemory() {
    return ModelSupport.byteCounts(availableMemoryJson());
  }
%}

/* ---- names: Java conventions ---- */
/* swig runs with -DSWIGWORDSIZE64, so int64_t is a C long, which SWIG's Java
   typemaps take for a 32-bit int: map long (int64_t) and unsigned long
   (uint64_t: seeds and epochs, same bits) to Java long. */
%apply long long { long, unsigned long };
%apply const long long & { const long &, const unsigned long & };
%include "enums.swg"
%javaconst(1);
/* Enum constants keep the C names without ACCEL_ (as in Python): DType.FLOAT32,
   MixedPrecision.PRECISION_BF16, OptimizerKind.OPTIM_ADAMW. */
%rename("%(lowercamelcase)s", %$isfunction, notregexmatch$name="^accel_") "";
%rename("%(lowercamelcase)s", %$isvariable, %$ismember) "";
%rename(TrackerBridge) Tracker;  /* the idiomatic interface is org.libaccel.Tracker */
/* Booleans of the options structs (C ints) are Java booleans. */
/* dispatch_batches stays an int: -1 is "unset" (Accelerate's None). */
%apply bool { int cpu, int sync_with_dataloader, int split_batches, int even_batches, int use_seedable_sampler,
              int device_placement, int automatic_checkpoint_naming, int save_on_each_node,
              int gradient_as_bucket_view, int static_graph, int find_unused_parameters, int broadcast_buffers,
              int nesterov, int amsgrad, int centered, int anneal_linear, int three_phase, int mode_max,
              int threshold_abs, int step_with_optimizer, int shuffle, int drop_last };
%apply bool { int sync_each_batch, int adjust_scheduler, int scaler_enabled, int autocast_enabled, int non_blocking,
              int use_stateful_dataloader, int step_scheduler_with_optimizer };

/* ---- errors ---- */
%exception {
  try {
    $action
  } catch (const AccelFailure& e) {
    accel_java::throw_accel(jenv, e.code(), e.what());
    return $null;
  } catch (const Swig::DirectorException& e) {
    e.throwException(jenv);
    return $null;
  } catch (const std::exception& e) {
    accel_java::throw_accel(jenv, ACCEL_ERR_INTERNAL, e.what());
    return $null;
  }
}

/* ---- lifetimes ---- */
/* No deprecated finalize(): handles are AutoCloseable and registered with a
   Cleaner (NativeCleanup) that frees what was never closed. */
%typemap(javafinalize) SWIGTYPE ""
%typemap(javabody) SWIGTYPE %{
  private transient long swigCPtr;
  transient boolean swigCMemOwn;
  private transient NativeCleanup swigCleanup;

  $javaclassname(long cPtr, boolean cMemoryOwn) {
    swigCMemOwn = cMemoryOwn;
    swigCPtr = cPtr;
    if (cMemoryOwn && cPtr != 0) swigCleanup = NativeCleanup.register(this, cPtr, $imclassname::delete_$javaclassname);
  }

  static long getCPtr($javaclassname obj) {
    return (obj == null) ? 0 : obj.swigCPtr;
  }
%}
/* SWIG's delete() is package-private: users call close() (AutoCloseable), which every
   class with native memory has (PublicApiTest checks that no SWIG internals are public). */
%typemap(javainterfaces) SWIGTYPE "AutoCloseable"
%typemap(javacode) SWIGTYPE %{
  /** Frees the native object now; using it afterwards throws IllegalStateException. */
  public void close() {  // no @Override: the std::vector helpers get it too, without AutoCloseable
    delete();
  }
%}
%typemap(javadestruct, methodname="delete", methodmodifiers="synchronized", parameters="") SWIGTYPE {
    if (swigCPtr != 0) {
      swigCPtr = 0;
      if (swigCMemOwn) {
        swigCMemOwn = false;
        swigCleanup.clean();
      }
    }
  }
/* Directors keep SWIG's own body: their C++ side may own them (swigReleaseOwnership).
   They are package-private: the public interfaces (MapDataset, Tracker, ...) are the
   hand-written ones, adapted in Callbacks. */
%define ACCEL_JAVA_DIRECTOR_BODY(TYPE)
%typemap(javaclassmodifiers) TYPE "class"
%typemap(javainterfaces) TYPE ""
%typemap(javacode) TYPE ""
%typemap(javabody) TYPE %{
  private transient long swigCPtr;
  transient boolean swigCMemOwn;

  $javaclassname(long cPtr, boolean cMemoryOwn) {
    swigCMemOwn = cMemoryOwn;
    swigCPtr = cPtr;
  }

  static long getCPtr($javaclassname obj) {
    return (obj == null) ? 0 : obj.swigCPtr;
  }
%}
%typemap(javadestruct, methodname="delete", methodmodifiers="synchronized", parameters="") TYPE {
    if (swigCPtr != 0) {
      if (swigCMemOwn) {
        swigCMemOwn = false;
        $jnicall;
      }
      swigCPtr = 0;
    }
  }
%enddef
ACCEL_JAVA_DIRECTOR_BODY(DatasetSource)
ACCEL_JAVA_DIRECTOR_BODY(StreamSource)
ACCEL_JAVA_DIRECTOR_BODY(Collator)
ACCEL_JAVA_DIRECTOR_BODY(CheckpointObject)
ACCEL_JAVA_DIRECTOR_BODY(StateHook)
ACCEL_JAVA_DIRECTOR_BODY(Tracker)

/* A closed object (or a callback argument used after its callback returned). */
%define ACCEL_JAVA_CLOSEABLE(TYPE, NAME)
%typemap(check) TYPE* self %{
  if (!$1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIllegalStateException, NAME " is closed");
    return $null;
  }
%}
%typemap(javainterfaces) TYPE "AutoCloseable"
%enddef
ACCEL_JAVA_CLOSEABLE(AccelTensor, "Tensor")
ACCEL_JAVA_CLOSEABLE(AccelBatch, "Batch")
ACCEL_JAVA_CLOSEABLE(AccelAccelerator, "Accelerator")
ACCEL_JAVA_CLOSEABLE(AccelModel, "Model")
ACCEL_JAVA_CLOSEABLE(AccelOptimizer, "Optimizer")
ACCEL_JAVA_CLOSEABLE(AccelScheduler, "Scheduler")
ACCEL_JAVA_CLOSEABLE(AccelDataset, "Dataset")
ACCEL_JAVA_CLOSEABLE(AccelDataLoader, "DataLoader")
ACCEL_JAVA_CLOSEABLE(AccelSequences, "Sequences")
ACCEL_JAVA_CLOSEABLE(CollateWriter, "CollateWriter")
ACCEL_JAVA_CLOSEABLE(AccelProgress, "ProgressBar")
ACCEL_JAVA_CLOSEABLE(AccelPartialState, "PartialState")
ACCEL_JAVA_CLOSEABLE(AccelProfileRun, "Profile")
ACCEL_JAVA_CLOSEABLE(SampleWriter, "Sample")
ACCEL_JAVA_CLOSEABLE(StateWriter, "StateWriter")
%typemap(javainterfaces) AccelDataLoader "AutoCloseable, Iterable<Batch>"

/* Callback results: native loader threads stay attached to the JVM, so the
   returned jstring's local reference is deleted here rather than at detach. A
   null result (a raw director returning null) becomes an error message. */
%include <std_string.i>
%typemap(directorout) std::string %{
  if (!$input) {
    $result = "a Java callback returned null instead of an error message or \"\"";
  } else {
    const char* $1_chars = jenv->GetStringUTFChars($input, 0);
    if ($1_chars) {
      $result.assign($1_chars);
      jenv->ReleaseStringUTFChars($input, $1_chars);
    } else {
      jenv->ExceptionClear();
      $result = "could not read a Java callback's result";
    }
    jenv->DeleteLocalRef($input);
  }
%}

/* ---- buffers ---- */
/* Natives that pin Java arrays themselves get the JNIEnv. */
%typemap(in, numinputs=0) JNIEnv* JENV "$1 = jenv;"
/* Checkpoint state reaches Java as byte[]. */
%apply (const char* STRING, size_t LENGTH) { (const char* data, size_t size) };
/* The raw-pointer versions are replaced by the array and buffer natives below.
   Natives modified "" (package-private) are called by the hand-written classes
   (TensorSupport, AcceleratorSupport, ...); "private" ones only by the javacode here. */
%ignore AccelTensor::from_buffer;
%ignore AccelTensor::copy_to;
%ignore SampleWriter::write;
%ignore CollateWriter::write;
%ignore StateWriter::write;
%rename(nativeShape) AccelTensor::shape;
%javamethodmodifiers AccelTensor::shape "";
%javamethodmodifiers AccelTensor::jni_from_array "";
%javamethodmodifiers AccelTensor::jni_from_direct "";
%javamethodmodifiers AccelTensor::jni_copy_to_array "";
%javamethodmodifiers AccelTensor::jni_copy_to_direct "";
%javamethodmodifiers SampleWriter::jni_write_array "protected";
%javamethodmodifiers SampleWriter::jni_write_direct "protected";
%javamethodmodifiers StateWriter::jni_write "private";
/* The director-taking methods: the Java adapters call them and manage ownership. */
%javamethodmodifiers AccelDataset::from_source "";
%javamethodmodifiers AccelDataset::from_stream "";
%javamethodmodifiers AccelDataset::from_sequences_collate "";
%javamethodmodifiers AccelAccelerator::register_for_checkpointing "";
%javamethodmodifiers AccelAccelerator::register_save_state_pre_hook "";
%javamethodmodifiers AccelAccelerator::register_load_state_pre_hook "";
%javamethodmodifiers AccelAccelerator::add_tracker "";
%javamethodmodifiers AccelAccelerator::save_tensors "";
/* setSeed below also reseeds Accelerator.random(). */
%ignore AccelAccelerator::set_seed;
%javamethodmodifiers AccelAccelerator::set_seed_ext "";
%javamethodmodifiers AccelAccelerator::state_dict_names "";
%javamethodmodifiers AccelAccelerator::state_dict_tensors "";
%javamethodmodifiers AccelDataset::from_safetensors "";
%typemap(javaclassmodifiers) AccelNamedTensors "final class";
%typemap(javaclassmodifiers) AccelTensorList "final class";
/* SWIG's helpers stay package-private: the public API takes and returns long[], List and Map. */
%typemap(javaclassmodifiers) std::vector<int64_t>, std::vector<double>, std::vector<std::string>,
                             std::vector<FieldSpec>, FieldSpec "final class";
%javamethodmodifiers AccelAccelerator::gather_list "";
%javamethodmodifiers AccelAccelerator::gather_for_metrics_list "";
%javamethodmodifiers AccelAccelerator::reduce_list "";
%javamethodmodifiers AccelAccelerator::broadcast_list "";
%javamethodmodifiers AccelAccelerator::pad_across_processes_list "";
%javamethodmodifiers AccelAccelerator::split_between_processes_list "";
%javamethodmodifiers AccelAccelerator::log "";
%javamethodmodifiers AccelAccelerator::log_to "";
%javamethodmodifiers AccelAccelerator::gather_object "";
%javamethodmodifiers AccelAccelerator::split_range "";
%javamethodmodifiers AccelPartialState::split_range "";
/* The Java accelerator records the models it prepared (the hooks pass them, as Accelerate's do). */
%rename(nativePrepareModel) AccelAccelerator::prepare_model;
%javamethodmodifiers AccelAccelerator::prepare_model "";
%rename(nativeFreeMemory) AccelAccelerator::free_memory;
%javamethodmodifiers AccelAccelerator::free_memory "";
%ignore AccelAccelerator::clear;
%rename(nativeLoadCheckpointInModel) AccelAccelerator::load_checkpoint_in_model;
%rename(nativeHeldBytes) AccelAccelerator::held_bytes;
%rename(nativeParallelismSizes) AccelAccelerator::parallelism_sizes;
%javamethodmodifiers AccelAccelerator::parallelism_sizes "";
%rename(nativeParallelismRanks) AccelAccelerator::parallelism_ranks;
%javamethodmodifiers AccelAccelerator::parallelism_ranks "";
%javamethodmodifiers AccelAccelerator::held_bytes "";
%javamethodmodifiers AccelAccelerator::load_checkpoint_in_model "";
%javamethodmodifiers AccelDataLoader::AccelDataLoader(AccelDataset*, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                                      const accel_dataloader_options*) "";
%rename(nativeFieldNames) AccelDataLoader::field_names;
%javamethodmodifiers AccelDataLoader::field_names "";
%rename(nativeSetBatches) AccelDataLoader::set_batches;
%javamethodmodifiers AccelDataLoader::set_batches "";
%javamethodmodifiers AccelModel::from_torchscript_outputs "";
%javamethodmodifiers AccelModel::from_torchscript_empty "";
/* The big-model calls cross as JSON; the Map methods of the javacode below are the API. */
%javamethodmodifiers AccelModel::module_sizes_json "";
%javamethodmodifiers AccelModel::load_state_dict_report_json "";
%javamethodmodifiers AccelModel::infer_auto_device_map_json "";
%javamethodmodifiers AccelModel::hf_device_map_json "";
%javamethodmodifiers AccelModel::balanced_memory_json "";
%javamethodmodifiers AccelModel::verify_device_map_json "private";
%javamethodmodifiers AccelModel::load_checkpoint_and_dispatch_json "";
%javamethodmodifiers AccelScheduler::AccelScheduler(AccelOptimizer*, const accel_scheduler_options*,
                                                    const std::vector<int64_t>&) "";
%javamethodmodifiers AccelSequences::from_arrays "";
%rename(nativeReshape) AccelTensor::reshape;
%javamethodmodifiers AccelTensor::reshape "";

/* ---- Java code of the generated classes ----
 * The public methods that must be members of a generated class, with their doc comments; each
 * body is one statement, delegating to a package-private class in
 * bindings/java/src/main/java/org/libaccel (TensorSupport, BatchFields, ModelSupport,
 * TensorMaps, OptimizerSupport, DataSupport, AcceleratorSupport) where there is more to do.
 * Every class that replaces SWIGTYPE's javacode declares close() itself. */
%include "java_tensors.i"
%include "java_models.i"
%include "java_data.i"
%include "java_accelerator.i"

%include "accel_core.i"

/* ---- Java-only natives (arrays and direct buffers) ---- */
%newobject AccelTensor::jni_from_array;
%newobject AccelTensor::jni_from_direct;
%extend AccelTensor {
  static AccelTensor* jni_from_array(JNIEnv* JENV, jobject data, int item_size, accel_dtype dtype, jlongArray shape) {
    size_t nbytes = accel_java::array_bytes(JENV, data, item_size);
    std::vector<int64_t> dims = accel_java::read_shape(JENV, shape);
    accel_java::PinnedArray pinned(JENV, data, false);
    accel_tensor* out = 0;
    accel_check(accel_tensor_from_buffer(pinned.data(), nbytes, dtype, dims.data(), dims.size(), &out));
    return out;
  }
  static AccelTensor* jni_from_direct(JNIEnv* JENV, jobject data, int item_size, int64_t offset, int64_t nbytes,
                                      accel_dtype dtype, jlongArray shape) {
    char* bytes = accel_java::direct_bytes(JENV, data, offset, nbytes, item_size);
    std::vector<int64_t> dims = accel_java::read_shape(JENV, shape);
    accel_tensor* out = 0;
    accel_check(accel_tensor_from_buffer(bytes, static_cast<size_t>(nbytes), dtype, dims.data(), dims.size(), &out));
    return out;
  }
  void jni_copy_to_array(JNIEnv* JENV, jobject data, int item_size) const {
    size_t nbytes = accel_java::array_bytes(JENV, data, item_size);
    accel_java::PinnedArray pinned(JENV, data, true);
    accel_check(accel_tensor_copy_to($self, pinned.data(), nbytes));
  }
  void jni_copy_to_direct(JNIEnv* JENV, jobject data, int item_size, int64_t offset, int64_t nbytes) const {
    char* bytes = accel_java::direct_bytes(JENV, data, offset, nbytes, item_size);
    accel_check(accel_tensor_copy_to($self, bytes, static_cast<size_t>(nbytes)));
  }
}

%extend SampleWriter {
  void jni_write_array(JNIEnv* JENV, int field, jobject data, int item_size) {
    size_t nbytes = accel_java::array_bytes(JENV, data, item_size);
    size_t expected = $self->nbytes(field);  /* checks the index */
    if (nbytes != expected) {
      accel_fail(ACCEL_ERR_INVALID_ARGUMENT, "field " + std::to_string(field) + " takes " + std::to_string(expected) +
                                                 " bytes, got " + std::to_string(nbytes));
    }
    accel_java::PinnedArray pinned(JENV, data, false);
    $self->write(field, pinned.data(), nbytes);
  }
  void jni_write_direct(JNIEnv* JENV, int field, jobject data, int64_t offset, int64_t nbytes) {
    char* bytes = accel_java::direct_bytes(JENV, data, offset, nbytes, 1);
    $self->write(field, bytes, static_cast<size_t>(nbytes));
  }
}

%extend StateWriter {
  void jni_write(JNIEnv* JENV, jbyteArray data) {
    size_t nbytes = accel_java::array_bytes(JENV, data, 1);
    accel_java::PinnedArray pinned(JENV, data, false);
    $self->write(pinned.data(), nbytes);
  }
}
