package org.libaccel;

import java.util.Iterator;
import java.util.Map;

/**
 * Writes the configuration maps of initTrackers as the JSON the C API takes: the jar has no
 * dependencies, and this is its only JSON (values: null, Boolean, Number, CharSequence, Map
 * with string keys, Iterable, arrays of them as lists).
 */
final class Json {
  private Json() {}

  static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out);
    return out.toString();
  }

  private static void write(Object value, StringBuilder out) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof Boolean) {
      out.append(value);
    } else if (value instanceof Number) {
      double d = ((Number) value).doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(), "JSON has no " + value);
      }
      out.append(value);
    } else if (value instanceof CharSequence) {
      string(value.toString(), out);
    } else if (value instanceof Map) {
      out.append('{');
      Iterator<? extends Map.Entry<?, ?>> it = ((Map<?, ?>) value).entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<?, ?> e = it.next();
        if (!(e.getKey() instanceof String)) {
          throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(), "configuration key " + e.getKey() + " is not a String");
        }
        string((String) e.getKey(), out);
        out.append(':');
        write(e.getValue(), out);
        if (it.hasNext()) out.append(',');
      }
      out.append('}');
    } else if (value instanceof Iterable || value instanceof Object[]) {
      Iterable<?> items = value instanceof Iterable ? (Iterable<?>) value : java.util.Arrays.asList((Object[]) value);
      out.append('[');
      Iterator<?> it = items.iterator();
      while (it.hasNext()) {
        write(it.next(), out);
        if (it.hasNext()) out.append(',');
      }
      out.append(']');
    } else {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
          "a configuration value of type " + value.getClass().getName() + " has no JSON form");
    }
  }

  private static void string(String s, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < s.length(); ++i) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    out.append('"');
  }
}
