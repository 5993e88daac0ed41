package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** find_executable_batch_size from Java, with Accelerate 1.x's expected batch sizes. */
class BatchSizesTest {
  static final List<Long> ACCELERATE_SIZES = Arrays.asList(128L, 115L, 103L, 92L, 82L, 73L, 65L, 58L, 52L, 46L,
      41L, 36L, 32L, 28L, 25L, 22L, 19L, 17L, 15L, 13L, 11L, 9L, 8L);

  @Test
  void shrinksByATenthOnResourceErrors() {
    List<Long> tried = new ArrayList<>();
    long found = BatchSizes.findExecutable(128, batchSize -> {
      tried.add(batchSize);
      if (batchSize != 8) throw new AccelException(Status.ERR_RESOURCE, "CPU out of memory.");
      return batchSize;
    });
    assertEquals(8, found);
    assertEquals(ACCELERATE_SIZES, tried);
  }

  @Test
  void reachesZeroOrPassesOtherErrorsOn() {
    AccelException zero = assertThrows(AccelException.class, () -> BatchSizes.findExecutable(128, batchSize -> {
      throw new AccelException(Status.ERR_RESOURCE, "out of memory");
    }));
    assertEquals("No executable batch size found, reached zero.", zero.getMessage());
    List<Long> tried = new ArrayList<>();
    assertThrows(IllegalStateException.class, () -> BatchSizes.findExecutable(16, batchSize -> {
      tried.add(batchSize);
      throw new IllegalStateException("Oops, we had an error!");
    }));
    assertEquals(List.of(16L), tried);
  }
}
