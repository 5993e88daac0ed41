package org.libaccel;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * Where a Java dataset writes one sample: field i takes exactly its declared number of
 * elements. Values are converted to the field's dtype when the array type differs (an int[]
 * for an int64 field, say); arrays of the field's own type are copied as they are.
 * Valid only during the callback it is passed to; using it later throws IllegalStateException.
 */
public final class Sample {
  private final SampleWriter writer;
  private final List<Field> fields;

  Sample(SampleWriter writer, List<Field> fields) {
    this.writer = writer;
    this.fields = fields;
  }

  public int numFields() {
    return fields.size();
  }

  public Field field(int index) {
    checkIndex(index);
    return fields.get(index);
  }

  public Sample set(int field, float... values) {
    return write(field, values, DType.FLOAT32, values.length, 4);
  }

  public Sample set(int field, double... values) {
    return write(field, values, DType.FLOAT64, values.length, 8);
  }

  public Sample set(int field, long... values) {
    return write(field, values, DType.INT64, values.length, 8);
  }

  public Sample set(int field, int... values) {
    return write(field, values, DType.INT32, values.length, 4);
  }

  public Sample set(int field, short... values) {
    return write(field, values, DType.INT16, values.length, 2);
  }

  public Sample set(int field, boolean... values) {
    return write(field, values, DType.BOOL, values.length, 1);
  }

  /** The field's raw bytes (native byte order), e.g. uint8 pixels or float16 values. */
  public Sample setBytes(int field, byte[] bytes) {
    checkIndex(field);
    writer.jniWriteArray(field, bytes, 1);
    return this;
  }

  /** The field's raw bytes from the buffer's remaining bytes (its position does not move). */
  public Sample setBytes(int field, ByteBuffer bytes) {
    checkIndex(field);
    if (!bytes.isDirect()) {
      byte[] copy = new byte[bytes.remaining()];
      bytes.duplicate().get(copy);
      return setBytes(field, copy);
    }
    if (Accel.dtypeSize(fields.get(field).dtype()) > 1) Buffers.requireNativeOrder(bytes.order(), "ByteBuffer");
    writer.jniWriteDirect(field, bytes, bytes.position(), bytes.remaining());
    return this;
  }

  private Sample write(int field, Object values, DType type, int length, int itemSize) {
    checkIndex(field);
    DType target = fields.get(field).dtype();
    if (target == type) {
      writer.jniWriteArray(field, values, itemSize);
    } else {
      writer.jniWriteArray(field, convert(field, values, length, target), (int) Accel.dtypeSize(target));
    }
    return this;
  }

  private void checkIndex(int field) {
    if (field < 0 || field >= fields.size()) {
      throw new IndexOutOfBoundsException("field index " + field + " out of range [0, " + fields.size() + ")");
    }
  }

  private static Object convert(int field, Object values, int n, DType target) {
    boolean integral = values instanceof long[] || values instanceof int[] || values instanceof short[]
        || values instanceof boolean[];
    switch (target) {
      case FLOAT32: {
        float[] out = new float[n];
        for (int i = 0; i < n; ++i) out[i] = (float) asDouble(values, i);
        return out;
      }
      case FLOAT64: {
        double[] out = new double[n];
        for (int i = 0; i < n; ++i) out[i] = asDouble(values, i);
        return out;
      }
      case INT64: {
        long[] out = new long[n];
        for (int i = 0; i < n; ++i) out[i] = integral ? asLong(values, i) : (long) asDouble(values, i);
        return out;
      }
      case INT32: {
        int[] out = new int[n];
        for (int i = 0; i < n; ++i) out[i] = (int) (integral ? asLong(values, i) : (long) asDouble(values, i));
        return out;
      }
      case INT16: {
        short[] out = new short[n];
        for (int i = 0; i < n; ++i) out[i] = (short) (integral ? asLong(values, i) : (long) asDouble(values, i));
        return out;
      }
      case UINT8:
      case INT8: {
        byte[] out = new byte[n];
        for (int i = 0; i < n; ++i) out[i] = (byte) (integral ? asLong(values, i) : (long) asDouble(values, i));
        return out;
      }
      case BOOL: {
        boolean[] out = new boolean[n];
        for (int i = 0; i < n; ++i) out[i] = asDouble(values, i) != 0;
        return out;
      }
      default:
        throw new IllegalArgumentException("field " + field + " has dtype " + target
            + ", which Java arrays cannot hold: write its raw bytes with setBytes");
    }
  }

  private static double asDouble(Object values, int i) {
    if (values instanceof float[]) return ((float[]) values)[i];
    if (values instanceof double[]) return ((double[]) values)[i];
    if (values instanceof boolean[]) return ((boolean[]) values)[i] ? 1 : 0;
    return asLong(values, i);
  }

  private static long asLong(Object values, int i) {
    if (values instanceof long[]) return ((long[]) values)[i];
    if (values instanceof int[]) return ((int[]) values)[i];
    if (values instanceof short[]) return ((short[]) values)[i];
    if (values instanceof boolean[]) return ((boolean[]) values)[i] ? 1 : 0;
    return (long) asDouble(values, i);
  }
}
