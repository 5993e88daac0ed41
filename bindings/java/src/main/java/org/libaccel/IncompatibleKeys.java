package org.libaccel;

import java.util.List;

/**
 * What {@link Model#loadStateDict} returns, as PyTorch's load_state_dict does: the model's names
 * the map lacked (in the model's order) and the map's names the model lacks (sorted). Both are
 * empty after a strict load, where any mismatch throws. The lists are unmodifiable.
 */
public record IncompatibleKeys(List<String> missingKeys, List<String> unexpectedKeys) {
  public IncompatibleKeys {
    missingKeys = List.copyOf(missingKeys);
    unexpectedKeys = List.copyOf(unexpectedKeys);
  }

  /** True when every name matched (PyTorch prints "All keys matched successfully"). */
  public boolean allMatched() {
    return missingKeys.isEmpty() && unexpectedKeys.isEmpty();
  }
}
