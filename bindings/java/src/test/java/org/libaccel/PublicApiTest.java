package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.WildcardType;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * No SWIG internals in what a user of org.libaccel can see or call: no public class that is a
 * SWIG helper (SWIGTYPE_p_*, std::vector proxies, the JNI class, directors), and no public or
 * protected member of a public class that takes or returns a non-public type, or is SWIG's
 * delete() or getCPtr()/swigCPtr. Every public class with native memory is AutoCloseable.
 */
class PublicApiTest {
  static List<Class<?>> publicClasses() throws Exception {
    File jar = new File(Accelerator.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<Class<?>> out = new ArrayList<>();
    try (JarFile file = new JarFile(jar)) {
      for (Enumeration<JarEntry> e = file.entries(); e.hasMoreElements();) {
        String name = e.nextElement().getName();
        if (!name.startsWith("org/libaccel/") || !name.endsWith(".class")) continue;
        Class<?> c = Class.forName(name.substring(0, name.length() - 6).replace('/', '.'), false,
                                   PublicApiTest.class.getClassLoader());
        if (isVisible(c)) out.add(c);
      }
    }
    return out;
  }

  static boolean isVisible(Class<?> c) {
    for (Class<?> k = c; k != null; k = k.getEnclosingClass()) {
      if (!Modifier.isPublic(k.getModifiers())) return false;
    }
    return true;
  }

  static void checkType(Type t, String where, List<String> leaks) {
    if (t instanceof Class) {
      Class<?> c = (Class<?>) t;
      while (c.isArray()) c = c.getComponentType();
      if (c.getName().startsWith("org.libaccel.") && !isVisible(c)) leaks.add(where + " uses " + c.getName());
    } else if (t instanceof ParameterizedType) {
      checkType(((ParameterizedType) t).getRawType(), where, leaks);
      for (Type a : ((ParameterizedType) t).getActualTypeArguments()) checkType(a, where, leaks);
    } else if (t instanceof GenericArrayType) {
      checkType(((GenericArrayType) t).getGenericComponentType(), where, leaks);
    } else if (t instanceof WildcardType) {
      for (Type b : ((WildcardType) t).getUpperBounds()) checkType(b, where, leaks);
      for (Type b : ((WildcardType) t).getLowerBounds()) checkType(b, where, leaks);
    }
  }

  static boolean visibleMember(int modifiers, Class<?> owner) {
    return Modifier.isPublic(modifiers) || (Modifier.isProtected(modifiers) && !Modifier.isFinal(owner.getModifiers()));
  }

  @Test
  void noSwigInternalsInThePublicApi() throws Exception {
    List<String> leaks = new ArrayList<>();
    List<Class<?>> classes = publicClasses();
    assertTrue(classes.contains(Accelerator.class) && classes.contains(Tensor.class), classes.toString());
    for (Class<?> c : classes) {
      String n = c.getSimpleName();
      if (n.startsWith("SWIGTYPE_") || n.endsWith("Vector") || n.endsWith("JNI") || n.endsWith("Bridge")) {
        leaks.add("public class " + c.getName());
      }
      for (Method m : c.getDeclaredMethods()) {
        if (!visibleMember(m.getModifiers(), c) || m.isSynthetic()) continue;
        String where = c.getSimpleName() + "." + m.getName();
        // Enums keep SWIG's swigValue()/swigToEnum() (the C value of a constant).
        boolean enumValue = c.isEnum() && (m.getName().equals("swigValue") || m.getName().equals("swigToEnum"));
        if (m.getName().equals("delete") || m.getName().equals("getCPtr") || (m.getName().startsWith("swig") && !enumValue)) {
          leaks.add(where + "() is SWIG's");
        }
        checkType(m.getGenericReturnType(), where, leaks);
        checkExecutable(m, where, leaks);
      }
      for (Constructor<?> k : c.getDeclaredConstructors()) {
        if (visibleMember(k.getModifiers(), c)) checkExecutable(k, c.getSimpleName() + ".<init>", leaks);
      }
      for (Field f : c.getDeclaredFields()) {
        if (!visibleMember(f.getModifiers(), c) || f.isSynthetic()) continue;
        if (f.getName().startsWith("swig")) leaks.add(c.getSimpleName() + "." + f.getName() + " is SWIG's");
        checkType(f.getGenericType(), c.getSimpleName() + "." + f.getName(), leaks);
      }
    }
    assertEquals(List.of(), leaks);
  }

  static void checkExecutable(Executable e, String where, List<String> leaks) {
    for (Type p : e.getGenericParameterTypes()) checkType(p, where, leaks);
  }

  @Test
  void everyNativeObjectIsAutoCloseable() throws Exception {
    List<String> missing = new ArrayList<>();
    for (Class<?> c : publicClasses()) {
      boolean holdsNative = false;
      for (Field f : c.getDeclaredFields()) holdsNative |= f.getName().equals("swigCPtr");
      if (holdsNative && !AutoCloseable.class.isAssignableFrom(c)) missing.add(c.getSimpleName());
    }
    assertEquals(List.of(), missing);
  }
}
