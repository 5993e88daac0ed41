package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Java datasets through the callback dataset: map-style, iterable, worker threads, errors. */
class DataTest {
  static final List<Field> FIELDS = List.of(Field.of(DType.FLOAT32, 2), Field.scalar(DType.INT64));

  /** x = [i, i*i] (float32), y = i % 3 (int64). */
  static MapDataset squares(long n) {
    return MapDataset.of(n, FIELDS, (i, out) -> out.set(0, (float) i, (float) (i * i)).set(1, i % 3));
  }

  static DataLoaderOptions options(long batchSize) {
    DataLoaderOptions options = new DataLoaderOptions();
    options.setBatchSize(batchSize);
    return options;
  }

  /** {xs (n x 2 floats), ys} of one epoch. */
  static Object[] collect(DataLoader loader) {
    List<Float> xs = new ArrayList<>();
    List<Long> ys = new ArrayList<>();
    for (Batch batch : loader) {
      try (batch) {
        for (float v : batch.inputs().toFloatArray()) xs.add(v);
        for (long v : batch.targets().toLongArray()) ys.add(v);
      }
    }
    float[] x = new float[xs.size()];
    for (int i = 0; i < x.length; ++i) x[i] = xs.get(i);
    return new Object[] {x, ys.stream().mapToLong(Long::longValue).toArray()};
  }

  @Test
  void mapDatasetYieldsEverySampleInOrder() {
    try (DataLoader loader = DataLoader.of(squares(10), options(4))) {
      assertEquals(3, loader.numBatches());
      Object[] data = collect(loader);
      float[] x = (float[]) data[0];
      long[] y = (long[]) data[1];
      assertEquals(20, x.length);
      for (int i = 0; i < 10; ++i) {
        assertEquals(i, x[2 * i]);
        assertEquals(i * i, x[2 * i + 1]);
        assertEquals(i % 3, y[i]);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2})
  void workerThreadsCallJavaAndKeepTheOrder(int workers) {
    Set<String> threads = ConcurrentHashMap.newKeySet();
    MapDataset recording = MapDataset.of(50, FIELDS, (i, out) -> {
      threads.add(Thread.currentThread().getName());
      squares(50).get(i, out);
    });
    DataLoaderOptions plain = options(4);
    plain.setShuffle(true);
    plain.setSeed(7);
    DataLoaderOptions threaded = options(4);
    threaded.setShuffle(true);
    threaded.setSeed(7);
    threaded.setNumWorkers(workers);
    Object[] expected, actual;
    try (DataLoader loader = DataLoader.of(squares(50), plain)) {
      expected = collect(loader);
    }
    String main = Thread.currentThread().getName();
    try (DataLoader loader = DataLoader.of(recording, threaded)) {
      actual = collect(loader);
    }
    assertArrayEquals((float[]) expected[0], (float[]) actual[0]);
    assertArrayEquals((long[]) expected[1], (long[]) actual[1]);
    assertFalse(threads.contains(main), "samples were read on the calling thread: " + threads);
    float[] firsts = new float[50];
    for (int i = 0; i < 50; ++i) firsts[i] = ((float[]) actual[0])[2 * i];
    Arrays.sort(firsts);
    for (int i = 0; i < 50; ++i) assertEquals(i, firsts[i]);  // every sample once
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 2})
  void exceptionInGetBecomesAnAccelExceptionNamingIt(int workers) {
    MapDataset broken = MapDataset.of(8, FIELDS, (i, out) -> {
      if (i == 5) throw new IllegalStateException("sample five is missing");
      squares(8).get(i, out);
    });
    DataLoaderOptions options = options(2);
    options.setNumWorkers(workers);
    try (DataLoader loader = DataLoader.of(broken, options)) {
      AccelException e = assertThrows(AccelException.class, () -> collect(loader));
      assertTrue(e.getMessage().contains("java.lang.IllegalStateException: sample five is missing"), e.getMessage());
    }
  }

  @Test
  void sampleOfTheWrongSizeIsAnError() {
    MapDataset ragged = MapDataset.of(6, FIELDS, (i, out) -> out.set(0, new float[i < 3 ? 2 : 3]).set(1, 0L));
    try (DataLoader loader = DataLoader.of(ragged, options(2))) {
      AccelException e = assertThrows(AccelException.class, () -> collect(loader));
      assertTrue(e.getMessage().contains("field 0 takes 8 bytes, got 12"), e.getMessage());
    }
  }

  @Test
  void valuesAreConvertedToTheFieldsDType() {
    List<Field> fields = List.of(Field.of(DType.FLOAT64, 2), Field.scalar(DType.INT64), Field.scalar(DType.UINT8));
    MapDataset data = MapDataset.of(3, fields, (i, out) -> out.set(0, (int) i, 2 * (int) i).set(1, (int) i + 10)
        .set(2, 200));
    try (DataLoader loader = DataLoader.of(data, options(3)); Batch batch = loader.nextBatch()) {
      assertArrayEquals(new double[] {0, 0, 1, 2, 2, 4}, batch.get(0).toDoubleArray());
      assertArrayEquals(new long[] {10, 11, 12}, batch.get(1).toLongArray());
      assertEquals(DType.UINT8, batch.get(2).dtype());
      assertArrayEquals(new byte[] {(byte) 200, (byte) 200, (byte) 200}, batch.get(2).toByteArray());
    }
  }

  @Test
  void sampleUsedAfterItsCallbackIsClosed() {
    Sample[] kept = new Sample[1];
    MapDataset keeping = MapDataset.of(2, FIELDS, (i, out) -> {
      kept[0] = out;
      squares(2).get(i, out);
    });
    try (DataLoader loader = DataLoader.of(keeping, options(2))) {
      collect(loader);
    }
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> kept[0].set(1, 1L));
    assertEquals("Sample is closed", e.getMessage());
  }

  @Test
  void iterableDatasetStartsEveryEpochWithReset() {
    long[] epoch = {0};
    List<Long> resets = new ArrayList<>();
    IterableDataset stream = new IterableDataset() {
      private int next;

      @Override
      public List<Field> fields() {
        return List.of(Field.of(DType.FLOAT32, 1), Field.scalar(DType.INT64));
      }

      @Override
      public void reset(long e) {
        resets.add(e);
        epoch[0] = e;
        next = 0;
      }

      @Override
      public boolean next(Sample out) {
        if (next == 7) return false;
        out.set(0, (float) (next + 100 * epoch[0])).set(1, (long) next);
        ++next;
        return true;
      }
    };
    try (Dataset dataset = Dataset.fromIterable(stream); DataLoader loader = new DataLoader(dataset, options(3))) {
      assertTrue(dataset.isIterable());
      assertThrows(AccelException.class, dataset::size);
      assertArrayEquals(new float[] {0, 1, 2, 3, 4, 5, 6}, (float[]) collect(loader)[0]);
      loader.setEpoch(2);
      assertArrayEquals(new float[] {200, 201, 202, 203, 204, 205, 206}, (float[]) collect(loader)[0]);
      assertTrue(resets.contains(2L), "reset calls: " + resets);
    }
  }

  @Test
  void iterableDatasetOverAJavaIterable() {
    List<Integer> items = List.of(3, 1, 4, 1, 5);
    IterableDataset stream = IterableDataset.of(List.of(Field.scalar(DType.FLOAT32), Field.scalar(DType.INT64)), items,
        (item, out) -> out.set(0, item * 0.5f).set(1, (long) item));
    try (DataLoader loader = DataLoader.of(stream, options(2))) {
      assertArrayEquals(new long[] {3, 1, 4, 1, 5}, (long[]) collect(loader)[1]);
      assertArrayEquals(new long[] {3, 1, 4, 1, 5}, (long[]) collect(loader)[1]);  // a second pass
    }
  }

  @Test
  void exceptionInAStreamBecomesAnAccelException() {
    IterableDataset stream = IterableDataset.of(FIELDS, List.of(1, 2, 3), (item, out) -> {
      if (item == 3) throw new java.io.IOException("stream broke at 3");
      out.set(0, item, item).set(1, item);
    });
    try (DataLoader loader = DataLoader.of(stream, options(1))) {
      AccelException e = assertThrows(AccelException.class, () -> collect(loader));
      assertTrue(e.getMessage().contains("java.io.IOException: stream broke at 3"), e.getMessage());
    }
  }

  @Test
  void datasetFromTensorsAndSkipFirstBatches() {
    float[] xs = new float[20];
    for (int i = 0; i < 20; ++i) xs[i] = i;
    try (Tensor x = Tensor.of(xs, 10, 2);
         Tensor y = Tensor.of(new long[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
         Dataset dataset = Dataset.fromTensors(x, y);
         DataLoader loader = new DataLoader(dataset, options(3));
         DataLoader rest = loader.skipFirstBatches(2)) {
      assertArrayEquals(new long[] {6, 7, 8, 9}, (long[]) collect(rest)[1]);
    }
  }

  @Test
  void preparedLoaderAndGatherForMetricsOnOneProcess() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         DataLoader loader = DataLoader.of(squares(10), options(4))) {
      acc.prepare(loader);
      List<Boolean> ends = new ArrayList<>();
      List<Long> seen = new ArrayList<>();
      for (Batch batch : loader) {
        try (batch; Tensor gathered = acc.gatherForMetrics(batch.targets())) {
          ends.add(acc.endOfDataloader());
          for (long v : gathered.toLongArray()) seen.add(v);
        }
      }
      assertEquals(List.of(false, false, true), ends);
      assertFalse(acc.endOfDataloader());
      assertEquals(List.of(0L, 1L, 2L, 0L, 1L, 2L, 0L, 1L, 2L, 0L), seen);
    }
  }

  /** Accelerate's test_dataloader_break: 80 and 96 samples in batches of 16, the second loader
   *  iterated whole inside the first's second batch. */
  @Test
  void inDataloaderFollowsNestedLoaders() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         DataLoader first = DataLoader.of(squares(80), options(16));
         DataLoader second = DataLoader.of(squares(96), options(16))) {
      acc.prepare(first);
      acc.prepare(second);
      assertFalse(acc.inDataloader());
      int iteration = 0;
      for (Batch batch : first) {
        try (batch) {
          assertTrue(acc.inDataloader());
          assertEquals(0, first.openIndex());
          assertEquals(iteration == 4, acc.endOfDataloader());
          if (iteration == 1) {
            int inner = 0;
            for (Batch b : second) {
              try (b) {
                assertEquals(1, second.openIndex());
                assertEquals(inner == 5, acc.endOfDataloader());
                ++inner;
              }
            }
            assertEquals(6, inner);
            assertEquals(-1, second.openIndex());
            assertFalse(acc.endOfDataloader()); // the first loader's answer again
          }
          ++iteration;
        }
      }
      assertEquals(5, iteration);
      assertFalse(acc.inDataloader());
      assertEquals(-1, first.openIndex());
    }
  }

  @Test
  void badFieldsAreRejected() {
    MapDataset none = MapDataset.of(3, List.of(), (i, out) -> {});
    assertThrows(AccelException.class, () -> Dataset.fromMap(none));
    MapDataset badShape = MapDataset.of(3, List.of(Field.of(DType.FLOAT32, 0)), (i, out) -> {});
    assertThrows(AccelException.class, () -> Dataset.fromMap(badShape));
  }
}
