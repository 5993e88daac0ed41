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

  static void assertArrayEqualsShape(long[] expected, long[] actual) {
    assertEquals(Arrays.toString(expected), Arrays.toString(actual));
  }
}
