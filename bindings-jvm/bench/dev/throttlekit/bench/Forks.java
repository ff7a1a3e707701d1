// The memory rows of JvmBench, each side in JVM processes of its own: what JMH does by default
// (@Fork, a fresh JVM per benchmark) so that one side's heap, garbage, JIT profile and compiled
// code never shape the other's. Measured in one process, Guava's own time on identical code moved
// between 80 and 227 ns a call from one process to the next with what else lived in the heap
// (our Decisions' garbage, the collections that move Guava's objects), more than the whole
// binding costs; alone in a process it was 210-230 ns (docs/bench-jvm.md).
//
// A row runs F fork pairs; each pair is one JVM for our library and one for the peer, started
// one after the other with the same flags, the same keys, warm-up and measured rounds, the side
// that goes first alternating from pair to pair (a load spike on this shared machine then falls
// on either side as often). Each fork prints the median of its rounds' CPU time per call; the
// row's ratio is the median of the pairs' ratios (peer / ours), printed with their min-max, after
// one line holding every fork's figure.
package dev.throttlekit.bench;

import com.google.common.util.concurrent.RateLimiter;
import dev.throttlekit.Limiter;
import dev.throttlekit.Strategy;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntToLongFunction;

final class Forks {
    static final int KEYS = 100_000;

    private Forks() {}

    /** {@code user:0} .. {@code user:99999}, allocated in order (as every fork allocates them). */
    static String[] keys() {
        String[] keys = new String[KEYS];
        for (int i = 0; i < KEYS; i++) keys[i] = "user:" + i;
        return keys;
    }

    static int forks(boolean quick) {
        return quick ? 3 : 5;
    }

    static int rounds(boolean quick) {
        return 3;
    }

    static int threads(String row) {
        return row.equals("many2") ? 2 : 1;
    }

    /**
     * Calls per thread in one measured round. A full run's forks make 2M (the one-process bench
     * made 3M in each of 7 rounds): its 5 fork pairs then cost about 1.5x its calls, plus a JVM
     * start-up per fork.
     */
    static int calls(String row, boolean quick) {
        int n = quick ? 1_000_000 : 2_000_000;
        return row.equals("many2") || row.equals("shuffled") ? n / 2 : n;
    }

    /**
     * The child: builds only {@code side}'s limiter(s) for {@code row}, warms up (half a round),
     * times {@link #rounds} rounds, prints {@code FORK<TAB>cpu<TAB>wall<TAB>each round's cpu}.
     */
    static void child(String row, String side, boolean quick) throws Exception {
        IntToLongFunction body = body(row, side, keys());
        int threads = threads(row), n = calls(row, quick), rounds = rounds(quick);
        JvmBench.nsPerCall(threads, n / 2, body);
        double[] cpu = new double[rounds], wall = new double[rounds];
        StringBuilder each = new StringBuilder();
        for (int r = 0; r < rounds; r++) {
            double[] a = JvmBench.nsPerCall(threads, n, body);
            cpu[r] = a[0];
            wall[r] = a[1];
            each.append(r == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.1f", a[0]));
        }
        System.out.printf(Locale.ROOT, "FORK\t%.3f\t%.3f\t%s%n", JvmBench.median(cpu), JvmBench.median(wall), each);
        System.out.println("(sink " + (JvmBench.sink & 1) + ")");
    }

    /** What one call of {@code row} is on {@code side} ("ours" or "guava"); only that side is built. */
    static IntToLongFunction body(String row, String side, String[] keys) {
        double rate = JvmBench.RATE;
        int[] order = new int[KEYS];
        for (int i = 0; i < KEYS; i++) order[i] = i;
        if (row.equals("shuffled")) {
            // Traffic does not arrive in the order the keys' Strings were allocated (which lets
            // the prefetcher walk Guava's nodes in address order): the same keys, shuffled.
            java.util.Random rnd = new java.util.Random(42);
            for (int i = KEYS - 1; i > 0; i--) {
                int j = rnd.nextInt(i + 1), x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
        }
        boolean ours = side.equals("ours");
        if (row.equals("one")) {
            if (ours) {
                Limiter one = Limiter.builder(Strategy.gcra((long) rate, Duration.ofSeconds(1), (long) rate)).build();
                return i -> one.check("k").remaining();
            }
            RateLimiter guavaOne = RateLimiter.create(rate);
            return i -> guavaOne.tryAcquire() ? 1 : 0;
        }
        if (ours) {
            Limiter many = Limiter.builder(Strategy.gcra((long) rate, Duration.ofSeconds(1), (long) rate)).build();
            // "manyTry": the allocation-free call, as SameJvm's 100k-keys row makes it.
            if (row.equals("manyTry")) return i -> many.tryAcquire(keys[order[i % KEYS]]) ? 1 : 0;
            return i -> many.check(keys[order[i % KEYS]]).remaining();
        }
        ConcurrentHashMap<String, RateLimiter> map = new ConcurrentHashMap<>();
        return i -> map.computeIfAbsent(keys[order[i % KEYS]], k -> RateLimiter.create(rate)).tryAcquire() ? 1 : 0;
    }

    /** One fork: a JVM with this JVM's flags and class path running {@link #child}; {cpu, wall}. */
    static double[] fork(String row, String side, boolean quick, StringBuilder log) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(JvmBench.class.getName());
        cmd.add("--fork-row");
        cmd.add(row);
        cmd.add("--fork-side");
        cmd.add(side);
        if (quick) cmd.add("--quick");
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) throw new IllegalStateException("fork " + row + "/" + side + " failed: " + out);
        for (String line : out.split("\n")) {
            if (line.startsWith("FORK\t")) {
                String[] f = line.split("\t");
                log.append(String.format(Locale.ROOT, " %s %.1f ns [rounds %s]", side.equals("ours") ? "ours" : "peer", Double.parseDouble(f[1]), f[3]));
                return new double[] {Double.parseDouble(f[1]), Double.parseDouble(f[2])};
            }
        }
        throw new IllegalStateException("fork " + row + "/" + side + " printed: " + out);
    }

    /**
     * Runs {@code row}'s fork pairs and prints every fork's figure, then the row: a ROW line for
     * bench/summarize.py when {@code target} is set, a plain line for a diagnostic.
     */
    static void row(String row, String scenario, String peer, String target, boolean quick) throws Exception {
        int forks = forks(quick);
        double[] ratio = new double[forks], o = new double[forks], t = new double[forks], ow = new double[forks], tw = new double[forks];
        StringBuilder pairs = new StringBuilder();
        for (int f = 0; f < forks; f++) {
            boolean oursFirst = f % 2 == 0;
            StringBuilder log = new StringBuilder();
            double[] a, b;
            if (oursFirst) {
                a = fork(row, "ours", quick, log);
                b = fork(row, "guava", quick, log);
            } else {
                b = fork(row, "guava", quick, log);
                a = fork(row, "ours", quick, log);
            }
            o[f] = a[0];
            ow[f] = a[1];
            t[f] = b[0];
            tw[f] = b[1];
            ratio[f] = t[f] / o[f];
            pairs.append(String.format(Locale.ROOT, "%s pair %d, %s first:%s -> %.3fx", f == 0 ? "" : ";", f + 1,
                    oursFirst ? "ours" : "peer", log, ratio[f]));
        }
        // One line for all the pairs, so the rows' readable lines stay within the 20 that
        // bench/run.sh shows on the terminal (the log keeps everything).
        System.out.printf(Locale.ROOT, "  forks of %s (ns of CPU a call, each fork's median and rounds):%s%n", row, pairs);
        double lo = Double.MAX_VALUE, hi = 0;
        for (double r : ratio) {
            lo = Math.min(lo, r);
            hi = Math.max(hi, r);
        }
        String detail = String.format(Locale.ROOT,
                "median of %d fork pairs, spread %.2f-%.2fx; %.1f vs %.1f ns of CPU per call (medians over forks); wall %.1f vs %.1f ns (%.2fx)",
                forks, lo, hi, JvmBench.median(o), JvmBench.median(t), JvmBench.median(ow), JvmBench.median(tw),
                JvmBench.median(tw) / JvmBench.median(ow));
        if (target != null) {
            JvmBench.row(scenario, peer, JvmBench.median(ratio), target, detail);
        } else {
            System.out.printf(Locale.ROOT, "%-52s %-42s %8.3fx  (%s)%n", scenario, peer, JvmBench.median(ratio), detail);
        }
    }
}
