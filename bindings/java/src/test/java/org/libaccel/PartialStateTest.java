package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Accelerate's PartialState on one process; tests/dist/dist_partial_state.c runs it on several. */
class PartialStateTest {
  @Test
  void describesTheProcessAndSharesWorkBesideAnAccelerator() {
    try (PartialState state = new PartialState(true)) {
      assertEquals(0, state.processIndex());
      assertEquals(0, state.localProcessIndex());
      assertEquals(1, state.numProcesses());
      assertTrue(state.isMainProcess() && state.isLocalMainProcess() && state.isLastProcess());
      assertFalse(state.useDistributed());
      assertEquals(DistributedType.DISTRIBUTED_NO, state.distributedType());
      assertEquals("cpu", state.device());
      assertEquals(List.of(1, 2, 3), state.splitBetweenProcesses(List.of(1, 2, 3), true));
      List<String> ran = new ArrayList<>();
      state.mainProcessFirst(() -> ran.add("body"));
      assertEquals(List.of("body"), ran);
      try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
        assertEquals(1, acc.numProcesses());
        state.waitForEveryone();
      }
    }
  }

  @Test
  void aBadTimeoutIsNamedAndAClosedStateRefusesUse() {
    AccelException bad = assertThrows(AccelException.class, () -> new PartialState(true, 0));
    assertTrue(bad.getMessage().contains("timeout_ms"), bad.getMessage());
    PartialState state = new PartialState(true);
    state.close();
    state.close();  // twice is fine
    assertThrows(IllegalStateException.class, state::processIndex);
  }
}
