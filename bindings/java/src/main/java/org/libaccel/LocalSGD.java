package org.libaccel;

/**
 * Accelerate's LocalSGD: inside the block the model's backward passes do not synchronise
 * gradients, and every localSgdSteps calls to {@link #step()} (and on close) each parameter
 * is replaced by its mean across processes. Disabled on one process.
 *
 * <pre>{@code
 * try (LocalSGD localSgd = new LocalSGD(acc, model, 8)) {
 *   for (Batch batch : loader) { ... optimizer.step(); localSgd.step(); }
 * }
 * }</pre>
 */
public final class LocalSGD implements AutoCloseable {
  private final Accelerator accelerator;
  private final Model model;
  private final long localSgdSteps;
  private final boolean enabled;
  private final Scope noSync;
  private long numSteps;

  public LocalSGD(Accelerator accelerator, Model model, long localSgdSteps) {
    this(accelerator, model, localSgdSteps, true);
  }

  public LocalSGD(Accelerator accelerator, Model model, long localSgdSteps, boolean enabled) {
    if (localSgdSteps < 1) {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
          "LocalSGD localSgdSteps must be positive, got " + localSgdSteps);
    }
    this.accelerator = accelerator;
    this.model = model;
    this.localSgdSteps = localSgdSteps;
    this.enabled = enabled && accelerator.numProcesses() > 1;
    this.noSync = this.enabled ? accelerator.noSync(model) : null;
  }

  /** Counts a step; every localSgdSteps steps the parameters are averaged (collective then). */
  public void step() {
    ++numSteps;
    if (enabled && numSteps % localSgdSteps == 0) accelerator.averageParameters(model);
  }

  public long numSteps() {
    return numSteps;
  }

  public boolean enabled() {
    return enabled;
  }

  /** Averages the parameters once more and ends the no-sync block. Collective when enabled. */
  @Override
  public void close() {
    if (!enabled) return;
    try {
      accelerator.averageParameters(model);
    } finally {
      noSync.close();
    }
  }
}
