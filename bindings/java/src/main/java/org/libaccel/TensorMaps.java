package org.libaccel;

import java.util.LinkedHashMap;
import java.util.Map;

/** Java maps of named tensors to and from the native TensorMap. */
final class TensorMaps {
  private TensorMaps() {}

  /** A map holding the tensors of entries (references, not copies). */
  static TensorMap of(Map<String, Tensor> entries) {
    TensorMap map = new TensorMap();
    try {
      for (Map.Entry<String, Tensor> e : entries.entrySet()) map.set(e.getKey(), e.getValue());
    } catch (RuntimeException e) {
      map.delete();
      throw e;
    }
    return map;
  }

  /** Every entry of map as a new Tensor handle, in order; frees map. */
  static LinkedHashMap<String, Tensor> drain(TensorMap map) {
    LinkedHashMap<String, Tensor> out = new LinkedHashMap<>();
    try {
      long n = map.count();
      for (long i = 0; i < n; ++i) {
        String name = map.nameAt(i);
        out.put(name, map.get(name));
      }
      return out;
    } catch (RuntimeException e) {
      for (Tensor t : out.values()) t.close();
      throw e;
    } finally {
      map.delete();
    }
  }
}
