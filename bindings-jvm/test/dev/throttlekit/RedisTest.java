package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Redis store, against the disposable server bindings-jvm/test.sh starts (its URL in the
 * system property {@code throttlekit.test.redis}; test.sh always sets it, so CI runs these).
 */
class RedisTest {
    static String url;

    @BeforeAll
    static void server() {
        url = System.getProperty("throttlekit.test.redis");
        Assumptions.assumeTrue(url != null && !url.isEmpty(), "no Redis URL given (bindings-jvm/test.sh always gives one)");
    }

    static String fresh() {
        return "jvmtest:" + UUID.randomUUID();
    }

    /** The start of the current hour on the system clock, epoch ms. */
    static long hourStart() {
        long now = System.currentTimeMillis();
        return now - now % 3_600_000;
    }

    /**
     * A clock standing still at the start of the current hour, for tests that count an hour's
     * window across many calls (threads, processes): on the system clock an hour boundary mid-test
     * would start the count over. Redis expires a window's key on its own clock at the window's
     * end, a whole hour away.
     */
    static ManualClock thisHour() {
        return new ManualClock(hourStart());
    }

    @Test
    void blockingAndFutureChecksShareOneLimit() throws Exception {
        try (RedisStore redis = RedisStore.builder(url).timeout(Duration.ofSeconds(2)).connect();
                Limiter l = Limiter.builder(Strategy.gcra(3, Duration.ofHours(1))).store(redis).prefix(fresh()).build()) {
            assertTrue(l.check("k").allowed());
            assertTrue(l.checkAsync("k").get().allowed());
            assertTrue(l.tryAcquire("k"));
            Decision denied = l.checkAsync("k").get();
            assertFalse(denied.allowed());
            assertTrue(denied.retryAfterMs() > 0);
            assertEquals(0, l.peekAsync("k").get().remaining());
            assertFalse(l.forecastAsync("k", 1).get().allowed());
            l.resetAsync("k").get();
            assertEquals(3, l.peek("k").remaining());
            assertEquals(3, l.checkManyAsync(List.of("a", "b", "c"), 1).get().size());
        }
    }

    @Test
    void sixtyFourFuturesInFlightAdmitExactlyK() throws Exception {
        try (RedisStore redis = RedisStore.builder(url).connect();
                Limiter l = Limiter.builder(Strategy.fixedWindow(100, Duration.ofHours(1))).store(redis).clock(thisHour()).prefix(fresh()).build()) {
            List<CompletableFuture<Decision>> inFlight = new ArrayList<>();
            for (int i = 0; i < 256; i++) inFlight.add(l.checkAsync("hot"));
            CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new)).get();
            assertEquals(100, inFlight.stream().filter(f -> f.join().allowed()).count());
        }
    }

    @Test
    void exactlyKFromManyThreads() throws Exception {
        try (RedisStore redis = RedisStore.builder(url).connect();
                Limiter l = Limiter.builder(Strategy.fixedWindow(150, Duration.ofHours(1))).store(redis).clock(thisHour()).prefix(fresh()).build()) {
            assertEquals(150, ConcurrencyTest.admitted(l, "shared", 6, 50));
        }
    }

    @Test
    void exactlyKFromSeveralJvmProcesses() throws Exception {
        String prefix = fresh();
        // One hour's window for every process, whenever each starts (seconds apart on a loaded machine).
        String hour = Long.toString(hourStart());
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        List<Process> procs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            procs.add(new ProcessBuilder(java, "-Dthrottlekit.library.path=" + System.getProperty("throttlekit.library.path", ""),
                    "-cp", System.getProperty("throttlekit.test.classpath", System.getProperty("java.class.path")), Worker.class.getName(), url, prefix, "40", hour)
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start());
        }
        int total = 0;
        for (Process p : procs) {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertEquals(0, p.waitFor(), out);
            total += Integer.parseInt(out);
        }
        assertEquals(50, total, "3 processes x 40 attempts on a limit of 50");
    }

    /** One process of {@link #exactlyKFromSeveralJvmProcesses}: prints how many it got (args: URL, prefix, attempts, the hour's start). */
    public static final class Worker {
        public static void main(String[] args) {
            try (RedisStore redis = RedisStore.builder(args[0]).connect();
                    Limiter l = Limiter.builder(Strategy.fixedWindow(50, Duration.ofHours(1))).store(redis)
                            .clock(new ManualClock(Long.parseLong(args[3]))).prefix(args[1]).build()) {
                int ok = 0;
                for (int i = 0; i < Integer.parseInt(args[2]); i++) if (l.tryAcquire("shared")) ok++;
                System.out.println(ok);
            }
        }
    }

    @Test
    void multiAndShaperOnRedis() throws Exception {
        try (RedisStore redis = RedisStore.builder(url).connect();
                MultiLimiter m = MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(1, Duration.ofHours(1)))
                        .dimension("user", Strategy.fixedWindow(5, Duration.ofHours(1))).store(redis).prefix(fresh()).build();
                // Departures 10 s apart: the second reservation waits unless a loaded machine
                // pauses 10 s between the two (at 10 a second, a 100 ms pause drained the queue).
                Shaper s = Shaper.builder(0.1, Duration.ofSeconds(60)).store(redis).prefix(fresh()).build()) {
            assertTrue(m.checkAsync(List.of("1.1.1.1", "u"), 1).get().allowed());
            MultiDecision d = m.check(List.of("1.1.1.1", "u"));
            assertFalse(d.allowed());
            assertEquals("ip", d.binding());
            m.resetAsync(List.of("1.1.1.1", "u")).get();
            assertTrue(s.reserveAsync("q", 1).get().accepted());
            assertTrue(s.reserve("q", 1).delayMs() > 0);
            s.reset("q");
        }
    }

    @Test
    void optionsAreValidatedAndAClosedStoreIsUnavailable() {
        assertThrows(ConfigInvalidException.class, () -> RedisStore.builder(url).mode(RedisStore.Mode.SENTINEL).connect(),
                "sentinel mode needs a service name");
        assertThrows(ConfigInvalidException.class, () -> RedisStore.builder("http://nope").connect());
        assertThrows(ConfigInvalidException.class, () -> RedisStore.builder(url).timeout(Duration.ofNanos(5)));
        assertThrows(ConfigInvalidException.class, () -> RedisStore.builder());
        RedisStore redis = RedisStore.builder(url).scripting(RedisStore.Scripting.EVAL).connect();
        Limiter l = Limiter.builder(Strategy.gcra(3, Duration.ofHours(1))).store(redis).prefix(fresh()).build();
        assertTrue(l.check("k").allowed());
        redis.close();
        assertThrows(StoreUnavailableException.class, () -> l.check("k"));
        var e = assertThrows(java.util.concurrent.ExecutionException.class, () -> l.checkAsync("k").get());
        assertInstanceOf(StoreUnavailableException.class, e.getCause());
    }

    @Test
    void failPoliciesDecideWhenRedisCannot() {
        RedisStore redis = RedisStore.builder(url).failPolicy(FailPolicy.FAIL_OPEN).connect();
        Limiter open = Limiter.builder(Strategy.gcra(3, Duration.ofHours(1))).store(redis).prefix(fresh()).build();
        Limiter closed = Limiter.builder(Strategy.gcra(3, Duration.ofHours(1))).store(redis).failPolicy(FailPolicy.FAIL_CLOSED).prefix(fresh()).build();
        Limiter raise = Limiter.builder(Strategy.gcra(3, Duration.ofHours(1))).store(redis).failPolicy(FailPolicy.RAISE).prefix(fresh()).build();
        redis.close();
        Decision o = open.check("k");
        assertTrue(o.allowed() && o.fallback());
        Decision c = closed.check("k");
        assertTrue(!c.allowed() && c.fallback());
        assertThrows(StoreUnavailableException.class, () -> raise.check("k"));
    }

    @Test
    void anUnreachableServerIsStoreUnavailable() throws Exception {
        int port;
        try (var s = new java.net.ServerSocket(0)) {
            port = s.getLocalPort();
        }
        final int dead = port;
        assertThrows(StoreUnavailableException.class,
                () -> RedisStore.builder("redis://127.0.0.1:" + dead).timeout(Duration.ofMillis(300)).connect());
    }
}
