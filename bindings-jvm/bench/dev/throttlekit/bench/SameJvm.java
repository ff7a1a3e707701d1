// The memory rows as one application's JVM sees them: both limiters in this process, sharing its
// heap and JIT, each side in a monomorphic loop of its own (a method per side and row, so no call
// site sees the other library), 5 warm-up rounds, then 9 rounds in which the two sides alternate
// (the side that goes first alternating too), medians of each side's CPU time per call (the
// thread's ThreadMXBean time plus the collectors' meanwhile, as Forks counts it). Printed beside
// the forked rows (Forks), which keep each side in a JVM of its own: a user runs one JVM.
//
// The breakdown lines time the stages of our tryAcquire(key) on the same 100k keys, one stage
// skipped or isolated at a time (docs/bench-jvm.md explains the subtractions).
package dev.throttlekit.bench;

import com.google.common.util.concurrent.RateLimiter;
import dev.throttlekit.Limiter;
import dev.throttlekit.Strategy;
import dev.throttlekit.internal.Native;
import dev.throttlekit.internal.Scratch;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;

final class SameJvm {
    static final int WARM_UP = 5, ROUNDS = 9;

    private SameJvm() {}

    /** One side of one row: {@code n} calls, returning a sum the JIT cannot drop. */
    interface Side {
        long run(int n);
    }

    /** Runs the rows; the ratio rows print ROW lines for bench/summarize.py. */
    static void rows(String[] keys, boolean quick) throws Exception {
        int n = quick ? 1_000_000 : 2_000_000;
        double rate = JvmBench.RATE;
        Limiter one = Limiter.builder(Strategy.gcra((long) rate, Duration.ofSeconds(1), (long) rate)).build();
        RateLimiter guavaOne = RateLimiter.create(rate);
        row("tryAcquire, GCRA, memory, 1 key, same JVM", "Guava RateLimiter.tryAcquire, same JVM", ">=1.0",
                m -> oursOne(one, m), m -> guavaOne(guavaOne, m), n);

        Limiter many = Limiter.builder(Strategy.gcra((long) rate, Duration.ofSeconds(1), (long) rate)).build();
        ConcurrentHashMap<String, RateLimiter> map = new ConcurrentHashMap<>();
        row("tryAcquire(key), GCRA, memory, 100k keys, same JVM", "ConcurrentHashMap<String, RateLimiter>, same JVM", ">=1.0",
                m -> oursMany(many, keys, m), m -> guavaMany(map, keys, rate, m), n);
        Limiter manyCheck = Limiter.builder(Strategy.gcra((long) rate, Duration.ofSeconds(1), (long) rate)).build();
        row("check(key).allowed(), 100k keys, same JVM (diagnostic)", "the same map, same JVM", null,
                m -> oursManyCheck(manyCheck, keys, m), m -> guavaMany(map, keys, rate, m), n);
        breakdown(keys, n);
    }

    static long oursOne(Limiter l, int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += l.tryAcquire("k") ? 1 : 0;
        return s;
    }

    static long guavaOne(RateLimiter r, int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += r.tryAcquire() ? 1 : 0;
        return s;
    }

    static long oursMany(Limiter l, String[] keys, int n) {
        long s = 0;
        for (int i = 0, k = 0; i < n; i++) {
            s += l.tryAcquire(keys[k]) ? 1 : 0;
            if (++k == keys.length) k = 0;
        }
        return s;
    }

    static long oursManyCheck(Limiter l, String[] keys, int n) {
        long s = 0;
        for (int i = 0, k = 0; i < n; i++) {
            s += l.check(keys[k]).allowed() ? 1 : 0;
            if (++k == keys.length) k = 0;
        }
        return s;
    }

    static long guavaMany(ConcurrentHashMap<String, RateLimiter> map, String[] keys, double rate, int n) {
        long s = 0;
        for (int i = 0, k = 0; i < n; i++) {
            s += map.computeIfAbsent(keys[k], x -> RateLimiter.create(rate)).tryAcquire() ? 1 : 0;
            if (++k == keys.length) k = 0;
        }
        return s;
    }

    /** {cpu, wall} ns per call of one round of {@code side}. */
    static double[] time(Side side, int n) {
        long gc0 = JvmBench.gcMillis();
        long c0 = JvmBench.MX.getCurrentThreadCpuTime(), t0 = System.nanoTime();
        JvmBench.sink += side.run(n);
        long wall = System.nanoTime() - t0, cpu = JvmBench.MX.getCurrentThreadCpuTime() - c0;
        return new double[] {(cpu + (JvmBench.gcMillis() - gc0) * 1e6) / n, wall / (double) n};
    }

    /**
     * Warm-up, then interleaved rounds; prints the row (a ROW line when {@code target} is set)
     * with each side's median CPU ns a call, the medians' ratio and every round's figures.
     */
    static void row(String scenario, String peer, String target, Side ours, Side theirs, int n) {
        for (int r = 0; r < WARM_UP; r++) {
            time(ours, n);
            time(theirs, n);
        }
        double[] o = new double[ROUNDS], t = new double[ROUNDS], ow = new double[ROUNDS], tw = new double[ROUNDS];
        StringBuilder each = new StringBuilder();
        for (int r = 0; r < ROUNDS; r++) {
            double[] a, b;
            if (r % 2 == 0) {
                a = time(ours, n);
                b = time(theirs, n);
            } else {
                b = time(theirs, n);
                a = time(ours, n);
            }
            o[r] = a[0];
            ow[r] = a[1];
            t[r] = b[0];
            tw[r] = b[1];
            each.append(String.format(Locale.ROOT, "%s%.1f/%.1f", r == 0 ? "" : " ", o[r], t[r]));
        }
        double mo = JvmBench.median(o), mt = JvmBench.median(t);
        String detail = String.format(Locale.ROOT,
                "medians of %d interleaved rounds of %d calls after %d warm-up rounds: %.1f vs %.1f ns of CPU per call; wall %.1f vs %.1f ns; rounds ours/peer: %s",
                ROUNDS, n, WARM_UP, mo, mt, JvmBench.median(ow), JvmBench.median(tw), each);
        if (target != null) {
            JvmBench.row(scenario, peer, mt / mo, target, detail);
        } else {
            System.out.printf(Locale.ROOT, "%-52s %-42s %8.3fx  (%s)%n", scenario, peer, mt / mo, detail);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Where tryAcquire(key)'s time goes on 100k keys: each stage alone, in this JVM.

    /**
     * Prints one line of stage timings (medians of {@link #ROUNDS} rounds after the warm-up),
     * each a loop over the same 100k keys in the same order:
     * <ul>
     *   <li>{@code full}: {@code tryAcquire(keys[i])}, as the row above;
     *   <li>{@code encode}: {@code Scratch.key(keys[i])} alone (reading the String and its bytes,
     *       writing them to the scratch buffer), no native call;
     *   <li>{@code encode1}: the same on one 10-char key (in cache): the encoder's own work;
     *   <li>{@code jni}: a native call that does no work ({@code Native.fromDouble}: the
     *       transition both ways and the panic guard);
     *   <li>{@code native}: the native {@code tryAcquire} on keys already encoded in native memory
     *       (one buffer per key, in the keys' order): the JNI call, the handle, the key check,
     *       the clock, the hash, the shard lock and the GCRA step, no String read;
     *   <li>{@code native1}: the same on one key (every line in cache): the path without misses;
     *   <li>{@code chmGet}: {@code ConcurrentHashMap<String, Long>.get(keys[i])} on a map of the
     *       keys, no native call: what a Java-side key-to-native-slot cache would pay before its
     *       native call, and the map half of Guava's row.
     * </ul>
     */
    static void breakdown(String[] keys, int n) throws Exception {
        double rate = JvmBench.RATE;
        Limiter l = Limiter.builder(Strategy.gcra((long) rate, Duration.ofSeconds(1), (long) rate)).build();
        Limiter l1 = Limiter.builder(Strategy.gcra((long) rate, Duration.ofSeconds(1), (long) rate)).build();
        long h = handle(l), h1 = handle(l1);
        int k = keys.length;
        long[] addr = new long[k];
        int[] len = new int[k];
        ByteBuffer[] keep = new ByteBuffer[k];
        for (int i = 0; i < k; i++) {
            byte[] b = keys[i].getBytes(StandardCharsets.UTF_8);
            ByteBuffer buf = ByteBuffer.allocateDirect(Scratch.KEY + b.length + 8).order(ByteOrder.nativeOrder());
            buf.put(Scratch.KEY, b);
            keep[i] = buf;
            addr[i] = Native.address(buf);
            len[i] = b.length;
        }
        Side full = m -> oursMany(l, keys, m);
        Side encode = m -> encodeOnly(keys, m);
        Side jni = SameJvm::jniOnly;
        Side nat = m -> nativeOnly(h, addr, len, m);
        Side nat1 = m -> nativeOnly(h1, new long[] {addr[0]}, new int[] {len[0]}, m);
        ConcurrentHashMap<String, Long> slots = new ConcurrentHashMap<>();
        for (int i = 0; i < k; i++) slots.put(keys[i], (long) i);
        Side chm = m -> chmGet(slots, keys, m);
        String[] oneKey = {keys[k - 1]};
        Side encode1 = m -> encodeOnly(oneKey, m);
        Side[] sides = {full, encode, encode1, jni, nat, nat1, chm};
        String[] names = {"full", "encode", "encode1", "jni", "native", "native1", "chmGet"};
        double[][] v = new double[sides.length][ROUNDS];
        for (int r = 0; r < WARM_UP; r++) for (Side s : sides) time(s, n);
        for (int r = 0; r < ROUNDS; r++) for (int s = 0; s < sides.length; s++) v[s][r] = time(sides[s], n)[0];
        StringBuilder out = new StringBuilder("tryAcquire(key), 100k keys, stages (ns of CPU a call, medians):");
        for (int s = 0; s < sides.length; s++) out.append(String.format(Locale.ROOT, " %s %.1f", names[s], JvmBench.median(v[s])));
        System.out.println(out);
        // The native calls above take the handles and addresses as longs: the limiters and the
        // buffers must stay reachable until they are done (their Cleaners free the memory).
        java.lang.ref.Reference.reachabilityFence(keep);
        java.lang.ref.Reference.reachabilityFence(l);
        java.lang.ref.Reference.reachabilityFence(l1);
    }

    static long encodeOnly(String[] keys, int n) {
        Scratch sc = Scratch.get();
        long s = 0;
        for (int i = 0, k = 0; i < n; i++) {
            s += sc.key(keys[k]);
            if (++k == keys.length) k = 0;
        }
        return s;
    }

    static long chmGet(ConcurrentHashMap<String, Long> map, String[] keys, int n) {
        long s = 0;
        for (int i = 0, k = 0; i < n; i++) {
            s += map.get(keys[k]);
            if (++k == keys.length) k = 0;
        }
        return s;
    }

    static long jniOnly(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += Native.fromDouble(0, 1.0);
        return s;
    }

    static long nativeOnly(long h, long[] addr, int[] len, int n) {
        long s = 0;
        for (int i = 0, k = 0; i < n; i++) {
            s += Native.tryAcquire(h, addr[k], len[k], 1) ? 1 : 0;
            if (++k == addr.length) k = 0;
        }
        return s;
    }

    /** The limiter's native handle (a private field: this diagnostic calls the native method itself). */
    static long handle(Limiter l) throws ReflectiveOperationException {
        java.lang.reflect.Field f = Limiter.class.getDeclaredField("h");
        f.setAccessible(true);
        return f.getLong(l);
    }
}
