package org.libaccel;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * The Java side of Tensor's array and buffer methods, which bindings/swig/accel_java.i declares
 * and delegates here: Java arrays go through the natives that pin them, direct buffers through
 * the natives that read their memory, and heap buffers are copied to arrays first.
 */
final class TensorSupport {
  private TensorSupport() {}

  static Tensor of(float[] data, long[] shape) {
    return fromArray(data, 4, DType.FLOAT32, data.length, shape);
  }

  static Tensor of(double[] data, long[] shape) {
    return fromArray(data, 8, DType.FLOAT64, data.length, shape);
  }

  static Tensor of(long[] data, long[] shape) {
    return fromArray(data, 8, DType.INT64, data.length, shape);
  }

  static Tensor of(int[] data, long[] shape) {
    return fromArray(data, 4, DType.INT32, data.length, shape);
  }

  static Tensor of(boolean[] data, long[] shape) {
    return fromArray(data, 1, DType.BOOL, data.length, shape);
  }

  static Tensor ofBytes(byte[] data, DType dtype, long[] shape) {
    return fromArray(data, 1, dtype, -1, shape);
  }

  static Tensor scalar(double value) {
    return Tensor.jniFromArray(new double[] {value}, 8, DType.FLOAT64, new long[0]);
  }

  static Tensor fromBuffer(FloatBuffer data, long[] shape) {
    if (!data.isDirect()) {
      float[] copy = new float[data.remaining()];
      data.duplicate().get(copy);
      return of(copy, shape);
    }
    Buffers.requireNativeOrder(data.order(), "FloatBuffer");
    return fromDirect(data, 4, data.position(), data.remaining(), DType.FLOAT32, shape);
  }

  static Tensor fromBuffer(DoubleBuffer data, long[] shape) {
    if (!data.isDirect()) {
      double[] copy = new double[data.remaining()];
      data.duplicate().get(copy);
      return of(copy, shape);
    }
    Buffers.requireNativeOrder(data.order(), "DoubleBuffer");
    return fromDirect(data, 8, data.position(), data.remaining(), DType.FLOAT64, shape);
  }

  static Tensor fromBuffer(LongBuffer data, long[] shape) {
    if (!data.isDirect()) {
      long[] copy = new long[data.remaining()];
      data.duplicate().get(copy);
      return of(copy, shape);
    }
    Buffers.requireNativeOrder(data.order(), "LongBuffer");
    return fromDirect(data, 8, data.position(), data.remaining(), DType.INT64, shape);
  }

  static Tensor fromBuffer(IntBuffer data, long[] shape) {
    if (!data.isDirect()) {
      int[] copy = new int[data.remaining()];
      data.duplicate().get(copy);
      return of(copy, shape);
    }
    Buffers.requireNativeOrder(data.order(), "IntBuffer");
    return fromDirect(data, 4, data.position(), data.remaining(), DType.INT32, shape);
  }

  static Tensor fromBuffer(ByteBuffer data, DType dtype, long[] shape) {
    if (!data.isDirect()) {
      byte[] copy = new byte[data.remaining()];
      data.duplicate().get(copy);
      return ofBytes(copy, dtype, shape);
    }
    if (Accel.dtypeSize(dtype) > 1) Buffers.requireNativeOrder(data.order(), "ByteBuffer");
    return fromDirect(data, 1, data.position(), data.remaining(), dtype, shape);
  }

  private static Tensor fromArray(Object data, int itemSize, DType dtype, long length, long[] shape) {
    java.util.Objects.requireNonNull(data, "data");
    long[] dims = shape.length == 0 && length >= 0 ? new long[] {length} : shape;
    return Tensor.jniFromArray(data, itemSize, dtype, dims);
  }

  private static Tensor fromDirect(Buffer data, int itemSize, long position, long count, DType dtype, long[] shape) {
    long[] dims = shape.length == 0 ? new long[] {count * itemSize / Accel.dtypeSize(dtype)} : shape;
    return Tensor.jniFromDirect(data, itemSize, position * itemSize, count * itemSize, dtype, dims);
  }

  static long[] shape(Tensor tensor) {
    Int64Vector dims = tensor.nativeShape();
    try {
      long[] out = new long[dims.size()];
      for (int i = 0; i < out.length; ++i) out[i] = dims.get(i);
      return out;
    } finally {
      dims.delete();
    }
  }

  static Tensor reshape(Tensor tensor, long[] shape) {
    Int64Vector dims = new Int64Vector(shape);
    try {
      return tensor.nativeReshape(dims);
    } finally {
      dims.delete();
    }
  }

  static void copyTo(Tensor tensor, float[] out) {
    requireDType(tensor, DType.FLOAT32, "float[]");
    tensor.jniCopyToArray(out, 4);
  }

  static void copyTo(Tensor tensor, double[] out) {
    requireDType(tensor, DType.FLOAT64, "double[]");
    tensor.jniCopyToArray(out, 8);
  }

  static void copyTo(Tensor tensor, long[] out) {
    requireDType(tensor, DType.INT64, "long[]");
    tensor.jniCopyToArray(out, 8);
  }

  static void copyTo(Tensor tensor, int[] out) {
    requireDType(tensor, DType.INT32, "int[]");
    tensor.jniCopyToArray(out, 4);
  }

  static void copyTo(Tensor tensor, boolean[] out) {
    requireDType(tensor, DType.BOOL, "boolean[]");
    tensor.jniCopyToArray(out, 1);
  }

  static void copyTo(Tensor tensor, FloatBuffer out) {
    requireDType(tensor, DType.FLOAT32, "FloatBuffer");
    if (!out.isDirect()) {
      float[] copy = toFloatArray(tensor);
      out.duplicate().put(copy);
      return;
    }
    Buffers.requireNativeOrder(out.order(), "FloatBuffer");
    tensor.jniCopyToDirect(out, 4, out.position() * 4L, out.remaining() * 4L);
  }

  static void copyTo(Tensor tensor, ByteBuffer out) {
    if (!out.isDirect()) {
      out.duplicate().put(toByteArray(tensor));
      return;
    }
    if (Accel.dtypeSize(tensor.dtype()) > 1) Buffers.requireNativeOrder(out.order(), "ByteBuffer");
    tensor.jniCopyToDirect(out, 1, out.position(), out.remaining());
  }

  static float[] toFloatArray(Tensor tensor) {
    requireDType(tensor, DType.FLOAT32, "float[]");
    float[] out = new float[Buffers.checkedLength(tensor.numel())];
    tensor.jniCopyToArray(out, 4);
    return out;
  }

  static double[] toDoubleArray(Tensor tensor) {
    requireDType(tensor, DType.FLOAT64, "double[]");
    double[] out = new double[Buffers.checkedLength(tensor.numel())];
    tensor.jniCopyToArray(out, 8);
    return out;
  }

  static long[] toLongArray(Tensor tensor) {
    requireDType(tensor, DType.INT64, "long[]");
    long[] out = new long[Buffers.checkedLength(tensor.numel())];
    tensor.jniCopyToArray(out, 8);
    return out;
  }

  static int[] toIntArray(Tensor tensor) {
    requireDType(tensor, DType.INT32, "int[]");
    int[] out = new int[Buffers.checkedLength(tensor.numel())];
    tensor.jniCopyToArray(out, 4);
    return out;
  }

  static boolean[] toBooleanArray(Tensor tensor) {
    requireDType(tensor, DType.BOOL, "boolean[]");
    boolean[] out = new boolean[Buffers.checkedLength(tensor.numel())];
    tensor.jniCopyToArray(out, 1);
    return out;
  }

  static byte[] toByteArray(Tensor tensor) {
    byte[] out = new byte[Buffers.checkedLength(tensor.nbytes())];
    tensor.jniCopyToArray(out, 1);
    return out;
  }

  private static void requireDType(Tensor tensor, DType expected, String what) {
    DType actual = tensor.dtype();
    if (actual != expected) {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
          "the tensor has dtype " + actual + "; " + what + " needs " + expected);
    }
  }

  static String describe(Tensor tensor) {
    if (Tensor.getCPtr(tensor) == 0) return "Tensor(closed)";
    return "Tensor(shape=" + java.util.Arrays.toString(shape(tensor)) + ", dtype=" + tensor.dtype() + ")";
  }
}
