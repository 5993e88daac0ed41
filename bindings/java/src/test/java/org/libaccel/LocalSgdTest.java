package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Accelerate's LocalSGD on one process (off, as Accelerate); several: bindings/python/tests/test_distributed.py. */
class LocalSgdTest {
  static final String LINEAR = "[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 3}]";

  @Test
  void offOnOneProcessAndRefusesBadArguments() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build(); Model model = Model.fromJson(LINEAR);
         Model unprepared = Model.fromJson(LINEAR)) {
      acc.prepareModel(model);
      try (LocalSGD localSgd = new LocalSGD(acc, model, 2)) {
        assertFalse(localSgd.enabled());
        localSgd.step();
        assertEquals(1, localSgd.numSteps());
      }
      assertThrows(AccelException.class, () -> new LocalSGD(acc, model, 0));
      AccelException bad = assertThrows(AccelException.class, () -> acc.averageParameters(unprepared));
      assertTrue(bad.getMessage().contains("not prepared"), bad.getMessage());
    }
  }
}
