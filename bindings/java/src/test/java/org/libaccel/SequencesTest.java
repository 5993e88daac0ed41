package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Token sequences from Java: padded batches by name, Java collate functions and their errors. */
class SequencesTest {
  static final long[][] IDS = {{1, 2, 3}, {4}, {5, 6, 7, 8, 9}, {10, 11}, {12}};

  static DataLoaderOptions options(long batchSize, int workers) {
    DataLoaderOptions options = new DataLoaderOptions();
    options.setBatchSize(batchSize);
    options.setNumWorkers(workers);
    return options;
  }

  @Test
  void paddedBatchesHaveNamedFields() {
    try (Sequences seqs = Sequences.of(0, IDS);
         Dataset ds = Dataset.fromSequences(seqs);
         DataLoader loader = new DataLoader(ds, options(2, 0))) {
      List<String> names = loader.fieldNames();
      assertEquals(List.of("input_ids", "attention_mask", "labels"), names);
      try (Batch batch = loader.nextBatch()) {
        Map<String, Tensor> fields = batch.asMap(names);
        assertArrayEquals(new long[] {1, 2, 3, 4, 0, 0}, fields.get("input_ids").toLongArray());
        assertArrayEquals(new long[] {1, 1, 1, 1, 0, 0}, fields.get("attention_mask").toLongArray());
        assertArrayEquals(new long[] {1, 2, 3, 4, -100, -100}, fields.get("labels").toLongArray());
      }
    }
  }

  static Map<String, Tensor> lengths(List<CollateFunction.SequenceSample> samples) {
    long[] lengths = new long[samples.size()];
    for (int i = 0; i < lengths.length; ++i) lengths[i] = samples.get(i).inputIds().length;
    return Map.of("lengths", Tensor.of(lengths));
  }

  @Test
  void javaCollateFunctionMakesTheBatch() {
    for (int workers : new int[] {0, 2}) {
      try (Sequences seqs = Sequences.of(0, IDS);
           Dataset ds = Dataset.fromSequences(seqs, List.of("lengths"), SequencesTest::lengths);
           DataLoader loader = new DataLoader(ds, options(3, workers))) {
        try (Batch batch = loader.nextBatch()) {
          assertArrayEquals(new long[] {3, 1, 5}, batch.asMap(loader.fieldNames()).get("lengths").toLongArray());
        }
      }
    }
  }

  @Test
  void collateExceptionsAndRaggedFieldsReachTheCaller() {
    try (Sequences seqs = Sequences.of(0, IDS);
         Dataset failing = Dataset.fromSequences(seqs, List.of("x"), samples -> {
           throw new IllegalStateException("the Java collate failed");
         });
         DataLoader loader = new DataLoader(failing, options(2, 0))) {
      AccelException e = assertThrows(AccelException.class, loader::nextBatch);
      assertTrue(e.getMessage().contains("IllegalStateException: the Java collate failed"), e.getMessage());
    }
    try (Sequences seqs = Sequences.of(0, IDS);
         Dataset wrong = Dataset.fromSequences(seqs, List.of("x"),
             samples -> Map.of("x", Tensor.of(new long[] {1, 2, 3})));
         DataLoader loader = new DataLoader(wrong, options(2, 0))) {
      AccelException e = assertThrows(AccelException.class, loader::nextBatch);
      assertTrue(e.getMessage().contains("field 'x' has shape [3], expected [2, ...]"), e.getMessage());
    }
  }

  @Test
  void badJsonlNamesLineAndKey(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("bad.jsonl");
    Files.writeString(file, "{\"input_ids\": [1]}\n{\"ids\": [2]}\n");
    AccelException e = assertThrows(AccelException.class,
        () -> Sequences.fromJsonl(file.toString(), "input_ids", "", 0));
    assertTrue(e.getMessage().contains("bad.jsonl:2: no key 'input_ids'"), e.getMessage());
  }
}
