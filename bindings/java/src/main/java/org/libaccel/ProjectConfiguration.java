package org.libaccel;

/**
 * Accelerate's ProjectConfiguration: where checkpoints and logs go (loggingDir unset:
 * projectDir/logs), automatic checkpoint naming, how many automatic checkpoints to keep, the number
 * of the next one (iteration) and saving on each node.
 */
public final class ProjectConfiguration {
  private String projectDir, loggingDir;
  private boolean automaticCheckpointNaming, saveOnEachNode;
  private long totalLimit, iteration;

  public ProjectConfiguration projectDir(String dir) {
    projectDir = dir;
    return this;
  }

  public ProjectConfiguration loggingDir(String dir) {
    loggingDir = dir;
    return this;
  }

  public ProjectConfiguration automaticCheckpointNaming(boolean automatic) {
    automaticCheckpointNaming = automatic;
    return this;
  }

  /** Automatic checkpoints kept (oldest removed); 0: all. */
  public ProjectConfiguration totalLimit(long limit) {
    totalLimit = limit;
    return this;
  }

  /** The number of the next automatic checkpoint. */
  public ProjectConfiguration iteration(long next) {
    if (next < 0) throw new IllegalArgumentException("iteration must be >= 0, got " + next);
    iteration = next;
    return this;
  }

  public ProjectConfiguration saveOnEachNode(boolean onEachNode) {
    saveOnEachNode = onEachNode;
    return this;
  }

  long iteration() { return iteration; }

  void applyTo(AcceleratorOptions o) {
    if (projectDir != null) o.setProjectDir(projectDir);
    if (loggingDir != null) o.setLoggingDir(loggingDir);
    o.setAutomaticCheckpointNaming(automaticCheckpointNaming);
    o.setTotalLimit(totalLimit);
    o.setSaveOnEachNode(saveOnEachNode);
  }
}
