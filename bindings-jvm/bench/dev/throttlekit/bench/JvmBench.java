// The JVM library against the peers a JVM user would pick instead, in one run (bench/run.sh's
// "jvm" part; bindings-jvm/bench/run.sh builds and starts what it needs):
//   - check, GCRA on the memory store, vs Guava's RateLimiter.tryAcquire: 1 key (every call
//     admitted), 100k keys (Guava in a ConcurrentHashMap<String, RateLimiter>), and the same on
//     2 threads;
//   - the bytes tryAcquire and check allocate per call (ThreadMXBean);
//   - with --redis URL --rust-seq R --rust-inflight F: sequential blocking checks/s and 64
//     CompletableFutures in flight, against the Rust numbers measured on the same server.
// Rounds are interleaved (ours, peer, ours, peer, ...) and each figure is the median, so a noisy
// neighbour slows both sides of a round alike. Prints a readable table and one
// `ROW<TAB>scenario<TAB>peer<TAB>ratio<TAB>target<TAB>detail` line per scenario for
// bench/summarize.py; ratio = peer's time / ours (above 1: we are faster).
package dev.throttlekit.bench;

import com.google.common.util.concurrent.RateLimiter;
import dev.throttlekit.Decision;
import dev.throttlekit.Limiter;
import dev.throttlekit.RedisStore;
import dev.throttlekit.Strategy;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;

public final class JvmBench {
    static final double RATE = 1e9;
    static long sink;

    /** ns per call of {@code body} over {@code n} calls, on {@code threads} threads. */
    static double nsPerCall(int threads, int n, IntConsumer body) throws InterruptedException {
        if (threads == 1) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) body.accept(i);
            return (System.nanoTime() - t0) / (double) n;
        }
        Thread[] ts = new Thread[threads];
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            final int off = t * 7919;
            ts[t] = new Thread(() -> {
                for (int i = 0; i < n; i++) body.accept(i + off);
            });
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        return (System.nanoTime() - t0) / (double) n / threads;
    }

    static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }

    static void row(String scenario, String peer, double ratio, String target, String detail) {
        System.out.printf("%-52s %-42s %8.3fx  (target %s)  %s%n", scenario, peer, ratio, target, detail);
        System.out.printf("ROW\t%s\t%s\t%.4f\t%s\t%s%n", scenario, peer, ratio, target, detail);
    }

    public static void main(String[] args) throws Exception {
        boolean quick = Arrays.asList(args).contains("--quick");
        String redisUrl = null;
        double rustSeq = 0, rustInflight = 0;
        String rustPeer = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--redis" -> redisUrl = args[++i];
                case "--rust-seq" -> rustSeq = Double.parseDouble(args[++i]);
                case "--rust-inflight" -> rustInflight = Double.parseDouble(args[++i]);
                case "--rust-peer" -> rustPeer = args[++i];
                default -> {}
            }
        }
        int rounds = quick ? 3 : 7;
        int n = quick ? 1_000_000 : 3_000_000;
        int keyCount = 100_000;
        String[] keys = new String[keyCount];
        for (int i = 0; i < keyCount; i++) keys[i] = "user:" + i;

        // check, 1 key, every call admitted.
        Limiter one = Limiter.builder(Strategy.gcra((long) RATE, Duration.ofSeconds(1), (long) RATE)).build();
        RateLimiter guavaOne = RateLimiter.create(RATE);
        compare("check, GCRA, memory, 1 key (every call admitted)", "Guava RateLimiter.tryAcquire", ">=0.7", rounds, 1, n,
                i -> sink += one.check("k").remaining(), i -> sink += guavaOne.tryAcquire() ? 1 : 0);

        // 100k keys, 1 and 2 threads.
        Limiter many = Limiter.builder(Strategy.gcra((long) RATE, Duration.ofSeconds(1), (long) RATE)).build();
        ConcurrentHashMap<String, RateLimiter> map = new ConcurrentHashMap<>();
        IntConsumer ours = i -> sink += many.check(keys[i % keyCount]).remaining();
        IntConsumer guava = i -> sink += map.computeIfAbsent(keys[i % keyCount], k -> RateLimiter.create(RATE)).tryAcquire() ? 1 : 0;
        compare("check, GCRA, memory, 100k keys", "ConcurrentHashMap<String, RateLimiter>", ">=1.0", rounds, 1, n, ours, guava);
        compare("check, GCRA, memory, 100k keys, 2 threads", "the same map, 2 threads", ">=1.0", rounds, 2, n / 2, ours, guava);

        // Allocation per call.
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int w = 0; w < 3; w++) for (int i = 0; i < n / 4; i++) sink += one.tryAcquire(keys[i % 1000], 1) ? 1 : 0;
        long b0 = mx.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < n; i++) sink += one.tryAcquire(keys[i % 1000], 1) ? 1 : 0;
        double tryBytes = (mx.getCurrentThreadAllocatedBytes() - b0) / (double) n;
        b0 = mx.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < n; i++) sink += one.check(keys[i % 1000]).remaining();
        double checkBytes = (mx.getCurrentThreadAllocatedBytes() - b0) / (double) n;
        System.out.printf("allocation per call: tryAcquire %.3f B, check %.1f B (the Decision)%n", tryBytes, checkBytes);
        System.out.printf("ROW\ttryAcquire allocation per call (ThreadMXBean)\t-\t%.4f\t<=0\t%.3f B per call; check %.1f B%n",
                tryBytes, tryBytes, checkBytes);

        if (redisUrl != null && (rustSeq > 0 || rustPeer != null)) {
            try (RedisStore redis = RedisStore.builder(redisUrl).connect();
                    Limiter l = Limiter.builder(Strategy.gcra((long) RATE, Duration.ofSeconds(1), (long) RATE)).store(redis).prefix("jvmbench:java").build()) {
                int rn = quick ? 5_000 : 20_000;
                // Warm-up: the Rust peer is compiled ahead of time; the JVM's paths are compiled
                // by the JIT while they run (C1/C2 took ~13% of the CPU of a cold 5000-check
                // future run), so both are run untimed first.
                for (int i = 0; i < 1000; i++) l.check("k");
                inFlight(l, rn);
                // Rounds interleaved with the Rust peer's runs (--rust-peer: a process per round,
                // as the memory rows interleave Guava), medians kept: a load spike on this shared
                // machine then slows both sides of a round, not only the side measured last.
                int rr = rustPeer == null ? 1 : 3;
                double[] seq = new double[rr], inflight = new double[rr], rSeq = new double[rr], rInf = new double[rr];
                for (int r = 0; r < rr; r++) {
                    if (rustPeer != null) {
                        double[] p = peer(rustPeer, redisUrl, rn);
                        rSeq[r] = p[0];
                        rInf[r] = p[1];
                    } else {
                        rSeq[r] = rustSeq;
                        rInf[r] = rustInflight;
                    }
                    long t0 = System.nanoTime();
                    for (int i = 0; i < rn; i++) sink += l.check("k").remaining();
                    seq[r] = rn / ((System.nanoTime() - t0) / 1e9);
                    inflight[r] = inFlight(l, rn);
                }
                double s0 = median(seq), i0 = median(inflight), rs = median(rSeq), ri = median(rInf);
                row("Redis, sequential blocking check", "the Rust bench, same server (check_sync)", s0 / rs, ">=0.9",
                        String.format("%.0f vs %.0f checks/s (medians of %d interleaved rounds)", s0, rs, rr));
                row("Redis, 64 CompletableFutures in flight", "the Rust bench, same server (64 tasks)", i0 / ri, ">=0.9",
                        String.format("%.0f vs %.0f checks/s (medians of %d interleaved rounds)", i0, ri, rr));
            }
        }
        System.out.println("(sink " + (sink & 1) + ")");
    }

    /** One run of the Rust peer ({@code examples/redis_peer.rs}): its sequential and in-flight rates. */
    static double[] peer(String path, String url, int n) throws Exception {
        Process p = new ProcessBuilder(path, url, String.valueOf(n)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (p.waitFor() != 0) throw new IllegalStateException("the Rust peer failed: " + out);
        double seq = 0, inf = 0;
        for (String line : out.split("\n")) {
            if (line.startsWith("rust sequential ")) seq = Double.parseDouble(line.substring(16).trim());
            if (line.startsWith("rust in-flight-64 ")) inf = Double.parseDouble(line.substring(18).trim());
        }
        if (seq <= 0 || inf <= 0) throw new IllegalStateException("the Rust peer printed: " + out);
        return new double[] {seq, inf};
    }

    /** Checks per second with 64 chains of futures in flight, {@code n} checks in all. */
    static double inFlight(Limiter l, int n) throws Exception {
        AtomicLong done = new AtomicLong();
        long t0 = System.nanoTime();
        List<CompletableFuture<Void>> chains = new ArrayList<>();
        for (int c = 0; c < 64; c++) chains.add(chain(l, n / 64, done));
        CompletableFuture.allOf(chains.toArray(CompletableFuture[]::new)).get();
        return done.get() / ((System.nanoTime() - t0) / 1e9);
    }

    /** One in-flight slot: {@code left} checks one after another, each started when the last completes. */
    static CompletableFuture<Void> chain(Limiter l, int left, AtomicLong done) {
        if (left == 0) return CompletableFuture.completedFuture(null);
        return l.checkAsync("k").thenCompose((Decision d) -> {
            done.incrementAndGet();
            return chain(l, left - 1, done);
        });
    }

    static void compare(String scenario, String peer, String target, int rounds, int threads, int n, IntConsumer ours, IntConsumer theirs)
            throws InterruptedException {
        // Warm-up: JIT both paths and fill the key sets.
        nsPerCall(threads, n / 2, ours);
        nsPerCall(threads, n / 2, theirs);
        double[] o = new double[rounds];
        double[] t = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            o[r] = nsPerCall(threads, n, ours);
            t[r] = nsPerCall(threads, n, theirs);
        }
        double mo = median(o), mt = median(t);
        row(scenario, peer, mt / mo, target, String.format("%.1f vs %.1f ns per call", mo, mt));
    }
}
