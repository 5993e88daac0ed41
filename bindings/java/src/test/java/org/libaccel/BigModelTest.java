package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The big-model tools from Java: an empty GPT, its sizes and Accelerate 0.22's device map. */
class BigModelTest {
  static final String LAYER =
      "{\"type\": \"TransformerEncoderLayer\", \"d_model\": 64, \"nhead\": 4, \"dim_feedforward\": 256, \"batch_first\": true}";
  static final String GPT = "{\"inputs\": [\"input_ids\"], \"nodes\": ["
      + "{\"name\": \"wte\", \"type\": \"Embedding\", \"num_embeddings\": 256, \"embedding_dim\": 64},"
      + "{\"name\": \"h\", \"type\": \"Sequential\", \"layers\": [" + LAYER + "," + LAYER + "," + LAYER + "," + LAYER + "]},"
      + "{\"name\": \"ln_f\", \"type\": \"LayerNorm\", \"normalized_shape\": 64},"
      + "{\"name\": \"logits\", \"type\": \"Linear\", \"in_features\": 64, \"out_features\": 256, \"bias\": false}],"
      + " \"outputs\": [\"logits\"]}";

  @Test
  void emptyModelSizesAndDeviceMap() {
    try (Model model = Model.fromJsonEmpty(GPT)) {
      Map<String, Long> sizes = model.moduleSizes(null);
      assertEquals(931328L, sizes.get(""));
      assertEquals(199936L, sizes.get("h.0"));
      Map<String, String> budget = new LinkedHashMap<>();
      budget.put("cpu", "500000");
      Map<String, String> map = model.inferAutoDeviceMap(budget, Arrays.asList("TransformerEncoderLayer"), null);
      assertEquals("{wte=cpu, h.0=cpu, h.1=disk, h.2=disk, h.3=disk, ln_f=disk, logits=disk}", map.toString());
      model.checkDeviceMap(map);
      Map<String, String> bad = new LinkedHashMap<>(map);
      bad.put("lm_head", "cpu");
      AccelException e = assertThrows(AccelException.class, () -> model.checkDeviceMap(bad));
      assertTrue(e.getMessage().contains("\"lm_head\" names no module"), e.getMessage());
      budget.put("cpu", "100000");
      e = assertThrows(AccelException.class,
                       () -> model.inferAutoDeviceMap(budget, Arrays.asList("TransformerEncoderLayer"), null));
      assertTrue(e.getMessage().contains("\"h.0\" (199936 bytes)"), e.getMessage());
      // null budgets: Accel.getMaxMemory(), here the RAM available, far more than the model needs.
      assertTrue(Accel.getMaxMemory().get("cpu") > 931328L);
      assertEquals("{=cpu}", model.inferAutoDeviceMap(null, null, null).toString());
    }
  }

  private static float[] logits(Model model) {
    model.eval();
    try (Tensor ids = Tensor.of(new long[] {3, 1, 4, 1, 5, 9, 2, 6}, 1, 8); Tensor out = model.forward(ids)) {
      return out.toFloatArray();
    }
  }

  /** device_map="auto": this small model fits the first device with memory, so it computes as the full one. */
  @Test
  void loadCheckpointAndDispatchAuto(@TempDir Path dir) {
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Model full = Model.fromJson(GPT);
         Model model = Model.fromJsonEmpty(GPT)) {
      acc.saveModel(full, dir.toString());
      AccelException e = assertThrows(AccelException.class,
                                      () -> model.loadCheckpointAndDispatch(dir.toString(), "balanced_low_1", null, null));
      assertTrue(e.getMessage().contains("\"balanced_low_1\""), e.getMessage());
      model.loadCheckpointAndDispatch(dir.toString(), "auto", null, null);
      assertArrayEquals(logits(full), logits(model));
      try (Model balanced = Model.fromJsonEmpty(GPT)) {
        balanced.loadCheckpointAndDispatch(dir.toString(), "balanced", null, null);
        assertArrayEquals(logits(full), logits(balanced));
      }
    }
  }

  /** diskOffload: the weights go to the folder and to meta, and the model computes the same. */
  @Test
  void diskOffloadComputesTheSame(@TempDir Path dir) {
    try (Model model = Model.fromJson(GPT)) {
      float[] want = logits(model);
      AccelException gpu = assertThrows(AccelException.class, () -> model.diskOffload(dir.toString(), "cuda:64"));
      assertTrue(gpu.getMessage().contains("\"cuda:64\" but this machine"), gpu.getMessage());
      model.diskOffload(dir.toString());
      assertTrue(java.nio.file.Files.exists(dir.resolve("offload_index.json")));
      assertArrayEquals(want, logits(model));
      AccelException again = assertThrows(AccelException.class, () -> model.diskOffload(dir.resolve("b").toString()));
      assertTrue(again.getMessage().contains("has no data"), again.getMessage());
    }
  }

  /** dispatchModel of a loaded model over cpu and disk computes the same; disk needs a folder. */
  @Test
  void dispatchModelComputesTheSame(@TempDir Path dir) {
    try (Model model = Model.fromJson(GPT)) {
      float[] want = logits(model);
      Map<String, String> map = new LinkedHashMap<>();
      map.put("wte", "cpu");
      map.put("h", "disk");
      map.put("ln_f", "cpu");
      map.put("logits", "disk");
      AccelException noFolder = assertThrows(AccelException.class, () -> model.dispatchModel(map, null));
      assertTrue(noFolder.getMessage().contains("no offload folder"), noFolder.getMessage());
      assertTrue(model.hfDeviceMap().isEmpty());
      model.dispatchModel(map, dir.toString());
      assertEquals(map, model.hfDeviceMap());
      assertEquals(List.copyOf(map.keySet()), List.copyOf(model.hfDeviceMap().keySet()));  // the map's order
      assertTrue(java.nio.file.Files.exists(dir.resolve("offload_index.json")));
      assertArrayEquals(want, logits(model));
    }
  }

  /** cpuOffload onto the CPU computes the same; a device the machine lacks is named. */
  @Test
  void cpuOffloadComputesTheSame() {
    try (Model model = Model.fromJson(GPT)) {
      float[] want = logits(model);
      AccelException bad = assertThrows(AccelException.class, () -> model.cpuOffload("tpu:0", false));
      assertTrue(bad.getMessage().contains("\"tpu:0\""), bad.getMessage());
      model.cpuOffload("cpu", true);
      assertArrayEquals(want, logits(model));
    }
  }

  /** Accelerate 1.15's get_balanced_memory on the torch twin over three 600 kB GPUs (no GPU needed). */
  @Test
  void balancedMemoryMatchesAccelerate() {
    try (Model model = Model.fromJsonEmpty(GPT)) {
      Map<String, String> budgets = new LinkedHashMap<>();
      budgets.put("0", "600000");
      budgets.put("1", "600000");
      budgets.put("2", "600000");
      budgets.put("cpu", "1000000000");
      List<String> noSplit = List.of("TransformerEncoderLayer");
      Map<String, Long> balanced = model.balancedMemory(budgets, noSplit, null, false);
      assertEquals(List.of("cuda:0", "cuda:1", "cuda:2", "cpu"), new ArrayList<>(balanced.keySet()));
      assertEquals(List.of(560362L, 560362L, 600000L, 1000000000L), new ArrayList<>(balanced.values()));
      Map<String, Long> lowZero = model.balancedMemory(budgets, noSplit, null, true);
      assertEquals(List.of(0L, 600000L, 600000L, 1000000000L), new ArrayList<>(lowZero.values()));
    }
  }
}
