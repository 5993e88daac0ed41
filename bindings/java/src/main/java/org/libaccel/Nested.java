package org.libaccel;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Nested Lists and Maps of Tensors for the collectives (Accelerate's operations take nested
 * lists, tuples and dicts). The C ABI takes a flat list, so the structure is flattened here and
 * rebuilt around the results. Maps with Comparable keys are visited in key order, so every
 * process lists its tensors alike whatever the map's own iteration order (Map.of randomizes it).
 */
final class Nested {
  private Nested() {}

  static Object apply(Object data, String what, Function<TensorList, Batch> op) {
    List<Tensor> leaves = new ArrayList<>();
    flatten(data, leaves, what);
    TensorList list = new TensorList();
    try {
      for (Tensor t : leaves) list.add(t);
      Batch batch = op.apply(list);
      List<Tensor> results = new ArrayList<>();
      try {
        for (int i = 0; i < batch.size(); ++i) results.add(batch.take(i));
      } catch (RuntimeException e) {
        for (Tensor t : results) t.close();
        throw e;
      } finally {
        batch.delete();
      }
      return rebuild(data, results.iterator());
    } finally {
      list.delete();
    }
  }

  private static void flatten(Object data, List<Tensor> leaves, String what) {
    if (data instanceof Tensor t) {
      leaves.add(t);
    } else if (data instanceof List<?> items) {
      for (Object item : items) flatten(item, leaves, what);
    } else if (data instanceof Map<?, ?> map) {
      for (Map.Entry<?, ?> e : inOrder(map).entrySet()) flatten(e.getValue(), leaves, what);
    } else {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
          what + ": unsupported type " + (data == null ? "null" : data.getClass().getName())
              + "; pass a Tensor or Lists and Maps of them");
    }
  }

  private static Object rebuild(Object data, Iterator<Tensor> results) {
    if (data instanceof Tensor) return results.next();
    if (data instanceof List<?> items) {
      List<Object> out = new ArrayList<>(items.size());
      for (Object item : items) out.add(rebuild(item, results));
      return out;
    }
    Map<Object, Object> out = new LinkedHashMap<>();
    for (Map.Entry<?, ?> e : inOrder((Map<?, ?>) data).entrySet()) out.put(e.getKey(), rebuild(e.getValue(), results));
    return out;
  }

  @SuppressWarnings("unchecked")
  private static Map<?, ?> inOrder(Map<?, ?> map) {
    for (Object key : map.keySet()) {
      if (!(key instanceof Comparable)) return map;
    }
    return new TreeMap<>((Map<Comparable<Object>, Object>) map);
  }

  /** Which items this process takes: {start, end, paddedLength} (accel_accelerator_split_range). */
  static long[] range(Accelerator acc, long n, boolean applyPadding) {
    Int64Vector v = acc.splitRange(n, applyPadding);
    try {
      return new long[] {v.get(0), v.get(1), v.get(2)};
    } finally {
      v.delete();
    }
  }

  static <T> List<T> split(List<T> items, long[] range) {
    List<T> out = new ArrayList<>(items.subList((int) range[0], (int) range[1]));
    while (out.size() < range[2]) out.add(items.get(items.size() - 1));
    return out;
  }

  static String encode(Object value) {
    try (ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(value);
      out.flush();
      return Base64.getEncoder().encodeToString(bytes.toByteArray());
    } catch (IOException e) {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(), "cannot serialize: " + e);
    }
  }

  /** Deserializes what a peer process sent: the peers are trusted, as with Python's pickle. */
  @SuppressWarnings("unchecked")
  static <T extends Serializable> List<T> decodeList(String text, int rank) {
    try (ObjectInputStream in =
        new ObjectInputStream(new ByteArrayInputStream(Base64.getDecoder().decode(text)))) {
      return (List<T>) in.readObject();
    } catch (IOException | ClassNotFoundException | ClassCastException e) {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
          "process " + rank + " sent a list that cannot be read: " + e);
    }
  }
}
