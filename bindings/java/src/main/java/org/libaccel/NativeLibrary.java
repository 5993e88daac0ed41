package org.libaccel;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads libaccel_jni.so once, before the first native call, from the first of:
 * <ol>
 *   <li>the file or directory in the system property {@code org.libaccel.library.path};
 *   <li>a directory of {@code java.library.path} that holds it (Debian's libaccel-java puts it in
 *       /usr/lib/&lt;triplet&gt;/jni, which Debian's JDK searches);
 *   <li>the copy bundled in the Maven jar under {@code META-INF/native/<os>-<arch>/}, with the
 *       libaccel.so.0 it links to: both are extracted to a new temporary directory, loaded, and
 *       deleted at once (the process keeps its mapping), so nothing is left behind.
 * </ol>
 * A failure is an UnsatisfiedLinkError that says what was tried and what to install or set.
 */
final class NativeLibrary {
  static final String PATH_PROPERTY = "org.libaccel.library.path";
  private static final String NAME = "accel_jni";
  /* The bundled files, in load order: libaccel_jni.so finds libaccel.so.0 through its
     RUNPATH $ORIGIN, so loading the JNI library alone would do; loading libaccel first
     makes a missing LibTorch show up under its own name. */
  private static final String[] BUNDLED = {"libaccel.so.0", "libaccel_jni.so"};
  private static boolean loaded;

  private NativeLibrary() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty(PATH_PROPERTY);
    if (path != null && !path.isEmpty()) {
      File file = new File(path);
      if (file.isDirectory()) file = new File(file, System.mapLibraryName(NAME));
      try {
        System.load(file.getAbsolutePath());
      } catch (UnsatisfiedLinkError e) {
        throw failure("-D" + PATH_PROPERTY + "=" + path, e);
      }
    } else if (onLibraryPath()) {
      try {
        System.loadLibrary(NAME);
      } catch (UnsatisfiedLinkError e) {
        throw failure("java.library.path", e);
      }
    } else {
      loadBundled();
    }
    loaded = true;
  }

  /** The platform folder of the bundled libraries: linux-x86_64, linux-aarch64, ... */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z]", "");
    String arch = System.getProperty("os.arch", "").toLowerCase(java.util.Locale.ROOT);
    if (arch.equals("amd64")) arch = "x86_64";
    return os + "-" + arch;
  }

  private static boolean onLibraryPath() {
    String dirs = System.getProperty("java.library.path", "");
    for (String dir : dirs.split(File.pathSeparator)) {
      if (!dir.isEmpty() && new File(dir, System.mapLibraryName(NAME)).isFile()) return true;
    }
    return false;
  }

  private static void loadBundled() {
    String folder = "META-INF/native/" + platform() + "/";
    for (String name : BUNDLED) {
      if (NativeLibrary.class.getClassLoader().getResource(folder + name) == null) {
        throw failure("the jar (it bundles no " + folder + name + ")", null);
      }
    }
    Path dir = null;
    List<Path> files = new ArrayList<>();
    try {
      dir = Files.createTempDirectory("libaccel-native");
      for (String name : BUNDLED) {
        Path file = dir.resolve(name);
        try (InputStream in = NativeLibrary.class.getClassLoader().getResourceAsStream(folder + name)) {
          Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        files.add(file);
      }
      for (Path file : files) System.load(file.toAbsolutePath().toString());
    } catch (IOException e) {
      UnsatisfiedLinkError error = failure("the jar (extracting to " + dir + " failed: " + e + ")", null);
      error.initCause(e);
      throw error;
    } catch (UnsatisfiedLinkError e) {
      throw failure("the jar's " + folder, e);
    } finally {
      for (Path file : files) file.toFile().delete();
      if (dir != null) dir.toFile().delete();
    }
  }

  private static UnsatisfiedLinkError failure(String where, UnsatisfiedLinkError cause) {
    UnsatisfiedLinkError error = new UnsatisfiedLinkError(
        "libaccel: cannot load " + System.mapLibraryName(NAME) + " from " + where
        + (cause != null ? ": " + cause.getMessage() : "") + ". The Maven jar bundles it for linux-x86_64 and "
        + "needs LibTorch (Debian: apt install libtorch1.13 libopenblas0-openmp); on Debian, apt install "
        + "libaccel-java puts it on java.library.path; or set -D" + PATH_PROPERTY
        + "=/path/to/" + System.mapLibraryName(NAME) + " (or its directory), e.g. a build's build/java.");
    if (cause != null) error.initCause(cause);
    return error;
  }
}
