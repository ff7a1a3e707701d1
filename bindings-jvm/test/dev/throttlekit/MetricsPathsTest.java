package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every call counted once: N calls of fresh limiters, a multi limiter and a shaper down each
 * entry point (check, tryAcquire, checkMany, their futures; peek and forecast and theirs; the
 * leased mode; reserve and schedule and theirs) move the counters by exactly N, on memory, on
 * the Redis {@code throttlekit.test.redis} names and through the sentinels
 * {@code throttlekit.test.sentinels.password} names (test.sh starts both and sets them).
 */
class MetricsPathsTest {
    static final int N = 7;
    static final Duration HOUR = Duration.ofHours(1);

    interface Call<T> {
        void run(T subject) throws Exception;
    }

    static long errors(Metrics m) {
        return m.errors().values().stream().mapToLong(Long::longValue).sum();
    }

    /** Four an hour, bursts of 4: nothing refills while the test runs. */
    static Strategy strategy() {
        return Strategy.gcra(4, HOUR, 4);
    }

    static Limiter.Builder limiter(Store store, String prefix) {
        Limiter.Builder b = Limiter.builder(strategy()).prefix(prefix).metrics(true);
        return store == null ? b : b.store(store);
    }

    static void everyPathCountsOnce(Store store, String tag) throws Exception {
        long timed = store == null ? 0 : N;
        List<Call<Limiter>> checks = List.of(
                l -> l.check("k"),
                l -> l.check("k", 1),
                l -> l.tryAcquire("k"),
                l -> l.checkMany(List.of("k"), 1),
                l -> l.checkAsync("k").get(),
                l -> l.checkManyAsync(List.of("k"), 1).get());
        for (int i = 0; i < checks.size(); i++) {
            try (Limiter l = limiter(store, tag + ":check" + i).build()) {
                l.reset("k");
                for (int n = 0; n < N; n++) checks.get(i).run(l);
                Metrics m = l.metrics();
                assertEquals(List.of(4L, 3L, 0L, 0L, 0L, 0L, timed),
                        List.of(m.allowed(), m.denied(), m.peeks(), m.forecasts(), m.fallbackAllowed() + m.fallbackDenied(), errors(m),
                                m.latencyCount()),
                        tag + " check path " + i);
            }
        }
        try (Limiter l = limiter(store, tag + ":reads").build()) {
            for (int n = 0; n < N; n++) {
                l.peek("k");
                l.peekAsync("k").get();
                l.forecast("k", 1);
                l.forecastAsync("k", 1).get();
            }
            Metrics m = l.metrics();
            assertEquals(List.of(0L, 2L * N, 2L * N, 4 * timed), List.of(m.allowed() + m.denied(), m.peeks(), m.forecasts(), m.latencyCount()),
                    tag + " reads");
        }
        try (Limiter l = limiter(store, tag + ":leased").lease(Lease.builder().batch(2).build()).build()) {
            l.reset("k");
            for (int n = 0; n < N; n++) {
                l.check("k");
                l.checkAsync("k").get();
            }
            Metrics m = l.metrics();
            assertEquals(List.of(2L * N, 0L), List.of(m.allowed() + m.denied(), errors(m)), tag + " leased");
        }
        MultiLimiter.Builder mb = MultiLimiter.builder(Rule.ALL).dimension("a", strategy()).dimension("b", strategy())
                .prefix(tag + ":multi").metrics(true);
        try (MultiLimiter multi = (store == null ? mb : mb.store(store)).build()) {
            multi.reset(List.of("x", "y"));
            for (int n = 0; n < N; n++) {
                multi.check(List.of("x", "y"));
                multi.checkAsync(List.of("x", "y"), 1).get();
            }
            Metrics m = multi.metrics();
            assertEquals(List.of(4L, 2L * N - 4, 2 * timed), List.of(m.allowed(), m.denied(), m.latencyCount()), tag + " multi");
        }
        Shaper.Builder sb = Shaper.builder(1000, 60_000).prefix(tag + ":shaper").metrics(true);
        try (Shaper shaper = (store == null ? sb : sb.store(store)).build()) {
            for (int n = 0; n < N; n++) {
                shaper.reserve("x", 1);
                shaper.reserveAsync("x", 1).get();
                shaper.schedule("y", 1);
                shaper.scheduleAsync("y", 1).get();
            }
            Metrics m = shaper.metrics();
            assertEquals(List.of(4L * N, 0L, 4 * timed), List.of(m.allowed() + m.denied(), errors(m), m.latencyCount()), tag + " shaper");
        }
    }

    /** The HTTP edge the servlet filter uses counts through the limiter: a 429 and a 503 once each. */
    @Test
    void theHttpEdgeCountsA429AndA503Once() {
        String url = RedisDurableTest.property("throttlekit.test.redis");
        RedisStore redis = RedisStore.builder(url).timeout(Duration.ofSeconds(5)).connect();
        try (Limiter l = Limiter.builder(strategy()).store(redis).prefix("jvm-http:" + System.nanoTime()).failPolicy(FailPolicy.RAISE)
                .metrics(true).build()) {
            HttpLimiter edge = HttpLimiter.builder(l).build();
            List<Integer> got = new java.util.ArrayList<>();
            for (int i = 0; i < 5; i++) got.add(edge.check("192.0.2.1", List.of()).status());
            assertEquals(List.of(200, 200, 200, 200, 429), got);
            redis.close(); // the store can no longer answer: the fail policy (raise) makes it a 503
            assertEquals(503, edge.check("192.0.2.1", List.of()).status());
            Metrics m = l.metrics();
            assertEquals(List.of(4L, 1L, 0L, 1L, 1L), List.of(m.allowed(), m.denied(), m.fallbackAllowed() + m.fallbackDenied(),
                    m.errors().get("store_unavailable"), errors(m)));
        }
    }

    @Test
    void onMemory() throws Exception {
        everyPathCountsOnce(null, "jvm-memory");
    }

    @Test
    void onRedisAndUnderSentinel() throws Exception {
        String url = RedisDurableTest.property("throttlekit.test.redis");
        try (RedisStore redis = RedisStore.builder(url).timeout(Duration.ofSeconds(5)).connect()) {
            everyPathCountsOnce(redis, "jvm-node");
        }
        String[] sentinels = RedisDurableTest.property("throttlekit.test.sentinels.password").split(",");
        try (RedisStore redis = RedisStore.builder(sentinels).mode(RedisStore.Mode.SENTINEL).serviceName("tkmain")
                .sentinelPassword("spw").timeout(Duration.ofSeconds(5)).connect()) {
            everyPathCountsOnce(redis, "jvm-sentinel");
        }
    }
}
