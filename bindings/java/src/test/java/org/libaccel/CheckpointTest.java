package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Checkpoint objects, state hooks and trackers written in Java. */
class CheckpointTest {
  /** A counter saved as its decimal text. */
  static final class Counter implements Checkpointable {
    int value;

    @Override
    public byte[] saveState() {
      return Integer.toString(value).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void loadState(byte[] state) {
      value = Integer.parseInt(new String(state, StandardCharsets.UTF_8));
    }
  }

  @Test
  void javaObjectsAreSavedAndRestoredWithTheModel(@TempDir Path dir) {
    Counter counter = new Counter();
    String checkpoint = dir.resolve("ckpt").toString();
    try (Accelerator acc = Accelerator.builder().cpu(true).projectDir(dir.toString()).build();
         Model model = Model.fromJson(ModelTest.LINEAR);
         Optimizer opt = Optimizer.adamW(model, 0.1);
         Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 1, 4)) {
      acc.prepare(model, opt);
      acc.registerForCheckpointing(counter);
      counter.value = 42;
      float[] before;
      try (Tensor y = model.forward(x)) {
        before = y.toFloatArray();
      }
      acc.saveState(checkpoint);
      assertTrue(Files.exists(dir.resolve("ckpt").resolve("custom_checkpoint_0.pkl")));

      counter.value = 0;
      try (Tensor y = model.forward(x); Tensor loss = y.sum()) {  // change the weights
        acc.backward(loss);
        opt.step();
      }
      try (Tensor y = model.forward(x)) {
        assertNotEquals(before[0], y.toFloatArray()[0]);
      }
      acc.loadState(checkpoint);
      assertEquals(42, counter.value);
      try (Tensor y = model.forward(x)) {
        assertArrayEquals(before, y.toFloatArray());
      }
    }
  }

  @Test
  void savedTensorsReadBackAsASafetensorsDataset(@TempDir Path dir) throws Exception {
    Path shards = Files.createDirectory(dir.resolve("shards"));
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Tensor x = Tensor.of(new float[] {0, 1, 2, 3, 4, 5}, 3, 2);
         Tensor y = Tensor.of(new long[] {7, 8, 9}, 3)) {
      acc.save(Map.of("x", x, "y", y), shards.resolve("part-0.safetensors").toString());
      acc.save(Map.of("x", x, "y", y), shards.resolve("part-1.safetensors").toString());
      try (Dataset data = Dataset.fromSafetensors(shards.toString(), "x", "y")) {
        assertEquals(6, data.size());
      }
      AccelException e = assertThrows(AccelException.class,
          () -> Dataset.fromSafetensors(shards.toString(), "x", "label"));
      assertTrue(e.getMessage().contains("has no tensor 'label'"), e.getMessage());
      e = assertThrows(AccelException.class, () -> acc.save(Map.of("x", x), dir.resolve("no/dir/a.safetensors").toString()));
      assertTrue(e.getMessage().contains("a.safetensors"), e.getMessage());
    }
  }

  @Test
  void exceptionInACheckpointObjectFailsSaveStateNamingIt(@TempDir Path dir) {
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      acc.registerForCheckpointing(new Checkpointable() {
        @Override
        public byte[] saveState() {
          throw new UnsupportedOperationException("cannot save this one");
        }

        @Override
        public void loadState(byte[] state) {}
      });
      AccelException e = assertThrows(AccelException.class, () -> acc.saveState(dir.resolve("c").toString()));
      assertTrue(e.getMessage().contains("java.lang.UnsupportedOperationException: cannot save this one"),
          e.getMessage());
    }
  }

  @Test
  void hooksRunWithTheDirectoryAndCanBeRemoved(@TempDir Path dir) {
    List<String> calls = new ArrayList<>();
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      RemovableHandle save = acc.registerSaveStatePreHook(d -> calls.add("save " + d));
      acc.registerLoadStatePreHook(d -> calls.add("load " + d));
      String checkpoint = dir.resolve("a").toString();
      acc.saveState(checkpoint);
      acc.loadState(checkpoint);
      save.remove();
      acc.saveState(dir.resolve("b").toString());
      assertEquals(List.of("save " + checkpoint, "load " + checkpoint), calls);
      assertThrows(AccelException.class, save::remove);  // already removed
    }
  }

  /** As Accelerate's: the save hook gets the prepared models and their weights, the load hook the models. */
  @Test
  void hooksReceiveThePreparedModelsAndWeights(@TempDir Path dir) {
    List<String> calls = new ArrayList<>();
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Model model = Model.fromJson("[{\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 2}]")) {
      acc.registerSaveStatePreHook((models, weights, d) -> {
        String call = "save " + models.size() + " " + weights.size();
        if (!weights.isEmpty()) {
          call += " " + weights.get(0).keySet() + " " + Arrays.toString(weights.get(0).get("0.weight").shape());
        }
        calls.add(call);
      });
      acc.registerLoadStatePreHook((models, d) -> calls.add("load " + models.size() + " " + (models.get(0) == model)));
      acc.prepare(model);
      String checkpoint = dir.resolve("a").toString();
      acc.saveState(checkpoint);
      acc.loadState(checkpoint);
      acc.freeMemory();  // forgets the model: the save hook then gets none
      acc.saveState(dir.resolve("b").toString());
      assertEquals(List.of("save 1 1 [0.weight, 0.bias] [2, 3]", "load 1 true", "save 0 0"), calls);
    }
  }

  @Test
  void failingHookAbortsSaveState(@TempDir Path dir) {
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      acc.registerSaveStatePreHook(d -> {
        throw new IllegalArgumentException("no room in " + d);
      });
      String checkpoint = dir.resolve("x").toString();
      AccelException e = assertThrows(AccelException.class, () -> acc.saveState(checkpoint));
      assertTrue(e.getMessage().contains("java.lang.IllegalArgumentException: no room in"), e.getMessage());
      assertTrue(Files.notExists(dir.resolve("x")));
    }
  }

  /** Records every call. */
  static final class Recorder implements Tracker {
    final List<String> events = new ArrayList<>();

    @Override
    public String name() {
      return "recorder";
    }

    @Override
    public void start(String runName, Map<String, Object> config) {
      events.add("start " + runName + " " + new java.util.TreeMap<>(config));
    }

    @Override
    public void log(Map<String, Double> values, OptionalLong step) {
      events.add("log " + values + " " + (step.isPresent() ? step.getAsLong() : "-"));
    }

    @Override
    public void finish() {
      events.add("finish");
    }
  }

  @Test
  void customTrackerReceivesConfigValuesAndFinish() {
    Recorder recorder = new Recorder();
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      acc.addTracker(recorder);
      Map<String, Object> config = new java.util.LinkedHashMap<>();
      config.put("lr", 0.5);
      config.put("epochs", 3);
      config.put("name", "a \"quoted\" \u00e9 name\n");
      acc.initTrackers("run1", config);
      assertTrue(acc.hasTracker("recorder"));
      acc.log(Map.of("loss", 1.25), 3);
      acc.log(Map.of("acc", 0.5));
      acc.endTraining();
    }
    // Read back as Java values; the core keeps configuration numbers as doubles (3 arrives as 3.0).
    assertEquals(List.of("start run1 {epochs=3.0, lr=0.5, name=a \"quoted\" \u00e9 name\n}", "log {loss=1.25} 3", "log {acc=0.5} -", "finish"), recorder.events);
  }

  @Test
  void initKwargsReachTheBuiltinTrackers(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    try (Accelerator acc = Accelerator.builder().cpu(true).logWith("dvclive").loggingDir(dir.toString()).build()) {
      AccelException bad = assertThrows(AccelException.class,
          () -> acc.initTrackers("run", Map.of(), Map.of("dvclive", Map.of("folder", "x"))));
      assertTrue(bad.getMessage().contains("'folder'"), bad.getMessage());
      acc.initTrackers("run", Map.of("lr", 0.5), Map.of("dvclive", Map.of("dir", dir.resolve("live").toString())));
      acc.log(Map.of("loss", 0.25), 4);
      acc.endTraining();
    }
    assertEquals("step\tloss\n4\t0.25\n", java.nio.file.Files.readString(dir.resolve("live/plots/metrics/loss.tsv")));
    assertEquals("\"lr\": 0.5\n", java.nio.file.Files.readString(dir.resolve("live/params.yaml")));
  }

  @Test
  void getTrackerLogsToOneBuiltinTracker(@TempDir Path dir) throws Exception {
    Recorder recorder = new Recorder();
    try (Accelerator acc = Accelerator.builder().cpu(true).logWith("jsonl,csv").loggingDir(dir.toString()).build()) {
      acc.addTracker(recorder);
      // Nothing runs before initTrackers: Accelerate's blank tracker, whatever the name.
      acc.getTracker("wandb").log(Map.of("x", 1.0), OptionalLong.empty());
      assertTrue(acc.getTracker("recorder") == recorder);
      acc.initTrackers("run");
      Tracker jsonl = acc.getTracker("jsonl");
      assertTrue(jsonl instanceof BuiltinTracker && jsonl == acc.getTracker("jsonl"));
      assertEquals("jsonl", jsonl.name());
      jsonl.log(Map.of("loss", 0.5), OptionalLong.of(2));
      ((BuiltinTracker) acc.getTracker("csv")).log(Map.of("acc", 0.25), -1);
      ((BuiltinTracker) jsonl).logText("note", "warm-up", 3);
      IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> acc.getTracker("wandb"));
      assertEquals("wandb is not an available tracker stored inside the Accelerator", unknown.getMessage());
      assertThrows(UnsupportedOperationException.class, jsonl::finish);
      acc.endTraining();
    }
    assertEquals("{\"loss\":0.5,\"step\":2}\n{\"note\":\"warm-up\",\"step\":3}\n",
        Files.readString(dir.resolve("run/metrics.jsonl")));
    assertEquals("step,tag,value\n,acc,0.25\n", Files.readString(dir.resolve("run/metrics.csv")));
    assertEquals(List.of("start run {}", "finish"), recorder.events);  // the custom tracker received none of it
  }

  @Test
  void closingTheAcceleratorFinishesItsTrackers() {
    Recorder recorder = new Recorder();
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      acc.addTracker(recorder);
      AccelException bad = assertThrows(AccelException.class, () -> acc.initTrackers("run2", Map.of("x", new Object())));
      assertTrue(bad.getMessage().contains("java.lang.Object"), bad.getMessage());
      acc.initTrackers("run2");
      acc.log(Map.of("loss", 2.0), 1);
    }
    assertEquals(List.of("start run2 {}", "log {loss=2.0} 1", "finish"), recorder.events);
  }

  @Test
  void trackerExceptionBecomesAnAccelException() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      acc.addTracker(new Tracker() {
        @Override
        public void log(Map<String, Double> values, OptionalLong step) {
          throw new ArithmeticException("cannot log " + values.keySet());
        }
      });
      acc.initTrackers("run");
      AccelException e = assertThrows(AccelException.class, () -> acc.log(Map.of("x", 1.0)));
      assertTrue(e.getMessage().contains("java.lang.ArithmeticException: cannot log [x]"), e.getMessage());
      assertThrows(AccelException.class, () -> acc.addTracker(new Recorder()));  // after initTrackers
    }
  }
}
