package org.libaccel;

import java.io.File;

/**
 * Loads libaccel_jni.so once, before the first native call: from the file or directory in the
 * system property {@code org.libaccel.library.path} when it is set, else with
 * {@code System.loadLibrary("accel_jni")} (java.library.path).
 */
final class NativeLibrary {
  static final String PATH_PROPERTY = "org.libaccel.library.path";
  private static boolean loaded;

  private NativeLibrary() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty(PATH_PROPERTY);
    if (path != null && !path.isEmpty()) {
      File file = new File(path);
      if (file.isDirectory()) file = new File(file, System.mapLibraryName("accel_jni"));
      System.load(file.getAbsolutePath());
    } else {
      System.loadLibrary("accel_jni");
    }
    loaded = true;
  }
}
