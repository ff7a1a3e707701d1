// The JVM library against the peers a JVM user would pick instead, in one run (bench/run.sh's
// "jvm" part; bindings-jvm/bench/run.sh builds and starts what it needs):
//   - check, GCRA on the memory store, vs Guava's RateLimiter.tryAcquire: 1 key (every call
//     admitted), 100k keys (Guava in a ConcurrentHashMap<String, RateLimiter>), and the same on
//     2 threads;
//   - the bytes tryAcquire and check allocate per call (ThreadMXBean);
//   - the adaptive limiter's tryAcquire + release through JNI, against the 1 µs
//     (--adaptive-only: that row alone);
//   - with --redis URL --rust-seq R --rust-inflight F: sequential blocking checks/s and 64
//     CompletableFutures in flight, against the Rust numbers measured on the same server
//     (--redis-only: those two rows alone).
// The memory rows run each side in JVM processes of its own, several fork pairs a row, the side
// going first alternating (Forks: JMH's @Fork default; in one heap the two libraries measured
// each other's layout), then once more with both sides in this JVM, interleaved, as an
// application runs them (SameJvm, with a breakdown of tryAcquire(key)'s stages on 100k keys;
// --same-jvm-only runs those alone). This process keeps the allocation and Redis rows, which do not share a
// heap with a peer: the Redis peer is a Rust process. The memory rows compare CPU time per call (the
// calling threads' ThreadMXBean time plus the collectors' time meanwhile), with wall time printed
// beside it: on this shared 2-core VM a round's wall time is mostly how long the process waited
// for a core. The Redis rows interleave rounds with the Rust peer and take medians, so a noisy
// neighbour slows both sides alike. The sequential row runs the Rust peer and this JVM in the same window of wall
// time (`redis_peer ... window`), so both wait on the same load; the in-flight row compares runs
// one after the other (side by side, two pipelining clients compete for one server). Each prints
// the other way's figures beside it. Prints a readable table and one
// `ROW<TAB>scenario<TAB>peer<TAB>ratio<TAB>target<TAB>detail` line per scenario for
// bench/summarize.py; ratio = peer's time / ours (above 1: we are faster).
package dev.throttlekit.bench;

import dev.throttlekit.AdaptiveLimiter;
import dev.throttlekit.Limiter;
import dev.throttlekit.Outcome;
import dev.throttlekit.Permit;
import dev.throttlekit.RedisStore;
import dev.throttlekit.Strategy;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntToLongFunction;

public final class JvmBench {
    static final double RATE = 1e9;
    static long sink;

    static final com.sun.management.ThreadMXBean MX =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /** Milliseconds the collectors have spent so far (their pauses, as the JVM counts them). */
    static long gcMillis() {
        long ms = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) ms += Math.max(0, gc.getCollectionTime());
        return ms;
    }

    /**
     * Runs {@code body} {@code n} times on each of {@code threads} threads; returns {cpu, wall}
     * ns per call. cpu: the CPU time of the calling threads (ThreadMXBean) plus the collectors'
     * time meanwhile, over the calls: what a call costs, whatever share of this shared machine
     * the process got. wall: elapsed time over the calls (per thread-call on 2 threads). Each
     * thread sums {@code body}'s results locally and publishes once: a shared sink written per
     * call would bounce one cache line between the threads on both sides of a comparison.
     */
    static double[] nsPerCall(int threads, int n, IntToLongFunction body) throws InterruptedException {
        long gc0 = gcMillis();
        if (threads == 1) {
            long c0 = MX.getCurrentThreadCpuTime(), t0 = System.nanoTime(), s = 0;
            for (int i = 0; i < n; i++) s += body.applyAsLong(i);
            long wall = System.nanoTime() - t0, cpu = MX.getCurrentThreadCpuTime() - c0;
            sink += s;
            return new double[] {(cpu + (gcMillis() - gc0) * 1e6) / n, wall / (double) n};
        }
        Thread[] ts = new Thread[threads];
        long[] cpu = new long[threads * 8];
        long[] sums = new long[threads * 8];
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            final int off = t * 7919, slot = t * 8;
            ts[t] = new Thread(() -> {
                long c0 = MX.getCurrentThreadCpuTime(), s = 0;
                for (int i = 0; i < n; i++) s += body.applyAsLong(i + off);
                cpu[slot] = MX.getCurrentThreadCpuTime() - c0;
                sums[slot] = s;
            });
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        long wall = System.nanoTime() - t0, c = 0;
        for (int t = 0; t < threads; t++) {
            c += cpu[t * 8];
            sink += sums[t * 8];
        }
        return new double[] {(c + (gcMillis() - gc0) * 1e6) / ((double) n * threads), wall / (double) n / threads};
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

    /** The adaptive limiter's tryAcquire + release through JNI (the 1 µs per binding). */
    static void adaptiveRow(boolean quick) {
        try (AdaptiveLimiter l = AdaptiveLimiter.builder("gradient2").initialLimit(64).build()) {
            int n = quick ? 500_000 : 2_000_000;
            for (int i = 0; i < n / 2; i++) acquireRelease(l); // until the JIT has compiled it
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) acquireRelease(l);
            double ns = (System.nanoTime() - t0) / (double) n;
            row("adaptive tryAcquire + release (JNI)", "1000 ns target", 1000 / ns, ">=1",
                    String.format("%.1f ns per tryAcquire + release, gradient2 at a limit of 64", ns));
        }
    }

    static void acquireRelease(AdaptiveLimiter l) {
        if (!(l.tryAcquire() instanceof Permit p)) throw new IllegalStateException("not granted");
        p.release(Outcome.SUCCESS);
    }

    public static void main(String[] args) throws Exception {
        boolean quick = Arrays.asList(args).contains("--quick");
        // --redis-only: the two Redis rows alone (to study them; `make bench` runs every row).
        boolean redisOnly = Arrays.asList(args).contains("--redis-only");
        String redisUrl = null;
        double rustSeq = 0, rustInflight = 0;
        String rustPeer = null, forkRow = null, forkSide = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--redis" -> redisUrl = args[++i];
                case "--rust-seq" -> rustSeq = Double.parseDouble(args[++i]);
                case "--rust-inflight" -> rustInflight = Double.parseDouble(args[++i]);
                case "--rust-peer" -> rustPeer = args[++i];
                case "--fork-row" -> forkRow = args[++i];
                case "--fork-side" -> forkSide = args[++i];
                default -> {}
            }
        }
        if (forkRow != null) {
            Forks.child(forkRow, forkSide, quick);
            return;
        }
        int n = quick ? 1_000_000 : 3_000_000;
        String[] keys = Forks.keys();
        // --same-jvm-only: the same-JVM rows alone (SameJvm; to study them).
        if (Arrays.asList(args).contains("--same-jvm-only")) {
            SameJvm.rows(keys, quick);
            return;
        }
        // --forked-only ROW: one forked memory row alone (Forks' row names: one, many, manyTry,
        // many2, shuffled; to study it).
        int only = Arrays.asList(args).indexOf("--forked-only");
        if (only >= 0) {
            Forks.row(args[only + 1], "forked row " + args[only + 1], "its peer", null, quick);
            return;
        }

        adaptiveRow(quick);
        // --adaptive-only: that row alone.
        if (Arrays.asList(args).contains("--adaptive-only")) return;
        // The memory rows: each side of each row in JVM processes of its own (Forks).
        if (!redisOnly) memoryRows(keys, n, quick);

        if (redisUrl != null && (rustSeq > 0 || rustPeer != null)) {
            try (RedisStore redis = RedisStore.builder(redisUrl).connect();
                    Limiter l = Limiter.builder(Strategy.gcra((long) RATE, Duration.ofSeconds(1), (long) RATE)).store(redis).prefix("jvmbench:java").build()) {
                int rn = quick ? 5_000 : 20_000;
                // In flight, rounds of 5x the checks (~0.3 s in --quick, ~1-1.5 s in a full run, on
                // each side): rounds of 20k checks lasted 0.2-0.3 s, and one pause of the scheduler
                // on this shared machine moved a round of either side by up to 2x.
                int rnInf = 5 * rn;
                // Warm-up: the Rust peer is compiled ahead of time; the JVM's paths are compiled
                // by the JIT while they run, so both are run untimed first, until compiled.
                for (int i = 0; i < 1000; i++) l.check("k");
                int warm = warmUp(l, rn);
                System.out.printf("Redis warm-up: %d rounds of %d checks in flight%n", warm, rn);
                // Rounds interleaved with the Rust peer's runs (--rust-peer: a process per round,
                // as the memory rows interleave Guava), medians kept: a load spike on this shared
                // machine then slows both sides of a round, not only the side measured last.
                //
                // The sequential row compares runs side by side instead (--rust-peer): the peer
                // and this JVM make blocking checks in the same window of wall time, so both meet
                // the same load, one call at a time each on its own connection. A blocking round
                // trip is mostly waiting for the scheduler; measured one after the other, the two
                // sides came out 0.27-1.54x of each other between runs.
                int rr = rustPeer == null ? 1 : 3;
                double[] seq = new double[rr], inflight = new double[rr], rSeq = new double[rr], rInf = new double[rr];
                double[] alone = new double[rr], rAlone = new double[rr], inflightAlone = new double[rr], rInfAlone = new double[rr];
                long windowMs = quick ? 600 : 1500;
                for (int r = 0; r < rr; r++) {
                    if (rustPeer != null) {
                        double[] p = peer(rustPeer, redisUrl, rn, rnInf);
                        rAlone[r] = p[0];
                        rInfAlone[r] = p[1];
                        long from = System.currentTimeMillis() + 500, to = from + windowMs;
                        Process w = new ProcessBuilder(rustPeer, redisUrl, "0", "window", String.valueOf(from), String.valueOf(to))
                                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
                        seq[r] = window(l, from, to);
                        rSeq[r] = peerLine(w, "rust window ");
                        from = System.currentTimeMillis() + 500;
                        to = from + windowMs;
                        w = new ProcessBuilder(rustPeer, redisUrl, "0", "window-in-flight", String.valueOf(from), String.valueOf(to))
                                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
                        inflight[r] = windowInFlight(l, from, to);
                        rInf[r] = peerLine(w, "rust window-in-flight-64 ");
                    } else {
                        rSeq[r] = rAlone[r] = rustSeq;
                        rInf[r] = rInfAlone[r] = rustInflight;
                        seq[r] = Double.NaN;
                    }
                    long t0 = System.nanoTime();
                    for (int i = 0; i < rn; i++) sink += l.check("k").remaining();
                    alone[r] = rn / ((System.nanoTime() - t0) / 1e9);
                    if (rustPeer == null) seq[r] = alone[r];
                    inflightAlone[r] = inFlight(l, rnInf);
                    if (rustPeer == null) inflight[r] = inflightAlone[r];
                }
                // In flight, the ratio is of the runs one after the other: side by side, two
                // pipelining clients compete for one single-threaded server, and which one it
                // serves more of swung from 1.1x to 2.0x between two runs; printed beside it.
                double s0 = median(seq), i0 = median(inflightAlone), rs = median(rSeq), ri = median(rInfAlone);
                row("Redis, sequential blocking check", "the Rust bench, same server (check_sync)", s0 / rs, ">=0.9",
                        String.format("%.0f vs %.0f checks/s side by side (medians of %d rounds); one after the other %.0f vs %.0f",
                                s0, rs, rr, median(alone), median(rAlone)));
                row("Redis, 64 CompletableFutures in flight", "the Rust bench, same server (64 tasks)", i0 / ri, ">=0.9",
                        String.format("%.0f vs %.0f checks/s (medians of %d interleaved rounds); side by side %.0f vs %.0f",
                                i0, ri, rr, median(inflight), median(rInf)));
            }
        }
        System.out.println("(sink " + (sink & 1) + ")");
    }

    /**
     * Runs the Redis paths untimed until the JIT is done with them: rounds of blocking checks and
     * of {@code rn} checks in flight, until two rounds in a row pass with under 10 ms of
     * compilation each (at least 3 rounds, at most 20); returns the rounds run. On this loaded
     * 2-core VM, C2 was still compiling the future path after 100k checks (26% of the process's
     * CPU in a timed window), taking a core from Redis and from the client while rounds were
     * timed; a compilation's time is counted when it ends, so one quiet round is not enough.
     */
    static int warmUp(Limiter l, int rn) throws Exception {
        java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        int quiet = 0;
        for (int round = 1; ; round++) {
            long c0 = jit.getTotalCompilationTime();
            for (int i = 0; i < rn / 4; i++) sink += l.check("k").remaining();
            inFlight(l, rn);
            quiet = jit.getTotalCompilationTime() - c0 < 10 ? quiet + 1 : 0;
            if ((round >= 3 && quiet >= 2) || round == 20) return round;
        }
    }

    /** The memory rows (Forks) and the allocation row. */
    static void memoryRows(String[] keys, int n, boolean quick) throws Exception {
        Forks.row("one", "check, GCRA, memory, 1 key (every call admitted)", "Guava RateLimiter.tryAcquire", ">=0.7", quick);
        Forks.row("many", "check, GCRA, memory, 100k keys", "ConcurrentHashMap<String, RateLimiter>", ">=1.0", quick);
        Forks.row("manyTry", "tryAcquire(key), GCRA, memory, 100k keys", "ConcurrentHashMap<String, RateLimiter>", ">=1.0", quick);
        Forks.row("many2", "check, GCRA, memory, 100k keys, 2 threads", "the same map, 2 threads", ">=1.0", quick);
        Forks.row("shuffled", "check, GCRA, memory, 100k keys in a shuffled order (diagnostic)", "the same map", null, quick);
        // The same comparisons in this one JVM, as an application runs them (SameJvm).
        SameJvm.rows(keys, quick);
        Limiter one = Limiter.builder(Strategy.gcra((long) RATE, Duration.ofSeconds(1), (long) RATE)).build();

        // Allocation per call.
        com.sun.management.ThreadMXBean mx = MX;
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
    }

    /** One run of the Rust peer ({@code examples/redis_peer.rs}): its rates over {@code n} sequential and {@code inFlight} in-flight checks. */
    static double[] peer(String path, String url, int n, int inFlight) throws Exception {
        Process p = new ProcessBuilder(path, url, String.valueOf(n), String.valueOf(inFlight)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
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

    /**
     * Blocking checks on {@code l} until epoch ms {@code to}; returns the checks per second made
     * from epoch ms {@code from} on (the Rust peer's {@code window} counts the same way).
     */
    static double window(Limiter l, long from, long to) {
        long s = 0, n = 0;
        while (System.currentTimeMillis() < from) s += l.check("k").remaining();
        long t0 = System.nanoTime();
        while (System.currentTimeMillis() < to) {
            s += l.check("k").remaining();
            n++;
        }
        sink += s;
        return n / ((System.nanoTime() - t0) / 1e9);
    }

    /**
     * 64 chains of {@code checkAsync} on {@code l} until epoch ms {@code to}; returns the checks
     * per second completed from epoch ms {@code from} on, over the nominal window (the Rust peer's
     * {@code window-in-flight} counts the same way).
     */
    static double windowInFlight(Limiter l, long from, long to) throws Exception {
        AtomicLong done = new AtomicLong();
        CompletableFuture<?>[] slots = new CompletableFuture<?>[64];
        for (int c = 0; c < 64; c++) {
            CompletableFuture<Void> end = new CompletableFuture<>();
            slots[c] = end;
            slot(l, Integer.MAX_VALUE, from, to, done, end);
        }
        CompletableFuture.allOf(slots).get();
        return done.get() / ((to - from) / 1e3);
    }

    /** The number the Rust peer {@code p} printed after {@code prefix}, once it exits. */
    static double peerLine(Process p, String prefix) throws Exception {
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (p.waitFor() != 0) throw new IllegalStateException("the Rust peer failed: " + out);
        for (String line : out.split("\n")) {
            if (line.startsWith(prefix)) return Double.parseDouble(line.substring(prefix.length()).trim());
        }
        throw new IllegalStateException("the Rust peer printed: " + out);
    }

    /** Checks per second with 64 chains of futures in flight, {@code n} checks in all. */
    static double inFlight(Limiter l, int n) throws Exception {
        AtomicLong done = new AtomicLong();
        long t0 = System.nanoTime();
        CompletableFuture<?>[] slots = new CompletableFuture<?>[64];
        for (int c = 0; c < 64; c++) {
            CompletableFuture<Void> end = new CompletableFuture<>();
            slots[c] = end;
            slot(l, n / 64, 0, Long.MAX_VALUE, done, end);
        }
        CompletableFuture.allOf(slots).get();
        return done.get() / ((System.nanoTime() - t0) / 1e9);
    }

    /**
     * One in-flight slot: up to {@code left} checks one after another, each started by the stage
     * of the last (on the thread that completed it), counting those completed from epoch ms
     * {@code from} on, until epoch ms {@code to} ({@code Long.MAX_VALUE}: no clock read); then
     * completes {@code end}. Like the Rust peer's task (a loop of {@code check().await}), it keeps
     * nothing per finished check: a {@code thenCompose} recursion linked every check's futures
     * until the slot's last one (collections of 26-83 ms inside rounds of 0.2-0.4 s). Both Redis
     * rounds use this one stage, so the warm-up compiles the code the timed rounds run (two
     * lambdas there left the window's to be compiled, or a shared call site recompiled, while
     * rounds were timed).
     */
    static void slot(Limiter l, int left, long from, long to, AtomicLong done, CompletableFuture<Void> end) {
        l.checkAsync("k").whenComplete((d, e) -> {
            if (e != null) {
                end.completeExceptionally(e);
                return;
            }
            long now = to == Long.MAX_VALUE ? 0 : System.currentTimeMillis();
            if (now >= to) {
                end.complete(null);
                return;
            }
            if (now >= from) done.incrementAndGet();
            if (left > 1) slot(l, left - 1, from, to, done, end);
            else end.complete(null);
        });
    }
}
