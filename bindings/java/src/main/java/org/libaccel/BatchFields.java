package org.libaccel;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tensors a Batch has handed out with get(i): each field is taken from the native batch
 * once, and the batch owns it, closing it in its own close().
 */
final class BatchFields {
  private Tensor[] taken;

  Tensor get(Batch batch, int i) {
    if (taken == null) taken = new Tensor[batch.size()];
    if (i < 0 || i >= taken.length) {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
          "batch index " + i + " out of range [0, " + taken.length + ")");
    }
    if (taken[i] == null) taken[i] = batch.take(i);
    return taken[i];
  }

  Map<String, Tensor> asMap(Batch batch, List<String> names) {
    if (names.size() != batch.size()) {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
          names.size() + " names for a batch of " + batch.size() + " fields");
    }
    Map<String, Tensor> map = new LinkedHashMap<>();
    for (int i = 0; i < names.size(); ++i) map.put(names.get(i), batch.get(i));
    return map;
  }

  /** Closes the tensors handed out so far. */
  void close() {
    if (taken != null) {
      for (Tensor t : taken) {
        if (t != null) t.close();
      }
      taken = null;
    }
  }
}
