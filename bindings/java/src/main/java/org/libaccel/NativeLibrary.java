package org.libaccel;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Loads libaccel_jni.so once, before the first native call, from the first of:
 * <ol>
 *   <li>the file or directory in the system property {@code org.libaccel.library.path};
 *   <li>a directory of {@code java.library.path} that holds it (Debian's libaccel-java puts it in
 *       /usr/lib/&lt;triplet&gt;/jni, which Debian's JDK searches);
 *   <li>the libraries bundled in the Maven jar under {@code META-INF/native/<os>-<arch>/}:
 *       <ul>
 *         <li>the plain jar bundles libaccel_jni.so and the libaccel.so.0 it links to (LibTorch and
 *             the other system libraries come from the machine): both are extracted to a new
 *             temporary directory, loaded, and deleted at once (the process keeps its mapping);
 *         <li>the {@code linux-x86_64-torch} classifier jar bundles every library libaccel needs,
 *             LibTorch included, listed in load order in {@code libraries.txt}. Half a gigabyte is
 *             too much to copy at every start, so, as DJL does, they are extracted once into a cache
 *             directory named by their digest ({@code org.libaccel.native.cache}, else
 *             $XDG_CACHE_HOME/libaccel/native, else ~/.cache/libaccel/native), under a file lock
 *             (the ranks of one job start together) and renamed into place whole, and loaded from
 *             there by every later process. Where the cache cannot be written they go to a
 *             temporary directory, as the plain jar's do.
 *       </ul>
 * </ol>
 * A failure is an UnsatisfiedLinkError that says what was tried and what to install or set.
 */
final class NativeLibrary {
  static final String PATH_PROPERTY = "org.libaccel.library.path";
  static final String CACHE_PROPERTY = "org.libaccel.native.cache";
  private static final String NAME = "accel_jni";
  /* The plain jar's files, in load order: libaccel_jni.so finds libaccel.so.0 through its
     RUNPATH $ORIGIN, so loading the JNI library alone would do; loading libaccel first
     makes a missing LibTorch show up under its own name. */
  private static final String[] BUNDLED = {"libaccel.so.0", "libaccel_jni.so"};
  /* The classifier jar's list (packaging/maven/torch-natives-jar.sh writes it):
     "digest <hex>" and then "<size> <file>" lines, dependencies before their users. */
  private static final String LISTING = "libraries.txt";
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

  /** One bundled file: its name in the folder and its size in bytes. */
  private static final class Entry {
    final String name;
    final long size;

    Entry(String name, long size) {
      this.name = name;
      this.size = size;
    }
  }

  private static void loadBundled() {
    String folder = "META-INF/native/" + platform() + "/";
    ClassLoader loader = NativeLibrary.class.getClassLoader();
    String digest = null;
    List<Entry> entries = new ArrayList<>();
    try (InputStream listing = loader.getResourceAsStream(folder + LISTING)) {
      if (listing != null) {
        digest = readListing(listing, entries);
      } else {
        for (String name : BUNDLED) entries.add(new Entry(name, -1));
      }
    } catch (IOException | IllegalArgumentException e) {
      UnsatisfiedLinkError error = failure("the jar (its " + folder + LISTING + " is unreadable: " + e + ")", null);
      error.initCause(e);
      throw error;
    }
    for (Entry entry : entries) {
      if (loader.getResource(folder + entry.name) == null) {
        throw failure("the jar (it bundles no " + folder + entry.name + ")", null);
      }
    }
    Path cached = digest == null ? null : cachedCopy(folder, digest, entries);
    if (cached != null) {
      loadAll(cached, entries, folder);
      return;
    }
    Path dir = null;
    try {
      dir = Files.createTempDirectory("libaccel-native");
      extract(folder, entries, dir);
      loadAll(dir, entries, folder);
    } catch (IOException e) {
      UnsatisfiedLinkError error = failure("the jar (extracting to " + dir + " failed: " + e + ")", null);
      error.initCause(e);
      throw error;
    } finally {
      if (dir != null) deleteTree(dir);
    }
  }

  private static String readListing(InputStream listing, List<Entry> entries) throws IOException {
    String digest = null;
    BufferedReader reader = new BufferedReader(new InputStreamReader(listing, StandardCharsets.UTF_8));
    for (String line; (line = reader.readLine()) != null; ) {
      line = line.trim();
      if (line.isEmpty() || line.startsWith("#")) continue;
      String[] fields = line.split(" ");
      if (fields.length == 2 && fields[0].equals("digest") && fields[1].matches("[0-9a-f]{16,}")) {
        digest = fields[1];
      } else if (fields.length == 2 && fields[0].matches("[0-9]+") && fields[1].matches("[A-Za-z0-9._+-]+")) {
        entries.add(new Entry(fields[1], Long.parseLong(fields[0])));
      } else {
        throw new IllegalArgumentException("line '" + line + "'");
      }
    }
    if (digest == null || entries.isEmpty()) throw new IllegalArgumentException("no digest or no libraries");
    return digest;
  }

  /**
   * The directory holding the extracted libraries under the cache, extracting them first when
   * no complete copy is there; null when the cache cannot be used (then a temporary directory is).
   */
  private static Path cachedCopy(String folder, String digest, List<Entry> entries) {
    Path root = cacheRoot();
    if (root == null) return null;
    Path target = root.resolve(platform() + "-" + digest.substring(0, 16));
    try {
      Files.createDirectories(root);
      try (FileChannel channel = FileChannel.open(root.resolve(target.getFileName() + ".lock"),
               StandardOpenOption.CREATE, StandardOpenOption.WRITE);
           FileLock lock = channel.lock()) {
        if (complete(target, entries)) return target;
        if (Files.exists(target)) deleteTree(target);  // a copy someone changed: extract it again
        Path staging = Files.createTempDirectory(root, ".extracting-");
        try {
          extract(folder, entries, staging);
          Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
        } finally {
          if (Files.exists(staging)) deleteTree(staging);
        }
        return complete(target, entries) ? target : null;
      }
    } catch (IOException | SecurityException e) {
      return null;
    }
  }

  private static Path cacheRoot() {
    String configured = System.getProperty(CACHE_PROPERTY);
    if (configured != null && !configured.isEmpty()) return Paths.get(configured);
    String xdg = System.getenv("XDG_CACHE_HOME");
    if (xdg != null && !xdg.isEmpty()) return Paths.get(xdg, "libaccel", "native");
    String home = System.getProperty("user.home");
    if (home == null || home.isEmpty() || home.equals("?")) return null;
    return Paths.get(home, ".cache", "libaccel", "native");
  }

  private static boolean complete(Path dir, List<Entry> entries) {
    for (Entry entry : entries) {
      try {
        if (Files.size(dir.resolve(entry.name)) != entry.size) return false;
      } catch (IOException e) {
        return false;
      }
    }
    return true;
  }

  private static void extract(String folder, List<Entry> entries, Path dir) throws IOException {
    for (Entry entry : entries) {
      try (InputStream in = NativeLibrary.class.getClassLoader().getResourceAsStream(folder + entry.name)) {
        if (in == null) throw new IOException("the jar has no " + folder + entry.name);
        Files.copy(in, dir.resolve(entry.name), StandardCopyOption.REPLACE_EXISTING);
      }
    }
  }

  private static void loadAll(Path dir, List<Entry> entries, String folder) {
    for (Entry entry : entries) {
      try {
        System.load(dir.resolve(entry.name).toAbsolutePath().toString());
      } catch (UnsatisfiedLinkError e) {
        throw failure("the jar's " + folder + " (extracted to " + dir + ")", e);
      }
    }
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // Best effort: a temporary directory left behind holds no open state.
    }
  }

  private static UnsatisfiedLinkError failure(String where, UnsatisfiedLinkError cause) {
    UnsatisfiedLinkError error = new UnsatisfiedLinkError(
        "libaccel: cannot load " + System.mapLibraryName(NAME) + " from " + where
        + (cause != null ? ": " + cause.getMessage() : "") + ". The Maven jar bundles it for linux-x86_64 and "
        + "needs LibTorch (Debian: apt install libtorch1.13 libopenblas0-openmp); the linux-x86_64-torch "
        + "classifier jar bundles LibTorch and needs nothing else; on Debian, apt install "
        + "libaccel-java puts it on java.library.path; or set -D" + PATH_PROPERTY
        + "=/path/to/" + System.mapLibraryName(NAME) + " (or its directory), e.g. a build's build/java.");
    if (cause != null) error.initCause(cause);
    return error;
  }
}
