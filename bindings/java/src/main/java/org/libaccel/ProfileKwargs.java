package org.libaccel;

/**
 * Accelerate's ProfileKwargs for {@code accelerator.profile(kwargs)}: where the Chrome trace goes
 * (outputTraceDir/trace_&lt;rank&gt;.json) and what it records besides each operator: recordShapes
 * (each operator's "Input Dims"), profileMemory (CPU allocations as "[memory]" events) and
 * withFlops (the "flops" LibTorch counts for matmuls and convolutions).
 */
public final class ProfileKwargs {
  private String outputTraceDir;
  private boolean recordShapes;
  private boolean profileMemory;
  private boolean withFlops;

  public ProfileKwargs outputTraceDir(String directory) {
    outputTraceDir = directory;
    return this;
  }

  public ProfileKwargs recordShapes(boolean on) {
    recordShapes = on;
    return this;
  }

  public ProfileKwargs profileMemory(boolean on) {
    profileMemory = on;
    return this;
  }

  public ProfileKwargs withFlops(boolean on) {
    withFlops = on;
    return this;
  }

  public String outputTraceDir() { return outputTraceDir; }

  Profile begin(Accelerator accelerator) {
    if (outputTraceDir == null) throw new IllegalArgumentException("ProfileKwargs.outputTraceDir is not set");
    return Profile.beginWith(accelerator, outputTraceDir, recordShapes, profileMemory, withFlops);
  }
}
