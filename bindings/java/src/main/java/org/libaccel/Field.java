package org.libaccel;

import java.util.Arrays;

/** One field of the samples a Java dataset produces: its dtype and per-sample shape ({} = scalar). */
public final class Field {
  private final DType dtype;
  private final long[] shape;

  private Field(DType dtype, long[] shape) {
    this.dtype = java.util.Objects.requireNonNull(dtype, "dtype");
    this.shape = shape.clone();
  }

  /** A field of dtype with the given per-sample shape; no sizes: a scalar. */
  public static Field of(DType dtype, long... shape) {
    return new Field(dtype, shape);
  }

  public static Field scalar(DType dtype) {
    return new Field(dtype, new long[0]);
  }

  public DType dtype() {
    return dtype;
  }

  public long[] shape() {
    return shape.clone();
  }

  /** Elements per sample. */
  public long numel() {
    long n = 1;
    for (long d : shape) n *= d;
    return n;
  }

  @Override
  public String toString() {
    return "Field(" + dtype + ", " + Arrays.toString(shape) + ")";
  }

  static FieldSpecVector toSpecs(java.util.List<Field> fields) {
    FieldSpecVector specs = new FieldSpecVector();
    for (Field f : fields) {
      FieldSpec spec = new FieldSpec();
      Int64Vector shape = new Int64Vector(f.shape);
      try {
        spec.setDtype(f.dtype);
        spec.setShape(shape);
        specs.add(spec);
      } finally {
        shape.delete();
        spec.delete();
      }
    }
    return specs;
  }
}
