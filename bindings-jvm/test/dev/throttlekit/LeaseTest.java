package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The two-tier modes (issue #23) from Java: {@link Mode}, {@link Lease}, {@link TierStats}, coded
 * errors for bad options, and on Redis (test.sh's server) fewer script calls in leased mode and
 * never more admissions than {@code docs/leasing.md}'s bound.
 */
class LeaseTest {
    static final Duration HOUR = Duration.ofHours(1);

    @Test
    void leasedOnMemorySpendsCreditsLocallyAndAdmitsExactlyTheLimit() {
        try (Limiter l = Limiter.builder(Strategy.fixedWindow(10, HOUR))
                .lease(Lease.builder().batch(4).windowCoupled(true).build()).build()) {
            assertEquals(Mode.LEASED, l.mode());
            int admitted = 0;
            for (int i = 0; i < 30; i++) if (l.tryAcquire("hot")) admitted++;
            assertEquals(10, admitted);
            TierStats s = l.tierStats();
            // 10 units in leases of at most 4: the store was asked 3 times for them (4 + 4 + 2),
            // and the other 7 admissions came from credits.
            assertEquals(7, s.localAdmits());
            assertTrue(s.leases() >= 3 && s.leases() < 30, s.toString());
        }
    }

    @Test
    void strictIsTheDefaultAndCountsNothing() {
        try (Limiter l = Limiter.builder(Strategy.gcra(5, HOUR)).build()) {
            assertEquals(Mode.STRICT, l.mode());
            for (int i = 0; i < 10; i++) l.check("k");
            assertEquals(new TierStats(0, 0, 0, 0, 0), l.tierStats());
            assertEquals(0, l.releaseLeases());
        }
    }

    @Test
    void cachedDenyAnswersARepeatedDenialLocally() {
        ManualClock clock = new ManualClock(1_000_000);
        try (Limiter l = Limiter.builder(Strategy.fixedWindow(2, Duration.ofSeconds(10))).clock(clock).mode(Mode.CACHED_DENY).build()) {
            assertEquals(Mode.CACHED_DENY, l.mode());
            assertTrue(l.check("k").allowed());
            assertTrue(l.check("k").allowed());
            Decision first = l.check("k");
            assertFalse(first.allowed());
            Decision cached = l.check("k");
            assertFalse(cached.allowed());
            assertTrue(cached.retryAfterMs() > 0);
            assertEquals(1, l.tierStats().localDenials());
            // After the retry time the store decides again, and admits.
            clock.advance(first.retryAfterMs());
            assertTrue(l.check("k").allowed());
        }
    }

    @Test
    void releaseLeasesGivesCreditsBack() throws Exception {
        try (MemoryStore store = MemoryStore.builder().build();
                Limiter l = Limiter.builder(Strategy.fixedWindow(100, HOUR)).store(store)
                        .lease(Lease.builder().batch(10).build()).build()) {
            assertTrue(l.check("a").allowed());
            assertTrue(l.check("b").allowed());
            assertEquals(18, l.releaseLeases(), "9 unspent credits on each of two keys");
            assertEquals(18, l.tierStats().creditsReturned());
            assertTrue(l.check("a").allowed());
            assertEquals(9, l.releaseLeasesAsync().get());
            assertEquals(0, l.releaseLeases(Duration.ofHours(2)), "nothing was idle that long");
            assertThrows(ConfigInvalidException.class, () -> l.releaseLeases(Duration.ofMillis(-1)));
            var e = assertThrows(java.util.concurrent.ExecutionException.class, () -> l.releaseLeasesAsync(null).get());
            assertInstanceOf(ConfigInvalidException.class, e.getCause());
            // The store saw what was given back: a strict limiter on the same key space admits it all.
            Limiter strict = Limiter.builder(Strategy.fixedWindow(100, HOUR)).store(store).build();
            assertEquals(98, strict.peek("a").remaining(), "1 spent and 1 given back twice over");
        }
    }

    @Test
    void closeGivesCreditsBack() {
        try (MemoryStore store = MemoryStore.builder().build()) {
            Limiter leased = Limiter.builder(Strategy.fixedWindow(100, HOUR)).store(store).lease(Lease.builder().batch(50).build()).build();
            Limiter strict = Limiter.builder(Strategy.fixedWindow(100, HOUR)).store(store).build();
            assertTrue(leased.check("k").allowed());
            assertEquals(50, strict.peek("k").remaining(), "the lease took 50 units");
            leased.close();
            assertEquals(99, strict.peek("k").remaining(), "close gave the 49 unspent back");
            assertThrows(StoreUnavailableException.class, () -> leased.check("k"));
        }
    }

    @Test
    void badOptionsAreConfigInvalidNamingTheField() {
        Strategy window = Strategy.fixedWindow(10, HOUR);
        assertField("lease.batch", () -> Limiter.builder(window).lease(Lease.builder().batch(0).build()).build());
        assertField("lease.batch", () -> Limiter.builder(window).lease(Lease.builder().batch(Long.MAX_VALUE).build()).build());
        assertField("lease.batch", () -> Limiter.builder(window).lease(Lease.builder().batch(-3).build()).build());
        assertField("lease.lowWater", () -> Limiter.builder(window).lease(Lease.builder().batch(5).lowWater(5).build()).build());
        assertField("lease.lowWater", () -> Limiter.builder(window).lease(Lease.builder().lowWater(-1).build()).build());
        assertField("lease.maxKeys", () -> Limiter.builder(window).lease(Lease.builder().maxKeys(0).build()).build());
        assertField("lease.maxKeys", () -> Limiter.builder(window).mode(Mode.CACHED_DENY).lease(Lease.builder().maxKeys(-1).build()).build());
        assertField("lease.windowCoupled",
                () -> Limiter.builder(Strategy.gcra(10, HOUR)).lease(Lease.builder().windowCoupled(true).build()).build());
        assertThrows(ConfigInvalidException.class, () -> Limiter.builder(window).mode(null));
        assertThrows(ConfigInvalidException.class, () -> Limiter.builder(window).lease(null));
        assertEquals(new Lease(100, 0, false, 10_000), Lease.DEFAULTS, "core's LeaseOptions::default()");
    }

    static void assertField(String field, org.junit.jupiter.api.function.Executable build) {
        ConfigInvalidException e = assertThrows(ConfigInvalidException.class, build);
        assertEquals("config_invalid", e.code());
        assertTrue(e.getMessage().contains(field), e.getMessage() + " should name " + field);
    }

    // --- Redis ------------------------------------------------------------------------------

    static String url() {
        String url = System.getProperty("throttlekit.test.redis");
        org.junit.jupiter.api.Assumptions.assumeTrue(url != null && !url.isEmpty(), "no Redis URL given (bindings-jvm/test.sh always gives one)");
        return url;
    }

    static String fresh() {
        return "jvmlease:" + UUID.randomUUID();
    }

    /** Script runs the server has counted ({@code INFO commandstats}), over a plain socket. */
    static long scriptCalls(String url) throws Exception {
        URI u = URI.create(url);
        try (Socket s = new Socket(u.getHost(), u.getPort())) {
            OutputStream out = s.getOutputStream();
            out.write("*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            StringBuilder header = new StringBuilder();
            for (int c; (c = in.read()) != '\n'; ) header.append((char) c);
            int len = Integer.parseInt(header.substring(1).trim());
            String body = new String(in.readNBytes(len), StandardCharsets.UTF_8);
            long calls = 0;
            for (String line : body.split("\r\n")) {
                for (String cmd : List.of("evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro")) {
                    String p = "cmdstat_" + cmd + ":calls=";
                    if (line.startsWith(p)) calls += Long.parseLong(line.substring(p.length(), line.indexOf(',')));
                }
            }
            return calls;
        }
    }

    @Test
    void leasedMakesFewerScriptCallsOnRedisSyncAndAsync() throws Exception {
        String url = url();
        try (RedisStore redis = RedisStore.builder(url).timeout(Duration.ofSeconds(2)).connect();
                Limiter strict = Limiter.builder(Strategy.fixedWindow(10_000, HOUR)).store(redis).prefix(fresh()).build();
                // On a clock standing still at the hour's start: on the system clock an hour
                // boundary mid-test would end the window-coupled leases early (one lease more).
                Limiter leased = Limiter.builder(Strategy.fixedWindow(10_000, HOUR)).store(redis).clock(RedisTest.thisHour())
                        .prefix(fresh()).lease(Lease.builder().batch(50).windowCoupled(true).build()).build()) {
            long c0 = scriptCalls(url);
            for (int i = 0; i < 200; i++) assertTrue(strict.check("hot").allowed());
            long strictCalls = scriptCalls(url) - c0;
            long c1 = scriptCalls(url);
            for (int i = 0; i < 100; i++) assertTrue(leased.check("hot").allowed());
            for (int i = 0; i < 100; i++) assertTrue(leased.checkAsync("hot").get().allowed());
            long leasedCalls = scriptCalls(url) - c1;
            assertTrue(strictCalls >= 200, "strict: one script call per decision, saw " + strictCalls);
            assertEquals(4, leased.tierStats().leases(), "200 decisions in leases of 50");
            assertEquals(4, leasedCalls, "one script call per lease");
        }
    }

    /**
     * Three limiters (three nodes) on one Redis key and one manual clock, fixed window 6 per
     * second, batch 3: per window at most {@code limit + N·(batch−1)} = 12 uncoupled, and exactly
     * the limit when coupled. Every other window the nodes lease just before the reset (two get
     * 3 units, the third is denied) and spend the rest after it: uncoupled credits outlive their
     * window (10 admitted in the next), coupled ones die at the reset.
     */
    @Test
    void aFleetOnOneRedisKeyStaysWithinTheBound() throws Exception {
        String url = url();
        for (boolean coupled : new boolean[] {false, true}) {
            String prefix = fresh();
            ManualClock clock = new ManualClock(1_000_000_000);
            List<RedisStore> stores = new ArrayList<>();
            List<Limiter> nodes = new ArrayList<>();
            for (int n = 0; n < 3; n++) {
                RedisStore r = RedisStore.builder(url).connect();
                stores.add(r);
                nodes.add(Limiter.builder(Strategy.fixedWindow(6, FLEET_WINDOW)).store(r).clock(clock).prefix(prefix)
                        .failPolicy(FailPolicy.FAIL_CLOSED).lease(Lease.builder().batch(3).windowCoupled(coupled).build()).build());
            }
            int[] admitted = fleetSchedule(clock, n -> nodes.get(n).check("hot").allowed());
            long leases = 0;
            for (Limiter node : nodes) {
                leases += node.tierStats().leases();
                node.close();
            }
            for (RedisStore r : stores) r.close();
            assertFleetBound(admitted, coupled, leases);
        }
    }

    /** The checks {@link #fleetSchedule} makes: 16 rounds of 3 nodes. */
    static final int FLEET_CHECKS = 48;

    /**
     * The fleet's window: 1000 s on the manual clock. Redis expires a window's key after the time
     * the manual clock leaves in it, in real time: with a window of one second the round at 99 %
     * of it gave the key 10 ms, and on a loaded machine it expired between two nodes' checks (12
     * admitted where 10 is the bound). Here that round leaves 10 s.
     */
    static final Duration FLEET_WINDOW = Duration.ofSeconds(1000);

    /**
     * The fleet's schedule on {@code clock} for three nodes ({@code check.test(n)}: whether node
     * {@code n} admits one request), over 4 windows of {@link #FLEET_WINDOW}: every window one
     * round just before the reset (at 99 %), odd windows six rounds early on (at 1 %) as well. The
     * admissions of each window.
     */
    static int[] fleetSchedule(ManualClock clock, java.util.function.IntPredicate check) {
        long window = FLEET_WINDOW.toMillis();
        int[] admitted = new int[4];
        for (int w = 0; w < admitted.length; w++) {
            long windowStart = (clock.nowMs() / window) * window;
            long early = windowStart + window / 100;
            long late = windowStart + window - window / 100;
            for (long at : new long[] {early, late}) {
                clock.set(at);
                int rounds = at == late ? 1 : w % 2 == 1 ? 6 : 0;
                for (int round = 0; round < rounds; round++) {
                    for (int n = 0; n < 3; n++) if (check.test(n)) admitted[w]++;
                }
            }
            clock.set(windowStart + window);
        }
        return admitted;
    }

    /**
     * The bound for limit 6, N = 3, batch 3 over {@link #fleetSchedule}'s windows: at most 12 per
     * window, reached as 10 uncoupled (4 credits carried over a reset, then the window's 6), exactly
     * 6 coupled; fewer leases than checks.
     */
    static void assertFleetBound(int[] admitted, boolean coupled, long leases) {
        int worst = 0;
        for (int w = 0; w < admitted.length; w++) {
            worst = Math.max(worst, admitted[w]);
            if (coupled) assertTrue(admitted[w] <= 6, "window " + w + ": " + admitted[w] + " admitted, coupled limit 6");
        }
        assertTrue(worst <= 6 + 3 * 2, "worst window " + worst + " > limit + N(batch-1) = 12");
        if (coupled) assertEquals(6, worst, "coupled: exactly the limit");
        else assertEquals(10, worst, "uncoupled: credits leased before a reset are spent after it");
        assertTrue(leases < FLEET_CHECKS, leases + " leases for " + FLEET_CHECKS + " checks");
    }

    @Test
    void cachedDenyOnRedisSkipsTheStoreForRepeatedDenials() throws Exception {
        String url = url();
        try (RedisStore redis = RedisStore.builder(url).connect();
                // On a clock standing still at the hour's start: on the system clock an hour
                // boundary mid-test would end the cached denial (and admit again).
                Limiter l = Limiter.builder(Strategy.fixedWindow(1, HOUR)).store(redis).clock(RedisTest.thisHour()).prefix(fresh())
                        .mode(Mode.CACHED_DENY).build()) {
            assertTrue(l.check("k").allowed());
            long c0 = scriptCalls(url);
            List<CompletableFuture<Decision>> denied = new ArrayList<>();
            for (int i = 0; i < 50; i++) assertFalse(l.check("k").allowed());
            for (int i = 0; i < 50; i++) denied.add(l.checkAsync("k"));
            for (CompletableFuture<Decision> f : denied) assertFalse(f.get().allowed());
            assertEquals(1, scriptCalls(url) - c0, "only the first denial asked the store");
            assertEquals(99, l.tierStats().localDenials());
        }
    }
}
