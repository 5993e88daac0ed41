package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Accelerate parity of loaders (issue 17, items 1-6) through the Java binding, in one process. */
class DataParityTest {
  static final List<Field> FIELDS = List.of(Field.of(DType.FLOAT32, 1), Field.scalar(DType.INT64));

  static MapDataset identity(long n) {
    return MapDataset.of(n, FIELDS, (i, out) -> out.set(0, (float) i).set(1, i));
  }

  static List<long[]> batches(DataLoader loader) {
    List<long[]> out = new ArrayList<>();
    for (Batch batch : loader) {
      try (batch) {
        out.add(batch.targets().toLongArray());
      }
    }
    return out;
  }

  @Test
  void userBatchSamplerWithVaryingSizes() {
    List<List<Long>> sampler = List.of(List.of(0L, 1L, 2L), List.of(3L, 4L), List.of(5L, 6L, 7L, 8L),
        List.of(9L, 10L, 11L), List.of(12L, 13L));
    DataLoaderOptions options = DataTest.options(0);  // the sampler has no batch size
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         DataLoader loader = DataLoader.ofBatches(identity(14), sampler, options)) {
      assertEquals(5, loader.numBatches());
      acc.prepare(loader);
      for (int epoch = 0; epoch < 2; ++epoch) {
        List<long[]> got = batches(loader);
        assertEquals(5, got.size());
        for (int b = 0; b < 5; ++b) {
          assertArrayEquals(sampler.get(b).stream().mapToLong(Long::longValue).toArray(), got.get(b));
        }
      }
    }
    AccelException e = assertThrows(AccelException.class,
        () -> DataLoader.ofBatches(identity(14), List.of(List.of(13L, 14L)), options).close());
    assertTrue(e.getMessage().contains("holds index 14"), e.getMessage());
  }

  @Test
  void setBatchesFeedsASamplerThatDrawsNewBatchesEachEpoch() {
    DataLoaderOptions options = DataTest.options(2);
    List<List<Long>> first = List.of(List.of(0L, 1L), List.of(2L, 3L), List.of(4L));
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         DataLoader loader = DataLoader.ofBatches(identity(5), first, options)) {
      acc.prepare(loader);
      for (int epoch = 0; epoch < 3; ++epoch) {
        assertEquals(epoch, loader.epoch());
        List<List<Long>> drawn = new ArrayList<>();  // the sampler's batches for this epoch: rotated
        for (long start = 0; start < 5; start += 2) {
          List<Long> batch = new ArrayList<>();
          for (long k = start; k < Math.min(5, start + 2); ++k) batch.add((k + epoch) % 5);
          drawn.add(batch);
        }
        loader.setBatches(drawn);
        List<long[]> got = batches(loader);
        assertEquals(3, got.size());
        for (int b = 0; b < 3; ++b) {
          assertArrayEquals(drawn.get(b).stream().mapToLong(Long::longValue).toArray(), got.get(b));
        }
      }
      try (Batch started = loader.iterator().next()) {
        AccelException e = assertThrows(AccelException.class, () -> loader.setBatches(first));
        assertEquals(Status.ERR_STATE, e.getStatus());
        assertTrue(e.getMessage().contains("an epoch is in progress"), e.getMessage());
      }
      loader.setEpoch(0);
      AccelException bad = assertThrows(AccelException.class, () -> loader.setBatches(List.of(List.of(5L))));
      assertTrue(bad.getMessage().contains("holds index 5"), bad.getMessage());
    }
    try (DataLoader plain = DataLoader.of(identity(5), options)) {
      AccelException e = assertThrows(AccelException.class, () -> plain.setBatches(first));
      assertEquals(Status.ERR_STATE, e.getStatus());
    }
  }

  @Test
  void skipFirstBatchesLengthAndRemainderFromTheStart() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         DataLoader loader = DataLoader.of(identity(10), DataTest.options(4))) {
      acc.prepare(loader);
      try (DataLoader rest = loader.skipFirstBatches(1)) {
        assertEquals(2, rest.numBatches());
      }
      assertEquals(-1, acc.remainder());
      for (Batch batch : loader) {
        try (batch) {
          assertEquals(2, acc.remainder());  // 10 % 4, known from the first batch
        }
      }
      assertEquals(-1, acc.remainder());
    }
  }

  @Test
  void seedableSamplerShufflesWithDataSeed() {
    DataLoaderOptions shuffled = DataTest.options(16);
    shuffled.setShuffle(true);
    shuffled.setSeed(7);
    long[] own;
    try (DataLoader loader = DataLoader.of(identity(16), shuffled)) {
      own = batches(loader).get(0);
    }
    shuffled.setSeed(123);  // overridden by the seedable sampler
    try (Accelerator acc = Accelerator.builder().cpu(true).useSeedableSampler(true).dataSeed(7).build();
         DataLoader loader = DataLoader.of(identity(16), shuffled)) {
      acc.prepare(loader);
      assertArrayEquals(own, batches(loader).get(0));
    }
  }
}
