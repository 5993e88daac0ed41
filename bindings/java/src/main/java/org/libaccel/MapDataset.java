package org.libaccel;

import java.util.List;

/**
 * A map-style dataset written in Java: {@link #size()} samples, each written by
 * {@link #get(long, Sample)} into its declared {@link #fields()}. With num_workers &gt; 0 the
 * loader calls get from its worker threads, concurrently for different indices, so get must be
 * thread-safe. An exception thrown by get becomes an AccelException (naming it) at the loader
 * call that needed the sample.
 */
public interface MapDataset {
  long size();

  /** The fields of every sample, e.g. {@code List.of(Field.of(DType.FLOAT32, 28, 28), Field.scalar(DType.INT64))}. */
  List<Field> fields();

  void get(long index, Sample out) throws Exception;

  /** Writes one sample (see {@link MapDataset#get}). */
  @FunctionalInterface
  interface Getter {
    void get(long index, Sample out) throws Exception;
  }

  /** A dataset of size samples from a lambda: {@code MapDataset.of(n, fields, (i, out) -> out.set(0, ...))}. */
  static MapDataset of(long size, List<Field> fields, Getter getter) {
    List<Field> copy = List.copyOf(fields);
    return new MapDataset() {
      @Override
      public long size() {
        return size;
      }

      @Override
      public List<Field> fields() {
        return copy;
      }

      @Override
      public void get(long index, Sample out) throws Exception {
        getter.get(index, out);
      }
    };
  }
}
