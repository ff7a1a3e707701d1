package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.time.DayOfWeek;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The memory-store API: every strategy, the calls, their results, ManualClock, metrics. */
class LimiterTest {
    @Test
    void quickStartDecision() {
        try (Limiter l = Limiter.builder(Strategy.gcra(100, Duration.ofMinutes(1), 10)).build()) {
            Decision d = l.check("user:42");
            assertTrue(d.allowed());
            assertEquals(10, d.limit());
            assertEquals(9, d.remaining());
            assertEquals(Duration.ZERO, d.retryAfter());
            assertFalse(d.fallback());
        }
    }

    @Test
    void everyStrategyBuildsAndReportsItsLimit() {
        assertEquals(5, Strategy.gcra(10, Duration.ofSeconds(1), 5).limit());
        assertEquals(7, Strategy.tokenBucket(7, 1.5).limit());
        assertEquals(3, Strategy.fixedWindow(3, Duration.ofSeconds(1)).limit());
        assertEquals(4, Strategy.slidingWindow(4, Duration.ofSeconds(1)).limit());
        assertEquals(4, Strategy.slidingWindow(4, Duration.ofSeconds(1), 5).limit());
        assertEquals(6, Strategy.slidingWindowLog(6, Duration.ofSeconds(1)).limit());
        assertEquals(8, Strategy.quota(8, Strategy.QuotaCadence.CALENDAR_MONTH).limit());
        Strategy q = Strategy.quotaBuilder(9, Strategy.QuotaCadence.CALENDAR_WEEK).offsetMinutes(-300).weekStartsOn(DayOfWeek.SUNDAY).build();
        assertEquals("quota", q.kind());
        assertTrue(q.toJson().contains("\"weekStartsOn\":0"), q.toJson());
        assertEquals(Strategy.fromJson(q.toJson()), q);
        assertEquals("gcra", Strategy.fromJson("{\"kind\":\"gcra\",\"options\":{\"limit\":2,\"periodMs\":1000}}").kind());
    }

    @Test
    void badOptionsAreConfigInvalidWithCoresMessage() {
        ConfigInvalidException e = assertThrows(ConfigInvalidException.class, () -> Strategy.gcra(0, Duration.ofSeconds(1)));
        assertEquals("config_invalid", e.code());
        assertTrue(e.getMessage().contains("limit"), e.getMessage());
        assertThrows(ConfigInvalidException.class, () -> Strategy.tokenBucket(1, Double.NaN));
        assertThrows(ConfigInvalidException.class, () -> Strategy.tokenBucket(1, -1));
        assertThrows(ConfigInvalidException.class, () -> Strategy.fixedWindow(1, Duration.ofNanos(1500)));
        assertThrows(ConfigInvalidException.class, () -> Strategy.quotaBuilder(1, Strategy.QuotaCadence.FIXED).build());
        assertThrows(ConfigInvalidException.class, () -> Strategy.fromJson("{\"kind\":\"gcra\",\"options\":{\"limit\":1,\"periodMs\":1,\"bogus\":1}}"));
        assertThrows(ConfigInvalidException.class, () -> Strategy.fromJson("not json"));
        assertThrows(ConfigInvalidException.class, () -> Strategy.gcra(1, null));
        assertThrows(ConfigInvalidException.class, () -> Limiter.builder(null));
    }

    @Test
    void peekForecastResetAndCheckMany() {
        ManualClock clock = new ManualClock(1_000_000);
        try (Limiter l = Limiter.builder(Strategy.fixedWindow(3, Duration.ofSeconds(10))).clock(clock).prefix("t").build()) {
            assertEquals(3, l.peek("a").remaining());
            assertTrue(l.forecast("a", 3).allowed());
            assertFalse(l.forecast("a", 4).allowed());
            assertEquals(3, l.peek("a").remaining(), "forecast consumes nothing");
            l.check("a", 2);
            assertEquals(1, l.peek("a").remaining());
            Decision denied = l.check("a", 2);
            assertFalse(denied.allowed());
            assertEquals(1_010_000 - 1_000_000, denied.retryAfterMs());
            assertEquals(1_010_000, denied.resetAtMs());
            assertThrows(RateLimitExceededException.class, denied::orThrow);
            l.reset("a");
            assertEquals(3, l.peek("a").remaining());
            List<Decision> many = l.checkMany(List.of("x", "y", "x"), 2);
            assertEquals(List.of(true, true, false), many.stream().map(Decision::allowed).toList());
            assertEquals("t", l.prefix());
        }
    }

    @Test
    void manualClockDrivesDecisionsAndExpiry() {
        ManualClock clock = new ManualClock(0);
        MemoryStore store = MemoryStore.create();
        try (Limiter l = Limiter.builder(Strategy.gcra(1, Duration.ofSeconds(1))).store(store).clock(clock).build()) {
            assertTrue(l.tryAcquire("k"));
            assertFalse(l.tryAcquire("k"));
            assertEquals(1000, clock.advance(Duration.ofSeconds(1)));
            assertTrue(l.tryAcquire("k"));
            clock.set(500);
            assertEquals(500, clock.nowMs());
            assertThrows(ConfigInvalidException.class, () -> clock.advance(-1));
            assertEquals(1, store.size());
        }
    }

    @Test
    void boundedMemoryStoreEvicts() {
        MemoryStore store = MemoryStore.builder().maxKeys(64).maxKeyLength(32).build();
        try (Limiter l = Limiter.builder(Strategy.gcra(5, Duration.ofSeconds(1))).store(store).build()) {
            for (int i = 0; i < 5000; i++) l.check("k" + i);
            assertTrue(store.evictions() > 0, "evictions " + store.evictions());
            assertTrue(store.size() <= 5000);
            assertThrows(ConfigInvalidException.class, () -> l.check("x".repeat(40)));
        }
        assertThrows(ConfigInvalidException.class, () -> MemoryStore.builder().maxKeys(0).build());
        assertThrows(ConfigInvalidException.class, () -> MemoryStore.builder().maxKeyLength(-5).build());
    }

    @Test
    void metricsCountChecks() {
        try (Limiter l = Limiter.builder(Strategy.gcra(2, Duration.ofHours(1))).metrics(true).build()) {
            for (int i = 0; i < 5; i++) l.check("m");
            assertThrows(ConfigInvalidException.class, () -> l.check("m", 0));
            Metrics m = l.metrics();
            assertTrue(m.enabled());
            assertEquals(2, m.allowed());
            assertEquals(3, m.denied());
            assertEquals(5, m.errors().size());
            assertEquals(m.latencyBoundsUs().size(), m.latencyCounts().size());
        }
        try (Limiter off = Limiter.builder(Strategy.gcra(2, Duration.ofHours(1))).build()) {
            off.check("m");
            assertFalse(off.metrics().enabled());
            assertEquals(0, off.metrics().allowed());
        }
    }

    @Test
    void unicodeKeysAreDistinctAndRoundTrip() {
        try (Limiter l = Limiter.builder(Strategy.gcra(1, Duration.ofHours(1))).build()) {
            assertTrue(l.tryAcquire("é"));
            assertTrue(l.tryAcquire("e"));
            assertTrue(l.tryAcquire("😀"));
            assertFalse(l.tryAcquire("😀"));
            assertTrue(l.tryAcquire("\u4e2d"));
            assertFalse(l.tryAcquire("\u4e2d"));
        }
    }

    @Test
    void multiLimiterAllAndAny() {
        ManualClock clock = new ManualClock(0);
        try (MultiLimiter m = MultiLimiter.builder(Rule.ALL)
                .dimension("ip", Strategy.fixedWindow(2, Duration.ofSeconds(10)))
                .dimension("tenant", Strategy.fixedWindow(100, Duration.ofSeconds(10)), 10)
                .clock(clock).build()) {
            MultiDecision d = m.check(List.of("1.2.3.4", "acme"));
            assertTrue(d.allowed());
            assertEquals(2, d.dimensions().size());
            assertEquals(90, d.dimensions().get(1).remaining());
            m.check(List.of("1.2.3.4", "acme"));
            MultiDecision denied = m.check(List.of("1.2.3.4", "acme"));
            assertFalse(denied.allowed());
            assertEquals("ip", denied.binding());
            assertEquals(80, m.check(List.of("5.6.7.8", "acme")).dimensions().get(1).remaining() + 10, "the denied request committed nothing");
            m.reset(List.of("1.2.3.4", "acme"));
            assertTrue(m.check(List.of("1.2.3.4", "acme")).allowed());
            assertEquals(List.of("ip", "tenant"), m.dimensions());
        }
        assertThrows(ConfigInvalidException.class, () -> MultiLimiter.builder(Rule.ANY).build());
        assertThrows(ConfigInvalidException.class, () -> MultiLimiter.builder(Rule.ANY)
                .dimension("a", Strategy.gcra(1, Duration.ofSeconds(1))).dimension("a", Strategy.gcra(1, Duration.ofSeconds(1))).build());
    }

    @Test
    void shaperReservesAndRefusesPastTheQueue() {
        ManualClock clock = new ManualClock(0);
        try (Shaper s = Shaper.builder(10, Duration.ofMillis(250)).clock(clock).build()) {
            assertEquals(new Reservation(true, 0), s.reserve("q", 1));
            assertEquals(new Reservation(true, 100), s.reserve("q", 1));
            assertEquals(200, s.reserve("q", 1).delay().toMillis());
            Reservation r = s.reserve("q", 1);
            assertFalse(r.accepted(), "a 300 ms wait is past the 250 ms queue");
            assertEquals(50, r.delayMs());
            QueueFullException e = assertThrows(QueueFullException.class, () -> s.schedule("q", 1));
            assertTrue(e.retryAfter().isPresent());
            s.reset("q");
            assertEquals(0, s.schedule("q", 1).delayMs());
        }
        assertThrows(ConfigInvalidException.class, () -> Shaper.builder(0, Duration.ZERO).build());
        assertThrows(ConfigInvalidException.class, () -> Shaper.builder(Double.NaN, 1.0).build());
    }

    @Test
    void memoryFuturesComplete() throws Exception {
        try (Limiter l = Limiter.builder(Strategy.gcra(1, Duration.ofHours(1))).build()) {
            assertTrue(l.checkAsync("f").get().allowed());
            assertFalse(l.checkAsync("f").get().allowed());
            assertEquals(2, l.checkManyAsync(List.of("g", "h"), 1).get().size());
            var failed = l.checkAsync("f", -1);
            var e = assertThrows(java.util.concurrent.ExecutionException.class, failed::get);
            assertInstanceOf(ConfigInvalidException.class, e.getCause());
        }
    }

    /** Calls a dependent stage starts on the completing runtime thread (runtime.rs: they join the completing hub, in the same turn). */
    @Test
    void callsStartedInsideACompletionAllComplete() throws Exception {
        try (Limiter l = Limiter.builder(Strategy.gcra(1000, Duration.ofHours(1))).build()) {
            java.util.concurrent.atomic.AtomicInteger allowed = new java.util.concurrent.atomic.AtomicInteger();
            // 4 chains of 600 checks, each started by the stage of the one before: 1000 admitted in all.
            List<java.util.concurrent.CompletableFuture<Void>> chains = new java.util.ArrayList<>();
            for (int c = 0; c < 4; c++) chains.add(chain(l, 600, allowed));
            java.util.concurrent.CompletableFuture.allOf(chains.toArray(java.util.concurrent.CompletableFuture[]::new)).get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(1000, allowed.get());
            // A stage that starts two calls and a failing one: each completes on its own.
            var fan = l.checkAsync("fan").thenCompose(d -> {
                var a = l.checkAsync("fan:a");
                var b = l.peekAsync("fan:b");
                var bad = l.checkAsync("fan:c", -1);
                return a.thenCombine(b, (x, y) -> x.allowed() && y.remaining() == y.limit())
                        .thenCombine(bad.handle((v, e) -> e instanceof ConfigInvalidException), Boolean::logicalAnd);
            });
            assertTrue(fan.get(30, java.util.concurrent.TimeUnit.SECONDS));
        }
    }

    private static java.util.concurrent.CompletableFuture<Void> chain(Limiter l, int left, java.util.concurrent.atomic.AtomicInteger allowed) {
        if (left == 0) return java.util.concurrent.CompletableFuture.completedFuture(null);
        return l.checkAsync("chain").thenCompose(d -> {
            if (d.allowed()) allowed.incrementAndGet();
            return chain(l, left - 1, allowed);
        });
    }

    @Test
    void httpFieldsComeFromCore() {
        String lines = Http.headersJson("{\"nowMs\":1700000000000,\"limits\":[{\"strategy\":{\"kind\":\"gcra\",\"options\":{\"limit\":10,\"periodMs\":60000}},"
                + "\"decision\":{\"allowed\":true,\"limit\":10,\"remaining\":9,\"resetAt\":1700000006000,\"retryAfterMs\":0}}]}");
        assertTrue(lines.startsWith("[["), lines);
        assertTrue(lines.toLowerCase().contains("ratelimit"), lines);
        assertEquals("203.0.113.7", Http.clientKeyJson(
                "{\"peer\":\"10.0.0.1\",\"headers\":[[\"X-Forwarded-For\",\"6.6.6.6, 203.0.113.7\"]],\"options\":{\"trustedProxies\":[\"10.0.0.0/8\"]}}"));
        assertThrows(ConfigInvalidException.class, () -> Http.headersJson("{"));
    }

    @Test
    void versionAndWhereTheLibraryCameFrom() {
        assertTrue(ThrottleKit.version().matches("\\d+\\.\\d+\\.\\d+.*"), ThrottleKit.version());
        assertTrue(ThrottleKit.nativeLibrary().endsWith("libthrottlekit_jvm.so"), ThrottleKit.nativeLibrary());
    }
}
