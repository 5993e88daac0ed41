package org.libaccel;

import java.util.Iterator;
import java.util.List;

/**
 * An iterable (streaming) dataset written in Java, read from one thread at a time. Each epoch
 * the loader calls {@link #reset(long)} and then {@link #next(Sample)} until it returns false.
 * Prepared loaders shard it as Accelerate's IterableDatasetShard does: every process reads the
 * whole stream and keeps its slice. Shuffling is the stream's business (reset gets the epoch).
 */
public interface IterableDataset {
  List<Field> fields();

  /** Starts a new pass over the samples. */
  default void reset(long epoch) throws Exception {}

  /** Writes the next sample into out and returns true, or returns false at the end of the pass. */
  boolean next(Sample out) throws Exception;

  /** Writes one item as a sample. */
  @FunctionalInterface
  interface Encoder<T> {
    void write(T item, Sample out) throws Exception;
  }

  /** A dataset over a Java Iterable: every pass starts a new iterator() and encodes each item. */
  static <T> IterableDataset of(List<Field> fields, Iterable<T> items, Encoder<? super T> encoder) {
    List<Field> copy = List.copyOf(fields);
    return new IterableDataset() {
      private Iterator<T> iterator;

      @Override
      public List<Field> fields() {
        return copy;
      }

      @Override
      public void reset(long epoch) {
        iterator = items.iterator();
      }

      @Override
      public boolean next(Sample out) throws Exception {
        if (iterator == null) iterator = items.iterator();
        if (!iterator.hasNext()) return false;
        encoder.write(iterator.next(), out);
        return true;
      }
    };
  }
}
