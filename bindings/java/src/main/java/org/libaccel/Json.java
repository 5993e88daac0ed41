package org.libaccel;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The configuration maps of initTrackers as JSON, both ways: written for the C API, and read
 * back for a custom Tracker's start. The jar has no dependencies (the JDK has no JSON), and
 * these maps are its only JSON (values: null, Boolean, Number, CharSequence, Map with string
 * keys, Iterable, arrays of them as lists; read back as Boolean, Long or Double, String,
 * LinkedHashMap and ArrayList).
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

  /** Parses one JSON value; "" reads as an empty map (no configuration). */
  static Object read(String text) {
    if (text == null || text.trim().isEmpty()) return new LinkedHashMap<String, Object>();
    Reader reader = new Reader(text);
    Object value = reader.value();
    reader.skipSpace();
    if (reader.at < text.length()) throw reader.error("trailing characters");
    return value;
  }

  private static final class Reader {
    final String s;
    int at;

    Reader(String s) {
      this.s = s;
    }

    AccelException error(String what) {
      return new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
          "configuration JSON: " + what + " at character " + at);
    }

    void skipSpace() {
      while (at < s.length() && Character.isWhitespace(s.charAt(at))) ++at;
    }

    boolean take(char c) {
      skipSpace();
      if (at < s.length() && s.charAt(at) == c) {
        ++at;
        return true;
      }
      return false;
    }

    Object value() {
      skipSpace();
      if (at >= s.length()) throw error("unexpected end");
      char c = s.charAt(at);
      if (c == '{') {
        ++at;
        Map<String, Object> map = new LinkedHashMap<>();
        if (take('}')) return map;
        do {
          skipSpace();
          String key = text();
          if (!take(':')) throw error("expected ':'");
          map.put(key, value());
        } while (take(','));
        if (!take('}')) throw error("expected '}'");
        return map;
      }
      if (c == '[') {
        ++at;
        List<Object> list = new ArrayList<>();
        if (take(']')) return list;
        do {
          list.add(value());
        } while (take(','));
        if (!take(']')) throw error("expected ']'");
        return list;
      }
      if (c == '"') return text();
      for (String word : new String[] {"true", "false", "null"}) {
        if (s.startsWith(word, at)) {
          at += word.length();
          return word.equals("null") ? null : Boolean.valueOf(word);
        }
      }
      int start = at;
      while (at < s.length() && "+-0123456789.eE".indexOf(s.charAt(at)) >= 0) ++at;
      String number = s.substring(start, at);
      try {
        return number.matches("-?\\d+") ? (Object) Long.valueOf(number) : (Object) Double.valueOf(number);
      } catch (NumberFormatException e) {
        at = start;
        throw error("not a JSON value");
      }
    }

    String text() {
      if (at >= s.length() || s.charAt(at) != '"') throw error("expected a string");
      StringBuilder out = new StringBuilder();
      for (++at; at < s.length(); ++at) {
        char c = s.charAt(at);
        if (c == '"') {
          ++at;
          return out.toString();
        }
        if (c != '\\') {
          out.append(c);
          continue;
        }
        if (++at >= s.length()) break;
        char e = s.charAt(at);
        switch (e) {
          case 'n': out.append('\n'); break;
          case 't': out.append('\t'); break;
          case 'r': out.append('\r'); break;
          case 'b': out.append('\b'); break;
          case 'f': out.append('\f'); break;
          case 'u':
            if (at + 4 >= s.length()) throw error("short \\u escape");
            out.append((char) Integer.parseInt(s.substring(at + 1, at + 5), 16));
            at += 4;
            break;
          default: out.append(e);
        }
      }
      throw error("unterminated string");
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
