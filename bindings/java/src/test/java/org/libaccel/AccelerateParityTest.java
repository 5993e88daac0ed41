package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Accelerate parity of accumulation options, checkpoints and model files (issue 17, items 14-15, 18-19). */
class AccelerateParityTest {
  @Test
  void saveStateReturnsTheFolderAndNeverReplacesAnAutomaticCheckpoint(@TempDir Path dir) {
    try (Accelerator acc = Accelerator.builder().cpu(true).projectDir(dir.toString()).automaticCheckpointNaming(true)
                               .syncEachBatch(true).adjustScheduler(true).build();
         Model model = Model.fromJson(ModelTest.LINEAR)) {
      acc.prepare(model);
      assertEquals(dir.resolve("checkpoints").resolve("checkpoint_0").toString(), acc.saveState());
      acc.setSaveIteration(0);  // Accelerate's project_configuration.iteration = 0
      AccelException e = assertThrows(AccelException.class, () -> acc.saveState());
      assertEquals(Status.ERR_INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getMessage().contains("checkpoint_0 (iteration 0) already exists"), e.getMessage());
      acc.setSaveIteration(4);
      assertEquals(dir.resolve("checkpoints").resolve("checkpoint_4").toString(), acc.saveState());
      assertEquals(5, acc.saveIteration());
      assertThrows(AccelException.class, () -> acc.setSaveIteration(-1));

      // clear() (free_memory): the accelerator no longer saves the model.
      acc.clear();
      String after = dir.resolve("after").toString();
      assertEquals(after, acc.saveState(after));
      assertFalse(Files.exists(dir.resolve("after").resolve("model.safetensors")));
    }
  }

  @Test
  void loadCheckpointInModelIsNotStrictByDefault(@TempDir Path dir) {
    String bigger = "[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 3},"
        + " {\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 2}]";
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Model small = Model.fromJson(ModelTest.LINEAR);
         Model big = Model.fromJson(bigger)) {
      acc.saveModel(small, dir.toString());
      String file = dir.resolve("model.safetensors").toString();
      long[] counts = acc.loadCheckpointInModel(big, file);  // Accelerate loads with strict=False
      assertEquals(2L, counts[0]);
      assertEquals(0L, counts[1]);
      assertThrows(AccelException.class, () -> acc.loadCheckpointInModel(big, file, true));
    }
  }
}
