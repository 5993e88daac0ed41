package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The named forward and named parameters on tests/model/files (make_torchscript_fixture.py). */
class NamedForwardTest {
  static String fixture(String name) {
    return System.getProperty("accel.test.files") + "/" + name;
  }

  @Test
  void mapInMapOutBoundByName() {
    try (Model model = Model.fromTorchscript(fixture("named_dict.pt"));
         Tensor x = Tensor.of(new float[12], 3, 4);
         Tensor mask = Tensor.of(new float[] {1, 1, 1, 1, 1, 1}, 3, 2)) {
      LinkedHashMap<String, Tensor> out = model.forward(Map.of("x", x, "mask", mask));
      try {
        assertEquals(List.of("logits", "loss"), new ArrayList<>(out.keySet()));
        assertArrayEqualsShape(new long[] {3, 2}, out.get("logits").shape());
      } finally {
        for (Tensor t : out.values()) t.close();
      }
      AccelException missing = assertThrows(AccelException.class, () -> model.forward(Map.of("x", x)));
      assertTrue(missing.getMessage().contains("missing input \"mask\""), missing.getMessage());
      AccelException unknown =
          assertThrows(AccelException.class, () -> model.forward(Map.of("x", x, "mask", mask, "labels", x)));
      assertTrue(unknown.getMessage().contains("unknown input \"labels\""), unknown.getMessage());
    }
  }

  @Test
  void tiedParameterOnceAndATrainingStep() {
    try (Accelerator acc = new AcceleratorBuilder().cpu(true).build();
         Model model = Model.fromTorchscript(fixture("tied_lm.pt"));
         Optimizer opt = Optimizer.sgd(model, 0.5, 0.0);
         Tensor ids = Tensor.of(new long[] {1, 2, 3}, 1, 3);
         Tensor labels = Tensor.of(new long[] {2, 3, 4}, 1, 3)) {
      acc.prepare(model, opt);
      LinkedHashMap<String, Tensor> params = model.parameters();
      assertEquals(List.of("wte.weight"), new ArrayList<>(params.keySet()));
      Tensor weight = params.get("wte.weight");
      float[] before = weight.toFloatArray();
      LinkedHashMap<String, Tensor> out = model.forward(Map.of("input_ids", ids, "labels", labels));
      acc.backward(out.get("loss"));
      opt.step();
      assertFalse(Arrays.equals(before, weight.toFloatArray()), "the handle is the parameter: it sees the step");
      for (Tensor t : out.values()) t.close();
      weight.close();
    }
  }

  /** tied_lm.pt's logits for fixed ids and labels. */
  static float[] tiedLogits(Model model) {
    try (Tensor ids = Tensor.of(new long[] {1, 4, 7, 2, 9, 0}, 2, 3);
         Tensor labels = Tensor.of(new long[] {4, 7, 2, 9, 0, 3}, 2, 3)) {
      LinkedHashMap<String, Tensor> out = model.forward(Map.of("input_ids", ids, "labels", labels));
      try {
        return out.get("logits").toFloatArray();
      } finally {
        for (Tensor t : out.values()) t.close();
      }
    }
  }

  /**
   * init_empty_weights for TorchScript: fromTorchscriptEmpty reads no weight; filled from what
   * saveModel wrote, in memory or streamed from disk around each call, it computes the loaded
   * model's logits. A GPU in the map is refused.
   */
  @Test
  void emptyTorchscriptModelLoadsFromACheckpoint(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
    try (Accelerator acc = new AcceleratorBuilder().cpu(true).build();
         Model full = Model.fromTorchscript(fixture("tied_lm.pt"));
         Model streamed = Model.fromTorchscriptEmpty(fixture("tied_lm.pt"));
         Model inMemory = Model.fromTorchscriptEmpty(fixture("tied_lm.pt"))) {
      acc.saveModel(full, dir.toString());
      AccelException gpu = assertThrows(AccelException.class,
          () -> streamed.loadCheckpointAndDispatch(dir.toString(), Map.of("", "cuda:0"), null, null));
      assertTrue(gpu.getMessage().contains("\"cuda:0\""), gpu.getMessage());
      streamed.loadCheckpointAndDispatch(dir.toString(), Map.of("", "disk"), null, null);
      inMemory.materialize(dir.toString());
      float[] want = tiedLogits(full);
      assertTrue(Arrays.equals(want, tiedLogits(streamed)), "streamed from disk");
      assertTrue(Arrays.equals(want, tiedLogits(inMemory)), "in memory");
    }
  }

  /** The GPT-2 tests/hf exports with transformers (set by CTest java_hf_gpt2_step). */
  @Test
  void exportedGpt2NamedForwardAndSteps() throws java.io.IOException {
    String dir = System.getProperty("accel.hf.gpt2");
    org.junit.jupiter.api.Assumptions.assumeTrue(dir != null, "accel.hf.gpt2 is not set");
    int rows = 2, length = 16;
    Map<String, Tensor> batch = new LinkedHashMap<>();
    for (String name : List.of("input_ids", "attention_mask", "labels")) {
      java.nio.LongBuffer values = java.nio.ByteBuffer.wrap(java.nio.file.Files.readAllBytes(
          java.nio.file.Path.of(dir, name + ".bin"))).order(java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer();
      long[] first = new long[rows * length];
      values.get(first);
      batch.put(name, Tensor.of(first, rows, length));
    }
    try (Accelerator acc = new AcceleratorBuilder().cpu(true).build();
         Model model = Model.fromTorchscript(dir + "/model.pt");
         Optimizer opt = Optimizer.adamW(model, 3e-3)) {
      acc.prepare(model, opt);
      LinkedHashMap<String, Tensor> params = model.parameters();
      assertTrue(params.containsKey("transformer.wte.weight"));
      assertFalse(params.containsKey("lm_head.weight"), "the tied copy is listed once");
      for (Tensor t : params.values()) t.close();
      double[] losses = new double[3];
      for (int step = 0; step < 3; ++step) {
        LinkedHashMap<String, Tensor> out = model.forward(batch);
        assertArrayEqualsShape(new long[] {rows, length, 256}, out.get("logits").shape());
        losses[step] = out.get("loss").item();
        acc.backward(out.get("loss"));
        opt.step();
        opt.zeroGrad();
        for (Tensor t : out.values()) t.close();
      }
      assertTrue(losses[2] < losses[0], Arrays.toString(losses));
    } finally {
      for (Tensor t : batch.values()) t.close();
    }
  }

  static void assertArrayEqualsShape(long[] expected, long[] actual) {
    assertEquals(Arrays.toString(expected), Arrays.toString(actual));
  }
}
