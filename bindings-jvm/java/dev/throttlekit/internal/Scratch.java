package dev.throttlekit.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The calling thread's direct buffer shared with the native half: six result {@code long}s at
 * offset 0, the key's UTF-8 bytes at {@link #KEY}. The key is encoded here by hand (no
 * {@code String.getBytes}, no {@code GetStringUTFChars}), so a check allocates nothing to pass
 * its key. Lone surrogates encode as {@code '?'}, as {@code String.getBytes(UTF_8)} does.
 */
public final class Scratch {
    /** Where the key starts (the native half's {@code scratch::KEY}). */
    public static final int KEY = 64;
    private static final int INITIAL = 1024;
    private static final ThreadLocal<Scratch> LOCAL = ThreadLocal.withInitial(Scratch::new);

    private ByteBuffer buf;
    private long addr;

    private Scratch() {
        allocate(INITIAL);
    }

    private void allocate(int size) {
        buf = ByteBuffer.allocateDirect(size).order(ByteOrder.nativeOrder());
        addr = Native.address(buf);
    }

    /** The calling thread's buffer. */
    public static Scratch get() {
        return LOCAL.get();
    }

    /** The buffer's native address. */
    public long address() {
        return addr;
    }

    /** Result {@code i} (0-5) of the last call. */
    public long out(int i) {
        return buf.getLong(i * 8);
    }

    /**
     * Writes {@code key} as UTF-8 at {@link #KEY}; returns its length in bytes. Small enough for
     * the JIT to inline into each caller: an ASCII key (the usual one) is copied a char a byte, and
     * the first other char hands the rest to {@link #encodeFrom}.
     */
    public int key(String key) {
        int n = key.length();
        if (KEY + 3L * n > buf.capacity()) grow(n);
        ByteBuffer b = buf;
        for (int i = 0; i < n; i++) {
            char c = key.charAt(i);
            if (c >= 0x80) return encodeFrom(b, key, i);
            b.put(KEY + i, (byte) c);
        }
        return n;
    }

    /** A buffer that holds {@code n} chars as UTF-8 (at most three bytes each). */
    private void grow(int n) {
        long need = KEY + 3L * n;
        if (need > Integer.MAX_VALUE - 8) {
            throw new dev.throttlekit.ConfigInvalidException("key is too long", -1);
        }
        allocate((int) Math.max(need, 2L * buf.capacity()));
    }

    /** {@link #key}'s rest from char {@code from} on, the first that is not ASCII. */
    private static int encodeFrom(ByteBuffer b, String key, int from) {
        int n = key.length();
        int p = KEY + from;
        for (int i = from; i < n; i++) {
            char c = key.charAt(i);
            if (c < 0x80) {
                b.put(p++, (byte) c);
            } else if (c < 0x800) {
                b.put(p++, (byte) (0xC0 | (c >> 6)));
                b.put(p++, (byte) (0x80 | (c & 0x3F)));
            } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(key.charAt(i + 1))) {
                int cp = Character.toCodePoint(c, key.charAt(++i));
                b.put(p++, (byte) (0xF0 | (cp >> 18)));
                b.put(p++, (byte) (0x80 | ((cp >> 12) & 0x3F)));
                b.put(p++, (byte) (0x80 | ((cp >> 6) & 0x3F)));
                b.put(p++, (byte) (0x80 | (cp & 0x3F)));
            } else if (Character.isSurrogate(c)) {
                b.put(p++, (byte) '?');
            } else {
                b.put(p++, (byte) (0xE0 | (c >> 12)));
                b.put(p++, (byte) (0x80 | ((c >> 6) & 0x3F)));
                b.put(p++, (byte) (0x80 | (c & 0x3F)));
            }
        }
        return p - KEY;
    }
}
