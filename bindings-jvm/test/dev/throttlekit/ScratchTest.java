package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import dev.throttlekit.internal.Scratch;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The thread buffer's key encoder ({@code Scratch.key}: eight ASCII chars to a store, the rest
 * by hand) writes exactly {@code String.getBytes(UTF_8)}'s bytes, for random keys of every
 * length around the word boundaries and with every kind of char, both through the
 * {@code ByteBuffer}'s methods (the default) and through raw memory access (a child JVM with
 * {@code -Dthrottlekit.scratch.raw=true}).
 */
class ScratchTest {
    /** Random keys through {@link Scratch#key}; the first mismatch, or null. */
    static String mismatch(long seed, int rounds) {
        Random r = new Random(seed);
        Scratch s = Scratch.get();
        for (int t = 0; t < rounds; t++) {
            String k = randomKey(r);
            byte[] want = k.getBytes(StandardCharsets.UTF_8);
            int len = s.key(k);
            if (len != want.length || !Arrays.equals(want, s.keyBytes(len))) return k;
        }
        return null;
    }

    @Test
    void keysEncodeAsStringGetBytes() {
        assertFalse(Scratch.raw(), "the ByteBuffer path is the default");
        assertNull(mismatch(1, 100_000));
        // A key that grows the buffer, then short ones again.
        Scratch s = Scratch.get();
        String big = "k".repeat(5000) + "\u00e9";
        assertArrayEquals(big.getBytes(StandardCharsets.UTF_8), s.keyBytes(s.key(big)));
        assertNull(mismatch(2, 1000));
    }

    /** A random key of 0-39 chars, about a fifth of them outside ASCII (surrogate pairs, lone surrogates, 2- and 3-byte chars). */
    static String randomKey(Random r) {
        char[] odd = "\u00e9\u007f\u0080\u07ff\u0800\u4e2d\uffff\ud83d\ude00\ud800\udc00".toCharArray();
        int n = r.nextInt(40);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) sb.append(r.nextInt(5) == 0 ? odd[r.nextInt(odd.length)] : (char) (' ' + r.nextInt(95)));
        return sb.toString();
    }

    /**
     * {@code tryAcquire} (its own native method, which reads only whether it was allowed)
     * reaches the same key as {@code check} and {@code peek}: on a limiter of one request an
     * hour, a key's first {@code tryAcquire} passes, and then {@code check} and
     * {@code tryAcquire} are denied, for random keys of every length and kind, bare and under a
     * prefix.
     */
    @Test
    void tryAcquireReachesTheSameKeyAsCheck() {
        for (String prefix : new String[] {"", "p"}) {
            try (Limiter l = Limiter.builder(Strategy.gcra(1, java.time.Duration.ofHours(1))).prefix(prefix).build()) {
                Random r = new Random(5);
                java.util.Set<String> seen = new java.util.HashSet<>();
                for (int t = 0; t < 20_000; t++) {
                    String k = randomKey(r);
                    // Keys are compared as their UTF-8 bytes: a lone surrogate encodes as '?'.
                    if (!seen.add(new String(k.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8))) continue;
                    assertTrue(l.peek(k).allowed(), k);
                    assertTrue(l.tryAcquire(k), k);
                    assertFalse(l.check(k).allowed(), k);
                    assertFalse(l.tryAcquire(k), k);
                }
            }
        }
    }

    @Test
    void theRawPathEncodesTheSameInAChildJvm() throws Exception {
        String java = System.getProperty("java.home") + "/bin/java";
        Process p = new ProcessBuilder(java, "-Dthrottlekit.scratch.raw=true",
                "-Dthrottlekit.library.path=" + System.getProperty("throttlekit.library.path", ""),
                "-cp", System.getProperty("throttlekit.test.classpath", System.getProperty("java.class.path")), Child.class.getName())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertEquals(0, p.waitFor(), out);
        assertEquals("raw=true mismatch=null decisions=ok", out);
    }

    /** The child: the raw path, then a limiter's decisions through it. */
    public static final class Child {
        public static void main(String[] args) {
            String m = mismatch(3, 20_000);
            String decisions = "ok";
            try (Limiter l = Limiter.builder(Strategy.gcra(2, java.time.Duration.ofHours(1))).build()) {
                for (String k : new String[] {"user:12345678", "\u00e9", "k"}) {
                    Decision a = l.check(k), b = l.check(k), c = l.check(k);
                    if (!a.allowed() || a.remaining() != 1 || !b.allowed() || b.remaining() != 0 || c.allowed() || c.retryAfterMs() <= 0) {
                        decisions = k + ": " + a + " " + b + " " + c;
                    }
                }
            }
            System.out.println("raw=" + Scratch.raw() + " mismatch=" + m + " decisions=" + decisions);
        }
    }
}
