package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Collectives on nested Lists and Maps, split_between_processes and objects, in one process. */
class CollectivesTest {
  private static void closeAll(Object data) {
    if (data instanceof Tensor t) t.close();
    else if (data instanceof List<?> l) l.forEach(CollectivesTest::closeAll);
    else if (data instanceof Map<?, ?> m) m.values().forEach(CollectivesTest::closeAll);
  }

  @Test
  void nestedStructuresComeBackWithTheirShape() {
    try (Accelerator acc = Accelerator.builder().cpu(true).broadcastBuffers(false).build();
        Tensor x = Tensor.of(new float[] {1, 3}, 1, 2)) {
      Object data = Map.of("b", List.of(x, Map.of("c", x)), "a", x);
      @SuppressWarnings("unchecked")
      Map<String, Object> reduced = (Map<String, Object>) acc.reduceNested(data, ReduceOp.REDUCE_NONE, 0.5);
      assertEquals(List.of("a", "b"), new ArrayList<>(reduced.keySet()));  // sorted keys
      @SuppressWarnings("unchecked")
      Map<String, Object> inner = (Map<String, Object>) ((List<?>) reduced.get("b")).get(1);
      assertArrayEquals(new float[] {0.5f, 1.5f}, ((Tensor) inner.get("c")).toFloatArray());
      closeAll(reduced);
      for (Object out : List.of(acc.gatherNested(List.of(x, x)), acc.gatherForMetricsNested(List.of(x)),
               acc.broadcastNested(List.of(x), 0), acc.padAcrossProcessesNested(List.of(x), 0, 0, false))) {
        assertArrayEquals(new float[] {1, 3}, ((Tensor) ((List<?>) out).get(0)).toFloatArray());
        closeAll(out);
      }
      AccelException wrong = assertThrows(AccelException.class, () -> acc.gatherNested(List.of(x, "text")));
      assertTrue(wrong.getMessage().contains("java.lang.String"), wrong.getMessage());
      AccelException nan = assertThrows(AccelException.class,
          () -> acc.reduceNested(x, ReduceOp.REDUCE_SUM, Double.NaN));
      assertTrue(nan.getMessage().contains("scale"), nan.getMessage());
    }
  }

  @Test
  void splitAndObjectsInOneProcess() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      assertEquals(List.of("a", "b", "c"), acc.splitBetweenProcesses(List.of("a", "b", "c"), true));
      assertEquals(Map.of("x", List.of(1, 2)), acc.splitBetweenProcesses(Map.of("x", List.of(1, 2)), false));
      assertThrows(AccelException.class,
          () -> acc.splitBetweenProcesses(Map.of("x", List.of(1), "y", List.of(1, 2)), false));
      assertEquals(List.of("p", "q"), acc.gatherForMetricsObjects(List.of("p", "q")));
      List<String> objects = new ArrayList<>(List.of("one", "two"));
      assertSame(objects, acc.broadcastObjectList(objects, 0));
      assertEquals(List.of("one", "two"), objects);
    }
  }
}
