package org.libaccel;

import java.util.function.LongFunction;

/** Accelerate's find_executable_batch_size, for Java: {@code BatchSizes.findExecutable(128, bs -> train(bs))}. */
public final class BatchSizes {
  private BatchSizes() {}

  /**
   * Calls function(batchSize) from startingBatchSize on; after an out-of-memory failure (an
   * AccelException with status ERR_RESOURCE, which libaccel's calls throw when CUDA or host memory
   * runs out, or Java's OutOfMemoryError) it tries again with (long) (batchSize * 0.9), as
   * Accelerate 1.x does (128, 115, 103, ...). Returns what function returned. Other exceptions
   * propagate at once; reaching 0 throws AccelException (ERR_RESOURCE) "No executable batch size
   * found, reached zero.".
   */
  public static <T> T findExecutable(long startingBatchSize, LongFunction<T> function) {
    if (startingBatchSize < 0) {
      throw new IllegalArgumentException("startingBatchSize must be >= 0, got " + startingBatchSize);
    }
    long batchSize = startingBatchSize;
    while (true) {
      if (batchSize == 0) {
        throw new AccelException(Status.ERR_RESOURCE, "No executable batch size found, reached zero.");
      }
      try {
        return function.apply(batchSize);
      } catch (AccelException e) {
        if (e.getStatus() != Status.ERR_RESOURCE) throw e;
      } catch (OutOfMemoryError e) {
        // The Java heap: retry smaller, as for native memory.
      }
      batchSize = (long) (batchSize * 0.9);
    }
  }
}
