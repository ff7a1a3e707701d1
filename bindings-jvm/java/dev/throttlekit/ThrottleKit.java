package dev.throttlekit;

import dev.throttlekit.internal.Native;
import java.nio.charset.StandardCharsets;

/** Facts about the library itself. */
public final class ThrottleKit {
    private ThrottleKit() {}

    /** The version (core's; the jar's {@code Implementation-Version}). */
    public static String version() {
        return new String(Native.version(), StandardCharsets.UTF_8);
    }

    /**
     * Where the native library was loaded from: the {@code throttlekit.library.path} file, the
     * file extracted from the jar, or {@code java.library.path}. Loads it if nothing has yet.
     */
    public static String nativeLibrary() {
        return Native.loadedFrom();
    }
}
