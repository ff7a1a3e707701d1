package dev.throttlekit.internal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
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
        if (GET_LONG == null) return buf.getLong(i * 8);
        try {
            return (long) GET_LONG.invokeExact(addr + i * 8L);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Stores {@code w} at byte {@code at} of the buffer, in native order. */
    private void putLong(ByteBuffer b, int at, long w) {
        if (PUT_LONG == null) {
            b.putLong(at, w);
            return;
        }
        try {
            PUT_LONG.invokeExact(addr + at, w);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** The {@code len} key bytes {@link #key} wrote last (for the tests). */
    public byte[] keyBytes(int len) {
        byte[] out = new byte[len];
        buf.get(KEY, out);
        return out;
    }

    /** Whether the buffer is read and written as raw memory (see {@link #GET_LONG}). */
    public static boolean raw() {
        return GET_LONG != null;
    }

    /**
     * {@code sun.misc.Unsafe}'s {@code getLong(long)} and {@code putLong(long, long)} on the
     * buffer's address with {@code -Dthrottlekit.scratch.raw=true}; else null, and the
     * {@code ByteBuffer}'s own methods are used (also where {@code jdk.unsupported} is missing).
     *
     * <p>Off by default: on a quiet machine, alternating runs of the bench with and without it
     * (2026-11-26 13:40 UTC, 8 pairs) gave the 100k-keys row medians of about 0.70x Guava with it
     * against about 1.2x without, and the 1-key row no better (0.86x against 0.97x), whatever it
     * saves in one tight loop (below). Where it does help: a caller of {@code Limiter.check}
     * compiled after {@code check} itself, which inlines the raw path's smaller code but not the
     * default's, so its {@code Decision} is not allocated (a 1-key check 33-37 ns a call against
     * 71-78 ns, 2026-11-26 14:40-15:00 UTC). docs/bench-jvm.md has the runs.
     *
     * <p>Why: {@code ByteBuffer.getLong} checks the index and the buffer's scope on every call,
     * and with six results and the key's stores, {@code Limiter.check} compiled to about 2,600
     * bytes of machine code, past C2's {@code InlineSmallCode} (2,500): a caller compiled after
     * it no longer inlined it ("already compiled into a big method"), so its {@code Decision}
     * could not be scalar-replaced and cost 48 bytes a call. Raw loads and stores compile to one
     * instruction each (about 1,700 bytes in all), and a 1-key check takes ~10% less CPU. The
     * buffer is this thread's and at least as long as every access (checked in {@link #key}),
     * so raw access reads and writes nothing a {@code ByteBuffer} would refuse. Reached through
     * method handles (constants, so the JIT inlines them) because javac cannot be told to accept
     * a direct reference under {@code -Werror}.
     */
    private static final MethodHandle GET_LONG, PUT_LONG;

    static {
        MethodHandle g = null, p = null;
        if ("true".equals(System.getProperty("throttlekit.scratch.raw"))) {
            try {
                Class<?> c = Class.forName("sun.misc.Unsafe");
                java.lang.reflect.Field f = c.getDeclaredField("theUnsafe");
                f.setAccessible(true);
                Object u = f.get(null);
                MethodHandles.Lookup l = MethodHandles.lookup();
                g = l.findVirtual(c, "getLong", MethodType.methodType(long.class, long.class)).bindTo(u);
                p = l.findVirtual(c, "putLong", MethodType.methodType(void.class, long.class, long.class)).bindTo(u);
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                g = null;
                p = null;
            }
        }
        GET_LONG = g;
        PUT_LONG = p;
    }

    /**
     * Writes {@code key} as UTF-8 at {@link #KEY}; returns its length in bytes. Small enough for
     * the JIT to inline into each caller (and small once compiled, so that the caller, e.g.
     * {@code Limiter.check}, is itself inlined into its callers and its {@code Decision} can be
     * scalar-replaced). An ASCII key (the usual one) goes up to eight chars to a {@code long}
     * store: a key of up to 8 chars is one store, a longer one a store per 8 chars, the last of
     * them covering its last 8 chars (overlapping the one before). Why words: a store per byte
     * cost a bounds check each, and the native half reads the key a word at a time, which a word
     * written whole hands over from the store buffer at once while bytes must first reach the
     * cache. The first word with a char that is not ASCII hands the rest to {@link #encodeFrom}.
     * Up to 8 bytes past the key's end may be overwritten (the buffer always has room for them).
     */
    public int key(String key) {
        int n = key.length();
        if (KEY + 3L * n + 8 > buf.capacity()) grow(n);
        ByteBuffer b = buf;
        if (n >= 8) return words(b, key, n);
        long w = 0;
        int any = 0;
        for (int j = 0; j < n; j++) {
            char c = key.charAt(j);
            any |= c;
            w |= (long) c << (8 * j);
        }
        if (any >= 0x80) return encodeFrom(b, key, 0);
        putLong(b, KEY, LITTLE ? w : Long.reverseBytes(w));
        return n;
    }

    /**
     * {@link #key} for a key of 8 chars or more: eight {@code charAt}s written out, one test
     * of their OR, one store. Why written out: the loop over a word's chars (its trip count
     * {@code min(n, 8)} unknown to the JIT) compiled to a char at a time with its bounds and
     * coder checks, 24 ns for a 10-char key against 2 ns for the whole 1-char key (the JVM
     * bench's {@code encode1} stage); eight independent loads cost about half of that.
     */
    private int words(ByteBuffer b, String key, int n) {
        int at = 0;
        do {
            int from = Math.min(at, n - 8);
            int c0 = key.charAt(from), c1 = key.charAt(from + 1), c2 = key.charAt(from + 2), c3 = key.charAt(from + 3);
            int c4 = key.charAt(from + 4), c5 = key.charAt(from + 5), c6 = key.charAt(from + 6), c7 = key.charAt(from + 7);
            if ((c0 | c1 | c2 | c3 | c4 | c5 | c6 | c7) >= 0x80) return encodeFrom(b, key, at);
            long w = c0 | (long) c1 << 8 | (long) c2 << 16 | (long) c3 << 24
                    | (long) c4 << 32 | (long) c5 << 40 | (long) c6 << 48 | (long) c7 << 56;
            putLong(b, KEY + from, LITTLE ? w : Long.reverseBytes(w));
            at += 8;
        } while (at < n);
        return n;
    }

    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    /** A buffer that holds {@code n} chars as UTF-8 (at most three bytes each). */
    private void grow(int n) {
        long need = KEY + 3L * n + 8;
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
