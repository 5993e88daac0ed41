package org.libaccel;

import java.util.List;

/** Accelerate's load-state pre-hook: runs before loadState reads, with the prepared models and the directory. */
@FunctionalInterface
public interface LoadStateHook {
  void run(List<Model> models, String directory) throws Exception;
}
