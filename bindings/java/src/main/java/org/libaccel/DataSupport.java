package org.libaccel;

import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The Java side of the Dataset, DataLoader and Sequences methods that bindings/swig/accel_java.i
 * declares and delegates here: Java lists and arrays into SWIG's vectors (freed at once), and
 * a loader's epoch as an Iterator.
 */
final class DataSupport {
  private DataSupport() {}

  static Dataset fromSafetensors(String directory, String[] fields) {
    StringVector names = new StringVector(Arrays.asList(fields));
    try {
      return Dataset.fromSafetensors(directory, names);
    } finally {
      names.delete();
    }
  }

  static List<String> fieldNames(DataLoader loader) {
    StringVector names = loader.nativeFieldNames();
    try {
      return List.copyOf(names);
    } finally {
      names.delete();
    }
  }

  static DataLoader of(MapDataset dataset, DataLoaderOptions options) {
    try (Dataset native_ = Dataset.fromMap(dataset)) {
      return new DataLoader(native_, options);  // the loader keeps the dataset alive
    }
  }

  static DataLoader of(IterableDataset dataset, DataLoaderOptions options) {
    try (Dataset native_ = Dataset.fromIterable(dataset)) {
      return new DataLoader(native_, options);
    }
  }

  static DataLoader ofBatches(MapDataset dataset, Iterable<? extends List<Long>> batches, DataLoaderOptions options) {
    try (Dataset native_ = Dataset.fromMap(dataset)) {
      return ofBatches(native_, batches, options);
    }
  }

  static DataLoader ofBatches(Dataset dataset, Iterable<? extends List<Long>> batches, DataLoaderOptions options) {
    return withBatchArrays(batches, (indices, lengths) -> new DataLoader(dataset, indices, lengths, options));
  }

  static void setBatches(DataLoader loader, Iterable<? extends List<Long>> batches) {
    withBatchArrays(batches, (indices, lengths) -> {
      loader.nativeSetBatches(indices, lengths);
      return null;
    });
  }

  /** The batches as the C layout (indices in order, each batch's length), handed to use. */
  private static <T> T withBatchArrays(Iterable<? extends List<Long>> batches,
      java.util.function.BiFunction<Int64Vector, Int64Vector, T> use) {
    Int64Vector indices = new Int64Vector();
    Int64Vector lengths = new Int64Vector();
    try {
      for (List<Long> batch : batches) {
        for (Long index : batch) indices.add(index);
        lengths.add((long) batch.size());
      }
      return use.apply(indices, lengths);
    } finally {
      indices.delete();
      lengths.delete();
    }
  }

  /** One epoch of loader's batches: nextBatch() until it returns null. */
  static Iterator<Batch> epoch(DataLoader loader) {
    return new Iterator<Batch>() {
      private Batch next;
      private boolean done;

      @Override
      public boolean hasNext() {
        if (next == null && !done) {
          next = loader.nextBatch();
          done = next == null;
        }
        return next != null;
      }

      @Override
      public Batch next() {
        if (!hasNext()) throw new NoSuchElementException("the epoch has ended");
        Batch batch = next;
        next = null;
        return batch;
      }
    };
  }

  static Sequences fromArrays(long[] ids, long[] offsets, long[] labels, long vocabSize) {
    Int64Vector i = new Int64Vector(ids);
    Int64Vector o = new Int64Vector(offsets);
    Int64Vector l = new Int64Vector(labels);
    try {
      return Sequences.fromArrays(i, o, l, vocabSize);
    } finally {
      i.delete();
      o.delete();
      l.delete();
    }
  }

  static Sequences of(long vocabSize, long[][] sequences) {
    Int64Vector ids = new Int64Vector();
    Int64Vector offsets = new Int64Vector();
    Int64Vector labels = new Int64Vector();
    try {
      offsets.add(0L);
      for (long[] sequence : sequences) {
        for (long id : sequence) ids.add(id);
        offsets.add((long) ids.size());
      }
      return Sequences.fromArrays(ids, offsets, labels, vocabSize);
    } finally {
      ids.delete();
      offsets.delete();
      labels.delete();
    }
  }
}
