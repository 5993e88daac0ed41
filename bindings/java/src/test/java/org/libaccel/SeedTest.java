package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Accelerate's set_seed and process facts through the Java binding, on one process. */
class SeedTest {
  /** A fresh Linear model's output on the identity: it depends only on LibTorch's generator. */
  static float[] initialWeights() {
    try (Model model = Model.fromJson(ModelTest.LINEAR);
         Tensor eye = Tensor.of(new float[] {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 4, 4);
         Tensor out = model.forward(eye)) {
      return out.toFloatArray();
    }
  }

  @Test
  void setSeedSeedsLibTorchAndTheBindingsRandom() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      acc.setSeed(42);
      float[] weights = initialWeights();
      long draw = Accelerator.random().nextLong();
      acc.setSeed(42);
      assertArrayEquals(weights, initialWeights());
      assertEquals(draw, Accelerator.random().nextLong());
      acc.setSeed(43, false, false);
      assertFalse(Arrays.equals(weights, initialWeights()));
      assertTrue(draw != Accelerator.random().nextLong());
      // One process: device-specific adds process index 0.
      acc.setSeed(42, true, false);
      assertArrayEquals(weights, initialWeights());
      assertEquals(draw, Accelerator.random().nextLong());
      // Accel.setSeed (accelerate.utils.set_seed) seeds the same generators without the accelerator.
      Accel.setSeed(42, false, false);
      assertArrayEquals(weights, initialWeights());
      assertEquals(draw, Accelerator.random().nextLong());
      Accel.setSeed(42, true, false);
      assertArrayEquals(weights, initialWeights());
      assertEquals(draw, Accelerator.random().nextLong());
    }
  }

  @Test
  void getStateDictNamesEveryTensorInOrder() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build(); Model model = Model.fromJson(ModelTest.LINEAR)) {
      java.util.LinkedHashMap<String, Tensor> state = acc.getStateDict(model);
      assertEquals(java.util.List.of("0.weight", "0.bias"), new java.util.ArrayList<>(state.keySet()));
      assertArrayEquals(new long[] {3, 4}, state.get("0.weight").shape());
      state.values().forEach(Tensor::close);
    }
  }

  @Test
  void processFactsReadAsGetters() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      assertTrue(acc.isLastProcess());
      assertTrue(acc.isLocalMainProcess());
      assertEquals(0, acc.localProcessIndex());
      assertTrue(acc.syncGradients());
      assertEquals(".", acc.projectDir());
      assertEquals(java.nio.file.Paths.get(".", "logs").toString(), acc.loggingDir());
    }
    try (Accelerator acc = Accelerator.builder().cpu(true).projectDir("/tmp/p").build()) {
      assertEquals("/tmp/p", acc.projectDir());
      assertEquals("/tmp/p/logs", acc.loggingDir());
    }
    Accelerator closed = Accelerator.builder().cpu(true).build();
    closed.close();
    assertThrows(IllegalStateException.class, () -> closed.setSeed(1, true, true));
  }
}
