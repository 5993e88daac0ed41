package org.libaccel;

/**
 * Accelerate's ProfileKwargs for {@code accelerator.profile(kwargs)}: where the Chrome trace goes
 * (outputTraceDir/trace_&lt;rank&gt;.json) and what it records besides each operator: recordShapes
 * (each operator's "Input Dims"), profileMemory (CPU allocations as "[memory]" events) and
 * withFlops (the "flops" LibTorch counts for matmuls and convolutions); for operators a TorchScript
 * model runs, withStack (the model source lines that called them, "Call stack") and withModules
 * (the submodules they ran in, "Module Hierarchy"), as torch.profiler writes them. schedule(...) is
 * torch.profiler.schedule's (Accelerate's schedule_option), counted by {@link Profile#step()};
 * onTraceReady runs when a cycle's trace is written.
 */
public final class ProfileKwargs {
  private String outputTraceDir;
  private boolean recordShapes;
  private boolean profileMemory;
  private boolean withFlops;
  private boolean withStack;
  private boolean withModules;
  private long[] schedule;
  private java.util.function.Consumer<Profile> onTraceReady;

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

  public ProfileKwargs withStack(boolean on) {
    withStack = on;
    return this;
  }

  public ProfileKwargs withModules(boolean on) {
    withModules = on;
    return this;
  }

  /**
   * torch.profiler.schedule(wait, warmup, active, repeat, skip_first): after skipFirst steps,
   * cycles of wait + warmup unrecorded steps (LibTorch's legacy profiler needs no warm-up) and
   * active recorded ones, repeat times (0: until the profile ends).
   */
  public ProfileKwargs schedule(long wait, long warmup, long active, long repeat, long skipFirst) {
    schedule = new long[] {wait, warmup, active, repeat, skipFirst};
    return this;
  }

  /** Called with the profile when a scheduled cycle's trace was written. */
  public ProfileKwargs onTraceReady(java.util.function.Consumer<Profile> callback) {
    onTraceReady = callback;
    return this;
  }

  public String outputTraceDir() { return outputTraceDir; }

  Profile begin(Accelerator accelerator) {
    if (outputTraceDir == null) throw new IllegalArgumentException("ProfileKwargs.outputTraceDir is not set");
    Profile profile = schedule == null
        ? Profile.beginWith(accelerator, outputTraceDir, recordShapes, profileMemory, withFlops, withStack, withModules)
        : Profile.beginScheduled(accelerator, outputTraceDir, recordShapes, profileMemory, withFlops, withStack,
            withModules, schedule[0], schedule[1], schedule[2], schedule[3], schedule[4]);
    return profile.withTrace(outputTraceDir + "/trace_" + accelerator.processIndex() + ".json", onTraceReady);
  }
}
