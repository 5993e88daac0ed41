package org.libaccel;

import java.util.List;
import java.util.Map;

/**
 * Accelerate's save-state pre-hook: runs before saveState writes, with the prepared models, their
 * state dicts (closed after the hook returns) and the checkpoint directory.
 */
@FunctionalInterface
public interface SaveStateHook {
  void run(List<Model> models, List<Map<String, Tensor>> weights, String directory) throws Exception;
}
