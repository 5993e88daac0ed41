/* The Java code of Tensor and Batch.
 * Part of accel_java.i, which includes it before accel_core.i. */

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
