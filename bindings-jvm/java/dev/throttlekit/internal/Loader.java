package dev.throttlekit.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds and loads the native library, in this order:
 * <ol>
 *   <li>the system property {@code throttlekit.library.path}: that file, loaded as is;</li>
 *   <li>the jar's {@code native/<os>-<arch>/libthrottlekit_jvm.so}, extracted to a fresh
 *       directory under {@code throttlekit.tmpdir} (default {@code java.io.tmpdir}) and loaded
 *       from there; if that directory is mounted {@code noexec} (the load fails), under
 *       {@code ~/.cache/throttlekit} instead, then the working directory;</li>
 *   <li>{@code System.loadLibrary("throttlekit_jvm")} ({@code java.library.path}).</li>
 * </ol>
 * The first that loads wins; if none does, the error names every attempt.
 */
final class Loader {
    static final String PATH_PROPERTY = "throttlekit.library.path";
    static final String TMPDIR_PROPERTY = "throttlekit.tmpdir";
    static final String LIB = "libthrottlekit_jvm.so";

    /** Where the library was loaded from (a file, or {@code java.library.path}). */
    static volatile String loaded = "";

    private Loader() {}

    /** The jar's folder for this platform, e.g. {@code native/linux-x86_64}. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase();
        os = os.startsWith("linux") ? "linux" : os.startsWith("mac") ? "macos" : os.replace(' ', '_');
        String arch = System.getProperty("os.arch", "");
        if (arch.equals("amd64")) arch = "x86_64";
        return "native/" + os + "-" + arch;
    }

    static synchronized void load() {
        List<String> tried = new ArrayList<>();
        String explicit = System.getProperty(PATH_PROPERTY);
        if (explicit != null && !explicit.isEmpty()) {
            String file = Paths.get(explicit).toAbsolutePath().toString();
            System.load(file);
            loaded = file;
            return;
        }
        String resource = "/" + platform() + "/" + LIB;
        if (Loader.class.getResource(resource) != null) {
            for (Path base : candidates()) {
                try {
                    Path file = extract(resource, base);
                    System.load(file.toString());
                    loaded = file.toString();
                    return;
                } catch (IOException | UnsatisfiedLinkError e) {
                    tried.add(base + ": " + e.getMessage());
                }
            }
        } else {
            tried.add("no " + resource + " in the jar");
        }
        try {
            System.loadLibrary("throttlekit_jvm");
            loaded = "java.library.path: " + System.mapLibraryName("throttlekit_jvm");
        } catch (UnsatisfiedLinkError e) {
            tried.add("java.library.path: " + e.getMessage());
            throw new UnsatisfiedLinkError("throttlekit: could not load the native library; tried " + tried
                    + " (set -D" + PATH_PROPERTY + "=/path/to/" + LIB + " or -D" + TMPDIR_PROPERTY + "=DIR)");
        }
    }

    private static List<Path> candidates() {
        List<Path> out = new ArrayList<>();
        String tmp = System.getProperty(TMPDIR_PROPERTY);
        if (tmp != null && !tmp.isEmpty()) out.add(Paths.get(tmp));
        out.add(Paths.get(System.getProperty("java.io.tmpdir", "/tmp")));
        String home = System.getProperty("user.home");
        if (home != null && !home.isEmpty() && !home.equals("?")) out.add(Paths.get(home, ".cache", "throttlekit"));
        out.add(Paths.get(System.getProperty("user.dir", ".")));
        return out;
    }

    /** Copies the library into a new private directory under {@code base}; deleted at exit. */
    private static Path extract(String resource, Path base) throws IOException {
        Files.createDirectories(base);
        Path dir = Files.createTempDirectory(base, "throttlekit-");
        // Deleted at exit in reverse order of registration: the file, then its directory.
        dir.toFile().deleteOnExit();
        Path file = dir.resolve(LIB);
        try (InputStream in = Loader.class.getResourceAsStream(resource)) {
            if (in == null) throw new IOException("resource " + resource + " vanished");
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        file.toFile().deleteOnExit();
        return file;
    }
}
