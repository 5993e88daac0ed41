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
%typemap(javaimports) AccelTensor %{
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
%}
%typemap(javacode) AccelTensor %{
  /** Frees the tensor now; using it afterwards throws IllegalStateException. */
  @Override
  public void close() {
    delete();
  }

  /** A float32 tensor copied from data; shape defaults to {data.length}. */
  public static Tensor of(float[] data, long... shape) {
    return TensorSupport.of(data, shape);
  }

  /** A float64 tensor copied from data; shape defaults to {data.length}. */
  public static Tensor of(double[] data, long... shape) {
    return TensorSupport.of(data, shape);
  }

  /** An int64 tensor copied from data; shape defaults to {data.length}. */
  public static Tensor of(long[] data, long... shape) {
    return TensorSupport.of(data, shape);
  }

  /** An int32 tensor copied from data; shape defaults to {data.length}. */
  public static Tensor of(int[] data, long... shape) {
    return TensorSupport.of(data, shape);
  }

  /** A bool tensor copied from data; shape defaults to {data.length}. */
  public static Tensor of(boolean[] data, long... shape) {
    return TensorSupport.of(data, shape);
  }

  /** A tensor of dtype whose raw bytes (native byte order) are data, e.g. uint8 images. */
  public static Tensor ofBytes(byte[] data, DType dtype, long... shape) {
    return TensorSupport.ofBytes(data, dtype, shape);
  }

  /** A 0-dimensional float64 tensor. */
  public static Tensor scalar(double value) {
    return TensorSupport.scalar(value);
  }

  /** A float32 tensor copied from the buffer's remaining elements (direct buffers without an extra copy). */
  public static Tensor fromBuffer(FloatBuffer data, long... shape) {
    return TensorSupport.fromBuffer(data, shape);
  }

  /** A float64 tensor copied from the buffer's remaining elements. */
  public static Tensor fromBuffer(DoubleBuffer data, long... shape) {
    return TensorSupport.fromBuffer(data, shape);
  }

  /** An int64 tensor copied from the buffer's remaining elements. */
  public static Tensor fromBuffer(LongBuffer data, long... shape) {
    return TensorSupport.fromBuffer(data, shape);
  }

  /** An int32 tensor copied from the buffer's remaining elements. */
  public static Tensor fromBuffer(IntBuffer data, long... shape) {
    return TensorSupport.fromBuffer(data, shape);
  }

  /** A tensor of dtype whose bytes are the buffer's remaining bytes; multi-byte dtypes need ByteOrder.nativeOrder(). */
  public static Tensor fromBuffer(ByteBuffer data, DType dtype, long... shape) {
    return TensorSupport.fromBuffer(data, dtype, shape);
  }

  /** The sizes of the dimensions ({} for a scalar). */
  public long[] shape() {
    return TensorSupport.shape(this);
  }

  /** A tensor of the same elements with this shape (one dimension may be -1). */
  public Tensor reshape(long... shape) {
    return TensorSupport.reshape(this, shape);
  }

  /** The number of dimensions. */
  public int dim() {
    return shape().length;
  }

  /** Copies the elements (row-major) into out, which must hold exactly numel() floats of a float32 tensor. */
  public void copyTo(float[] out) {
    TensorSupport.copyTo(this, out);
  }

  public void copyTo(double[] out) {
    TensorSupport.copyTo(this, out);
  }

  public void copyTo(long[] out) {
    TensorSupport.copyTo(this, out);
  }

  public void copyTo(int[] out) {
    TensorSupport.copyTo(this, out);
  }

  public void copyTo(boolean[] out) {
    TensorSupport.copyTo(this, out);
  }

  /** Copies the raw bytes (any dtype, native byte order); out holds exactly nbytes(). */
  public void copyTo(byte[] out) {
    jniCopyToArray(out, 1);
  }

  /** Copies the elements into the buffer's remaining space (exactly numel() floats) without moving its position. */
  public void copyTo(FloatBuffer out) {
    TensorSupport.copyTo(this, out);
  }

  /** Copies the raw bytes into the buffer's remaining space (exactly nbytes()) without moving its position. */
  public void copyTo(ByteBuffer out) {
    TensorSupport.copyTo(this, out);
  }

  public float[] toFloatArray() {
    return TensorSupport.toFloatArray(this);
  }

  public double[] toDoubleArray() {
    return TensorSupport.toDoubleArray(this);
  }

  public long[] toLongArray() {
    return TensorSupport.toLongArray(this);
  }

  public int[] toIntArray() {
    return TensorSupport.toIntArray(this);
  }

  public boolean[] toBooleanArray() {
    return TensorSupport.toBooleanArray(this);
  }

  /** The raw bytes of the elements in native byte order. */
  public byte[] toByteArray() {
    return TensorSupport.toByteArray(this);
  }

  /** The mean loss of these predictions against target. */
  public Tensor crossEntropy(Tensor target) {
    return loss(LossKind.LOSS_CROSS_ENTROPY, target);
  }

  @Override
  public String toString() {
    return TensorSupport.describe(this);
  }
%}

%typemap(javacode) AccelBatch %{
  private final BatchFields fields = new BatchFields();

  /** Frees the batch and every tensor taken from it with get(). */
  @Override
  public void close() {
    fields.close();
    delete();
  }

  /** Field i of the batch (inputs = 0, targets = 1), owned by the batch: close() frees it. */
  public Tensor get(int i) {
    return fields.get(this, i);
  }

  /** The fields by name (loader.fieldNames()), owned by the batch as get(i)'s are. */
  public java.util.Map<String, Tensor> asMap(java.util.List<String> names) {
    return fields.asMap(this, names);
  }

  public Tensor inputs() {
    return get(0);
  }

  public Tensor targets() {
    return get(1);
  }
%}

%typemap(javacode) AccelModel %{
  @Override
  public void close() {
    delete();
  }

  /** A TorchScript model whose outputs (a tuple or a single tensor) get these names, in order. */
  public static Model fromTorchscriptOutputs(String path, java.util.List<String> outputNames) {
    return ModelSupport.fromTorchscriptOutputs(path, outputNames);
  }

  /**
   * A TorchScript model with its parameters on the meta device, never read from the file
   * (Accelerate's init_empty_weights): its code, constants and buffers are loaded. Fill it with
   * materialize or loadCheckpointAndDispatch; forward fails until then.
   */
  public static Model fromTorchscriptEmpty(String path) {
    return ModelSupport.fromTorchscriptEmpty(path, java.util.List.of());
  }

  /** fromTorchscriptEmpty, naming the outputs as fromTorchscriptOutputs does. */
  public static Model fromTorchscriptEmpty(String path, java.util.List<String> outputNames) {
    return ModelSupport.fromTorchscriptEmpty(path, outputNames);
  }

  /** Evaluation mode (train(false)). */
  public void eval() {
    train(false);
  }

  // ---- big models (docs/big-models.md): maps of module name to "cpu", "disk" or "cuda:N" ----

  /**
   * Bytes of every module's parameters and buffers ("" is the whole model), as if cast to dtype
   * (null: each tensor's own). Accelerate's compute_module_sizes.
   */
  public java.util.LinkedHashMap<String, Long> moduleSizes(String dtype) {
    return ModelSupport.moduleSizes(this, dtype);
  }

  /**
   * transformers' hf_device_map: the device map dispatchModel or loadCheckpointAndDispatch last
   * placed this model with (an "auto" map as computed), module name to device in the map's order;
   * empty when neither did. Accelerate's verify_device_map is its size above one.
   */
  public java.util.LinkedHashMap<String, String> hfDeviceMap() {
    return ModelSupport.deviceMapOf(hfDeviceMapJson());
  }

  /**
   * Accelerate 0.22's infer_auto_device_map: modules placed over the GPUs in order, then "cpu",
   * then "disk", within budgets such as {"cpu": "200MB"} (null: Accel.getMaxMemory()); classes in
   * noSplit are never split.
   * A budget below the largest unsplittable module throws AccelException naming it.
   */
  public java.util.LinkedHashMap<String, String> inferAutoDeviceMap(java.util.Map<String, String> maxMemory,
                                                                     java.util.List<String> noSplit, String dtype) {
    return ModelSupport.inferAutoDeviceMap(this, maxMemory, noSplit, dtype);
  }

  /**
   * Accelerate's get_balanced_memory: maxMemory (such as {"0": "1GB", "1": "1GB", "cpu": "8GB"};
   * null: Accel.getMaxMemory(), of which a lone GPU then keeps 10% free) with every GPU's budget but
   * the last lowered to an even share of the model plus a margin, so that inferAutoDeviceMap spreads
   * the model over the GPUs; lowZero leaves GPU 0 only what the others cannot hold. Budgets in bytes,
   * GPUs as "cuda:N". Without a GPU they come back unchanged.
   */
  public java.util.LinkedHashMap<String, Long> balancedMemory(java.util.Map<String, String> maxMemory,
                                                               java.util.List<String> noSplit, String dtype,
                                                               boolean lowZero) {
    return ModelSupport.balancedMemory(this, maxMemory, noSplit, dtype, lowZero);
  }

  /** Throws AccelException naming the first key that names no module or device, or the first tensor left out. */
  public void checkDeviceMap(java.util.Map<String, String> deviceMap) {
    verifyDeviceMapJson(Json.write(deviceMap));
  }

  /**
   * Accelerate's dispatch_model: this loaded model's tensors go where deviceMap puts them ("cpu",
   * "cuda:N"; "disk" writes them to offloadDir/model.safetensors and reads them back just before
   * their node runs, so offloadDir may be null only without "disk"). Checked before anything moves.
   */
  public void dispatchModel(java.util.Map<String, String> deviceMap, String offloadDir) {
    dispatchModelJson(Json.write(deviceMap), offloadDir == null ? "" : offloadDir);
  }

  /**
   * Loads checkpoint (a .safetensors file, a sharded index or a directory) memory-mapped, each
   * module where deviceMap puts it ("disk": read from offloadFolder or the checkpoint just
   * before its node runs; null map: everything on the CPU). Checked before anything is loaded.
   */
  public void loadCheckpointAndDispatch(String checkpoint, java.util.Map<String, String> deviceMap,
                                        String offloadFolder, String dtype) {
    ModelSupport.loadCheckpointAndDispatch(this, checkpoint, deviceMap, offloadFolder, dtype);
  }

  /**
   * Accelerate's device_map strings "auto", "balanced", "balanced_low_0" and "sequential":
   * loadCheckpointAndDispatch with the map inferAutoDeviceMap makes from every GPU's free memory
   * and the RAM the system has available, balanced over the GPUs (balancedMemory) but for
   * "sequential". Another strategy is an AccelException naming it.
   */
  public void loadCheckpointAndDispatch(String checkpoint, String strategy, String offloadFolder, String dtype) {
    ModelSupport.loadCheckpointAndDispatch(this, checkpoint, strategy, offloadFolder, dtype);
  }

  /**
   * Named inputs (a Hugging Face model's input_ids, attention_mask, labels) to named outputs
   * in the model's order (loss, logits). A TorchScript model binds each input to the forward
   * argument of that name; outputs are named by the dict's keys, the NamedTuple's fields, the
   * names given to fromTorchscriptOutputs, "0", "1", ... or "output". A missing, unknown or
   * mistyped input is an AccelException naming it. The caller closes the outputs.
   */
  public java.util.LinkedHashMap<String, Tensor> forward(java.util.Map<String, Tensor> inputs) {
    return ModelSupport.forward(this, inputs);
  }

  /**
   * The parameters by PyTorch name, each tensor once (tied weights under their first name).
   * The tensors are the parameters themselves, not copies; the caller closes the handles.
   */
  public java.util.LinkedHashMap<String, Tensor> parameters() {
    return TensorMaps.drain(namedParameters());
  }

  /** The buffers by name, as parameters() lists the parameters. */
  public java.util.LinkedHashMap<String, Tensor> buffers() {
    return TensorMaps.drain(namedBuffers());
  }

  /**
   * PyTorch's load_state_dict: copies each tensor into the parameter or buffer of that name.
   * strict: missing or unexpected names throw an AccelException listing them. Everything is
   * checked before anything is copied. Returns the names a non-strict load skipped. Collective
   * under FULL_SHARD (every process calls it).
   */
  public IncompatibleKeys loadStateDict(java.util.Map<String, Tensor> tensors, boolean strict) {
    return ModelSupport.loadStateDict(this, tensors, strict);
  }
%}

%typemap(javainterfaces) AccelTensorMap "AutoCloseable"
%typemap(javacode) AccelTensorMap %{
  @Override
  public void close() {
    delete();
  }

  /** A map holding the tensors of entries (references, not copies). */
  public static TensorMap of(java.util.Map<String, Tensor> entries) {
    return TensorMaps.of(entries);
  }
%}

%typemap(javacode) AccelOptimizer %{
  @Override
  public void close() {
    delete();
  }

  /** AdamW with learning rate lr and PyTorch's other defaults. */
  public static Optimizer adamW(Model model, double lr) {
    return OptimizerSupport.adamW(model, lr);
  }

  /** SGD with learning rate lr and momentum. */
  public static Optimizer sgd(Model model, double lr, double momentum) {
    return OptimizerSupport.sgd(model, lr, momentum);
  }
%}

%typemap(javacode) AccelScheduler %{
  @Override
  public void close() {
    delete();
  }

  /** A scheduler with milestones (multi-step); the options carry the rest. */
  public static Scheduler create(Optimizer optimizer, SchedulerOptions options, long... milestones) {
    return OptimizerSupport.scheduler(optimizer, options, milestones);
  }
%}

%typemap(javacode) AccelDataset %{
  @Override
  public void close() {
    delete();
  }

  /** A map-style dataset whose samples a Java object writes (from loader threads when num_workers > 0). */
  public static Dataset fromMap(MapDataset dataset) {
    return Callbacks.fromMap(dataset);
  }

  /** An iterable (streaming) dataset whose samples a Java object writes. */
  public static Dataset fromIterable(IterableDataset dataset) {
    return Callbacks.fromIterable(dataset);
  }

  /**
   * A dataset over token sequences whose batches a Java collate function makes, with these field
   * names (in this order: {@link Batch#asMap} and the loader's fieldNames() use it).
   */
  public static Dataset fromSequences(Sequences sequences, java.util.List<String> names, CollateFunction function) {
    return Callbacks.fromSequences(sequences, names, function);
  }

  /**
   * Every *.safetensors file of directory, concatenated in file-name order; each name in
   * fields becomes one field of a sample (rows on dim 0).
   */
  public static Dataset fromSafetensors(String directory, String... fields) {
    return DataSupport.fromSafetensors(directory, fields);
  }
%}

%typemap(javacode) AccelDataLoader %{
  @Override
  public void close() {
    delete();
  }

  /** The names of the batches' fields, in order (Batch.asMap takes them). */
  public java.util.List<String> fieldNames() {
    return DataSupport.fieldNames(this);
  }

  /** A loader over a Java map-style dataset. */
  public static DataLoader of(MapDataset dataset, DataLoaderOptions options) {
    return DataSupport.of(dataset, options);
  }

  /** A loader over a Java iterable dataset. */
  public static DataLoader of(IterableDataset dataset, DataLoaderOptions options) {
    return DataSupport.of(dataset, options);
  }

  /**
   * A loader over a user's batch sampler: these batches of dataset indices, in order (e.g.
   * length-bucketed, of varying sizes), every epoch until {@link #setBatches} replaces them;
   * prepared, they are sharded as Accelerate's BatchSamplerShard does. options' batchSize is the sampler's nominal batch size (0: sizes vary,
   * which needs evenBatches(false) with several processes), its dropLast the sampler's; shuffle
   * must be off. Throws AccelException naming an empty batch or an index outside the dataset.
   */
  public static DataLoader ofBatches(MapDataset dataset, Iterable<? extends java.util.List<Long>> batches,
                                     DataLoaderOptions options) {
    return DataSupport.ofBatches(dataset, batches, options);
  }

  /** As {@link #ofBatches(MapDataset, Iterable, DataLoaderOptions)} over a native dataset. */
  public static DataLoader ofBatches(Dataset dataset, Iterable<? extends java.util.List<Long>> batches,
                                     DataLoaderOptions options) {
    return DataSupport.ofBatches(dataset, batches, options);
  }

  /**
   * New batches for a loader over a batch sampler (ofBatches, or Sequences' length-grouped
   * loader, which then stops regrouping), from the next epoch on: call it between epochs, before
   * an epoch's first batch (a resumed epoch's too, with that epoch's batches; see {@link
   * #epoch}), to follow a sampler that draws new batches each epoch. Every process must set the
   * same batches. Throws AccelException naming a bad batch (nothing changes), or with code STATE
   * during an epoch or for a loader made without a batch sampler.
   */
  public void setBatches(Iterable<? extends java.util.List<Long>> batches) {
    DataSupport.setBatches(this, batches);
  }

  /**
   * One epoch of batches; close each (try-with-resources) to free its tensors at once.
   * The next iterator() starts the next epoch.
   */
  @Override
  public java.util.Iterator<Batch> iterator() {
    return DataSupport.epoch(this);
  }
%}

%typemap(javacode) AccelSequences %{
  @Override
  public void close() {
    delete();
  }

  /**
   * Sequences in one flat array: sequence i is ids[offsets[i], offsets[i + 1]); labels (empty or
   * one per sequence) are class labels; vocabSize &gt; 0 refuses ids &gt;= it.
   */
  public static Sequences fromArrays(long[] ids, long[] offsets, long[] labels, long vocabSize) {
    return DataSupport.fromArrays(ids, offsets, labels, vocabSize);
  }

  /** Sequences copied from Java arrays of ids; vocabSize &gt; 0 refuses ids &gt;= it. */
  public static Sequences of(long vocabSize, long[]... sequences) {
    return DataSupport.of(vocabSize, sequences);
  }
%}

%typemap(javacode) CollateWriter %{
  @Override
  public void close() {
    delete();
  }
%}

%typemap(javacode) AccelProgress %{
  @Override
  public void close() {
    delete();
  }
%}

%typemap(javacode) AccelPartialState %{
  public boolean isMainProcess() {
    return processIndex() == 0;
  }

  public boolean isLocalMainProcess() {
    return localProcessIndex() == 0;
  }

  public boolean isLastProcess() {
    return processIndex() == numProcesses() - 1;
  }

  /** Whether more than one process runs (Accelerate's use_distributed). */
  public boolean useDistributed() {
    return numProcesses() > 1;
  }

  /** Runs body on the main process first, then on the others (Accelerate's main_process_first). */
  public void mainProcessFirst(Runnable body) {
    if (!isMainProcess()) waitForEveryone();
    try {
      body.run();
    } finally {
      if (isMainProcess()) waitForEveryone();
    }
  }

  /** This process's share of items, as Accelerator.splitBetweenProcesses (padding repeats the last item). */
  public <T> java.util.List<T> splitBetweenProcesses(java.util.List<T> items, boolean applyPadding) {
    Int64Vector v = splitRange(items.size(), applyPadding);
    try {
      return Nested.split(items, new long[] {v.get(0), v.get(1), v.get(2)});
    } finally {
      v.delete();
    }
  }

  @Override
  public void close() {
    delete();
  }
%}

%rename(nativeStep) AccelProfileRun::step;
%javamethodmodifiers AccelProfileRun::step "";
%javamethodmodifiers AccelProfileRun::begin_scheduled "";
%typemap(javacode) AccelProfileRun %{
  private java.util.function.Consumer<Profile> onTraceReady;
  private long stepNum;
  private String tracePath;

  Profile withTrace(String path, java.util.function.Consumer<Profile> callback) {
    tracePath = path;
    onTraceReady = callback;
    return this;
  }

  /**
   * The end of a training step (torch.profiler's prof.step()): advances ProfileKwargs' schedule,
   * and calls its onTraceReady when a cycle's trace was just written.
   */
  public void step() {
    ++stepNum;
    if (nativeStep() && onTraceReady != null) onTraceReady.accept(this);
  }

  /** Steps taken so far. */
  public long stepNum() {
    return stepNum;
  }

  /** The trace file: the last finished cycle under a schedule. */
  public String tracePath() {
    return tracePath;
  }

  /** Ends the profile (writing its trace) if it is running, then frees it. */
  @Override
  public void close() {
    delete();
  }
%}

%typemap(javacode) SampleWriter %{
  @Override
  public void close() {
    delete();
  }
%}

%typemap(javacode) StateWriter %{
  @Override
  public void close() {
    delete();
  }

  /** Appends bytes to the object's state. */
  public void write(byte[] data) {
    jniWrite(data);
  }
%}

%typemap(javaimports) AccelAccelerator %{
import java.util.List;
import java.util.Map;
%}
%typemap(javacode) AccelAccelerator %{
  /** Ends training for the trackers added to it, then frees the accelerator and them. */
  @Override
  public void close() {
    delete();
  }

  /** A builder of accelerator options with Accelerate's names. */
  public static AcceleratorBuilder builder() {
    return new AcceleratorBuilder();
  }

  /**
   * The java.util.Random that setSeed reseeds: Java's counterpart of the random and numpy
   * generators Accelerate's set_seed seeds in Python. Draw shuffles, augmentation or
   * dropout masks made in Java from it and a seeded run repeats exactly. Thread-safe.
   */
  public static java.util.Random random() {
    return AcceleratorSupport.RANDOM;
  }

  /** setSeed(seed, false, false). */
  public void setSeed(long seed) {
    setSeed(seed, false, false);
  }

  /**
   * Accelerate's set_seed: seeds LibTorch's generators (CPU and CUDA) and {@link #random()}.
   * With deviceSpecific each process uses seed + processIndex() (ranks differ, reproducibly);
   * with deterministic LibTorch uses deterministic algorithms from now on in this process
   * (false leaves that setting as it is). Not collective. The seed is unsigned 64-bit.
   */
  public void setSeed(long seed, boolean deviceSpecific, boolean deterministic) {
    AcceleratorSupport.setSeed(this, seed, deviceSpecific, deterministic);
  }

  /**
   * Accelerate's get_state_dict: the model's parameters, then its buffers, as CPU copies in
   * the model's order. The caller closes the tensors. Not collective.
   */
  public java.util.LinkedHashMap<String, Tensor> getStateDict(Model model) {
    return AcceleratorSupport.getStateDict(this, model);
  }

  private String projectDir = ".";
  private String loggingDir = "logs";

  void setDirectories(String projectDir, String loggingDir) {
    this.projectDir = projectDir;
    this.loggingDir = loggingDir;
  }

  /** Accelerate's project_dir: where checkpoints and logs go ("." unless the builder set one). */
  public String projectDir() {
    return projectDir;
  }

  /** Accelerate's logging_dir: tracker output (projectDir/logs unless the builder set one). */
  public String loggingDir() {
    return loggingDir;
  }

  /** The mesh in use; without a ParallelismConfig, dpReplicateSize is the number of processes. */
  public ParallelismConfig parallelismConfig() {
    return AcceleratorSupport.parallelismConfig(this);
  }

  /**
   * This process's rank along dp_replicate: the process index read row-major over dp_replicate x
   * dp_shard x cp x tp, tp innermost (Accelerate's data_parallel_rank). Without a
   * ParallelismConfig, the process index.
   */
  public long dataParallelRank() {
    return AcceleratorSupport.parallelismRank(this, 0);
  }

  /** This process's rank along dp_shard (Accelerate's data_parallel_shard_rank). */
  public long dataParallelShardRank() {
    return AcceleratorSupport.parallelismRank(this, 1);
  }

  /** This process's rank in its tensor-parallel group: processIndex() % tpSize. */
  public long tensorParallelRank() {
    return AcceleratorSupport.parallelismRank(this, 2);
  }

  /** This process's rank along cp: which block of the sequence it computes. */
  public long contextParallelRank() {
    return AcceleratorSupport.parallelismRank(this, 3);
  }

  /**
   * Bytes this process holds for the prepared model's parameters and gradients and the
   * optimizer's state (optimizer may be null), counted from the tensors' storages: keys
   * "parameters", "gradients", "optimizer_state". Not collective.
   */
  public java.util.LinkedHashMap<String, Long> heldBytes(Model model, Optimizer optimizer) {
    return AcceleratorSupport.heldBytes(this, model, optimizer);
  }

  /**
   * Accelerate's load_checkpoint_in_model (strict=False): loads path's tensors into model and
   * returns {missing, unexpected}, the counts of names the file lacks or the model lacks.
   */
  public long[] loadCheckpointInModel(Model model, String path) {
    return loadCheckpointInModel(model, path, false);
  }

  /** As loadCheckpointInModel(model, path); strict: a missing or unexpected name throws AccelException. */
  public long[] loadCheckpointInModel(Model model, String path, boolean strict) {
    return AcceleratorSupport.loadCheckpointInModel(this, model, path, strict);
  }

  /** Whether this is the highest global rank (Accelerate's is_last_process). */
  public boolean isLastProcess() {
    return processIndex() == numProcesses() - 1;
  }

  /** Accelerate's use_distributed: the run has several processes. */
  public boolean useDistributed() {
    return numProcesses() > 1;
  }

  /** Accelerate's multi_device: several processes, each on its own GPU. */
  public boolean multiDevice() {
    return useDistributed() && distributedType() == DistributedType.DISTRIBUTED_MULTI_GPU;
  }

  /**
   * Prepares models, optimizers, data loaders and schedulers, in any order (models first,
   * as Accelerate does). Collective with several processes.
   */
  public void prepare(Object... objects) {
    AcceleratorSupport.prepare(this, objects);
  }

  /** Gradient accumulation: {@code try (Scope s = acc.accumulate(model)) { ... }}. */
  public Scope accumulate(Model model) {
    return AcceleratorSupport.accumulate(this, model);
  }

  /** Local gradient accumulation without synchronisation. */
  public Scope noSync(Model model) {
    return AcceleratorSupport.noSync(this, model);
  }

  /**
   * Mixed-precision autocast per the accelerator's mixed_precision, on unless an AutocastKwargs
   * given at build turned it off.
   */
  public Scope autocast() {
    autocastBeginDefault();
    return this::autocastEnd;
  }

  public Scope autocast(boolean enabled) {
    return AcceleratorSupport.autocast(this, enabled);
  }

  /** Accelerate's autocast(autocast_handler=...): this scope on or off as the handler says. */
  public Scope autocast(AutocastKwargs handler) {
    return AcceleratorSupport.autocast(this, handler.enabled());
  }

  /**
   * torch.no_grad() for evaluation: no autograd graph on this thread until the scope closes
   * (close it on the thread that opened it). Scopes nest.
   */
  public Scope noGrad() {
    return AcceleratorSupport.noGrad(this);
  }

  /** The main process runs the block first, the others after it. Collective. */
  public Scope mainProcessFirst() {
    return AcceleratorSupport.mainProcessFirst(this);
  }

  /** Each node's local main process first. Collective. */
  public Scope localMainProcessFirst() {
    return AcceleratorSupport.localMainProcessFirst(this);
  }

  public Scope joinUnevenInputs() {
    return AcceleratorSupport.joinUnevenInputs(this);
  }

  /** Records LibTorch operators until closed; writes outputTraceDir/trace_<rank>.json. */
  public Profile profile(String outputTraceDir) {
    return Profile.begin(this, outputTraceDir);
  }

  /** profile(outputTraceDir) with what kwargs records besides the operators (shapes, memory, flops). */
  public Profile profile(ProfileKwargs kwargs) {
    return kwargs.begin(this);
  }

  /** Java objects saved and restored with every saveState (see Checkpointable). */
  public void registerForCheckpointing(Checkpointable... objects) {
    AcceleratorSupport.registerForCheckpointing(this, objects);
  }

  /** hook(directory) runs before saveState writes. */
  public RemovableHandle registerSaveStatePreHook(DirectoryHook hook) {
    return AcceleratorSupport.registerSaveStatePreHook(this, hook);
  }

  /**
   * hook(models, weights, directory) runs before saveState writes, as Accelerate's: the prepared
   * models and their state dicts (getStateDict's; closed after the hook; editing them does not
   * change what saveState writes).
   */
  public RemovableHandle registerSaveStatePreHook(SaveStateHook hook) {
    return AcceleratorSupport.registerSaveStatePreHook(this, directory -> {
      java.util.List<java.util.Map<String, Tensor>> weights = new java.util.ArrayList<>();
      try {
        for (Model model : preparedModels) weights.add(getStateDict(model));
        hook.run(java.util.Collections.unmodifiableList(new java.util.ArrayList<>(preparedModels)), weights, directory);
      } finally {
        for (java.util.Map<String, Tensor> dict : weights) dict.values().forEach(Tensor::close);
      }
    });
  }

  /** hook(directory) runs before loadState reads. */
  public RemovableHandle registerLoadStatePreHook(DirectoryHook hook) {
    return AcceleratorSupport.registerLoadStatePreHook(this, hook);
  }

  /** hook(models, directory) runs before loadState reads, as Accelerate's: the prepared models. */
  public RemovableHandle registerLoadStatePreHook(LoadStateHook hook) {
    return AcceleratorSupport.registerLoadStatePreHook(
        this, directory -> hook.run(java.util.Collections.unmodifiableList(new java.util.ArrayList<>(preparedModels)), directory));
  }

  private final java.util.List<Model> preparedModels = new java.util.ArrayList<>();

  /** Prepares one model (prepare(Object...) does it for every model it is given). Collective. */
  public void prepareModel(Model model) {
    nativePrepareModel(model);
    preparedModels.add(model);
  }

  /** Accelerate's free_memory: forgets every prepared model, optimizer and loader. */
  public void freeMemory() {
    nativeFreeMemory();
    preparedModels.clear();
  }

  /** Accelerate's alias of freeMemory. */
  public void clear() {
    freeMemory();
  }

  /** A custom tracker, started by initTrackers on the main process; kept until the accelerator is freed. */
  public void addTracker(Tracker tracker) {
    AcceleratorSupport.addTracker(this, tracker);
    customTrackers.putIfAbsent(tracker.name(), tracker);
  }

  private final java.util.Map<String, Tracker> customTrackers = new java.util.HashMap<>();
  private final java.util.Map<String, BuiltinTracker> builtinTrackers = new java.util.HashMap<>();

  /**
   * Accelerate's get_tracker(name): the custom tracker added under name, or for a running
   * built-in tracker ("tensorboard", "jsonl", ...) a BuiltinTracker whose log writes to it
   * alone (the same object each time). Where no tracker runs in this process (other processes,
   * before initTrackers) a Tracker that does nothing, as Accelerate's blank tracker; with
   * trackers running, IllegalArgumentException for a name none of them has.
   */
  public Tracker getTracker(String name) {
    Tracker custom = customTrackers.get(name);
    if (custom != null) return custom;
    if (BuiltinTracker.NAMES.contains(name) && hasTracker(name)) {
      return builtinTrackers.computeIfAbsent(name, n -> new BuiltinTracker(this, n));
    }
    boolean running = BuiltinTracker.NAMES.stream().anyMatch(this::hasTracker)
        || customTrackers.keySet().stream().anyMatch(this::hasTracker);
    if (running) throw new IllegalArgumentException(name + " is not an available tracker stored inside the Accelerator");
    return new Tracker() {};
  }

  /**
   * Accelerate's get_tracker(tracker).log(values, step): to the running tracker called tracker
   * alone; nothing where no tracker runs in this process. step &lt; 0: no step.
   */
  public void logTo(String tracker, Map<String, ? extends Number> values, long step) {
    AcceleratorSupport.log(this, tracker, values, step);
  }

  /**
   * Accelerate's init_trackers(project_name, config): starts the trackers on the main process
   * with config's values (String, Number, Boolean, null, nested Maps and Lists) as their
   * hyperparameters. An unsupported value throws AccelException naming its type.
   */
  public void initTrackers(String projectName, Map<String, ?> config) {
    initTrackers(projectName, Json.write(config));
  }

  /**
   * Accelerate's init_trackers(project_name, config, init_kwargs): initKwargs maps a built-in
   * tracker's name to its options, e.g. {"wandb": {"name": "run-1", "tags": ["baseline"]}}
   * (docs/tracking.md). An option the tracker does not take throws AccelException naming it.
   */
  public void initTrackers(String projectName, Map<String, ?> config, Map<String, ? extends Map<String, ?>> initKwargs) {
    initTrackers(projectName, config == null ? "" : Json.write(config), initKwargs == null ? "" : Json.write(initKwargs));
  }

  /** Logs values to every tracker (main process); step &lt; 0: no step. */
  public void log(Map<String, ? extends Number> values, long step) {
    AcceleratorSupport.log(this, null, values, step);
  }

  public void log(Map<String, ? extends Number> values) {
    log(values, -1);
  }

  /**
   * Accelerate's accelerator.save for named tensors: one safetensors file, written by the
   * main process. Borrows the tensors.
   */
  public void save(Map<String, Tensor> tensors, String path) {
    AcceleratorSupport.save(this, tensors, path);
  }

  /** Every process's string, in rank order. Collective. */
  public List<String> gatherObjects(String data) {
    return AcceleratorSupport.gatherObjects(this, data);
  }

  /*
   * Accelerate's operations on nested structures: data is a Tensor or Lists and Maps of them,
   * nested; the result has the same structure (Lists as ArrayList, Maps as LinkedHashMap) with
   * new tensors the caller closes. Every process passes the same structure. Collective.
   */

  /** gather on every tensor of data. */
  public Object gatherNested(Object data) {
    return Nested.apply(data, "gatherNested", this::gatherList);
  }

  /** gatherForMetrics on every tensor of data. */
  public Object gatherForMetricsNested(Object data) {
    return Nested.apply(data, "gatherForMetricsNested", this::gatherForMetricsList);
  }

  /** scale * the sum over processes (REDUCE_SUM, REDUCE_NONE), divided by their count for REDUCE_MEAN. */
  public Object reduceNested(Object data, ReduceOp op, double scale) {
    return Nested.apply(data, "reduceNested", list -> reduceList(list, op, scale));
  }

  /** fromProcess's tensors on every process. */
  public Object broadcastNested(Object data, int fromProcess) {
    return Nested.apply(data, "broadcastNested", list -> broadcastList(list, fromProcess));
  }

  /** Pads every tensor along dim (tensors without dim come back unchanged). */
  public Object padAcrossProcessesNested(Object data, long dim, double padValue, boolean padFirst) {
    return Nested.apply(data, "padAcrossProcessesNested", list -> padAcrossProcessesList(list, dim, padValue, padFirst));
  }

  /**
   * This process's share of items (Accelerate's split_between_processes): the first
   * size % numProcesses processes take one more, surplus processes get an empty list, and
   * applyPadding repeats the last item so that every process gets as many. Not collective.
   */
  public <T> List<T> splitBetweenProcesses(List<T> items, boolean applyPadding) {
    return Nested.split(items, Nested.range(this, items.size(), applyPadding));
  }

  /** The same share of every list of inputs (Accelerate's dict input); the lists must have equal sizes. */
  public <K, T> Map<K, List<T>> splitBetweenProcesses(Map<K, ? extends List<T>> inputs, boolean applyPadding) {
    return AcceleratorSupport.splitBetweenProcesses(this, inputs, applyPadding);
  }

  /**
   * Accelerate's gather_for_metrics with use_gather_object: every process's items concatenated in
   * rank order, without the ones repeated to complete the last round of a prepared loader.
   * Items travel with Java serialization: the peer processes are trusted. Collective.
   */
  public <T extends java.io.Serializable> List<T> gatherForMetricsObjects(List<T> items) {
    return AcceleratorSupport.gatherForMetricsObjects(this, items);
  }

  /**
   * Accelerate's broadcast_object_list: replaces list's items with fromProcess's, in place, and
   * returns it (Java serialization; the peers are trusted). Collective.
   */
  public <T extends java.io.Serializable> List<T> broadcastObjectList(List<T> list, int fromProcess) {
    return AcceleratorSupport.broadcastObjectList(this, list, fromProcess);
  }
%}

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
