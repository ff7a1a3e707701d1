package dev.throttlekit.internal;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;

/** Several keys in one {@code byte[]}: each a little-endian 32-bit length, then its UTF-8 bytes. */
public final class Keys {
    private Keys() {}

    /** Packs {@code keys} (none may be null). */
    public static byte[] pack(List<String> keys) {
        Objects.requireNonNull(keys, "keys");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (String k : keys) {
            byte[] b = Objects.requireNonNull(k, "key").getBytes(StandardCharsets.UTF_8);
            out.write(b.length & 0xFF);
            out.write((b.length >>> 8) & 0xFF);
            out.write((b.length >>> 16) & 0xFF);
            out.write((b.length >>> 24) & 0xFF);
            out.write(b, 0, b.length);
        }
        return out.toByteArray();
    }
}
