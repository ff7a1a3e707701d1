package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Durable charges ({@code durableReplicas}, {@code durableTimeout}) and passworded sentinels
 * ({@code sentinelPassword}, {@code sentinelUsername}): the builder's options reach core, and
 * core's answers come back. The semantics are core's ({@code core/tests/redis_durable.rs},
 * {@code redis_sentinel.rs}); bindings-jvm/test.sh gives a private server with no replica
 * ({@code throttlekit.test.redis}) and a Sentinel setup whose sentinels require "spw"
 * ({@code throttlekit.test.sentinels.password}).
 */
class RedisDurableTest {
    static String property(String name) {
        String v = System.getProperty(name);
        Assumptions.assumeTrue(v != null && !v.isEmpty(), name + " is not set (bindings-jvm/test.sh always sets it)");
        return v;
    }

    static Limiter limiter(RedisStore store, FailPolicy policy) {
        // On a clock standing still at the hour's start: the checks wait for a replica's
        // acknowledgement (seconds on a loaded machine), and on the system clock an hour boundary
        // between them would start the count over.
        return Limiter.builder(Strategy.fixedWindow(3, Duration.ofHours(1))).store(store).clock(RedisTest.thisHour())
                .prefix("jvmdurable:" + UUID.randomUUID()).failPolicy(policy).build();
    }

    @Test
    void withoutAReplicaADurableChargeIsStoreUnavailableWithinItsTimeout() {
        String url = property("throttlekit.test.redis");
        try (RedisStore redis = RedisStore.builder(url).timeout(Duration.ofMillis(1000)).durableReplicas(1)
                        .durableTimeout(Duration.ofMillis(100)).connect();
                Limiter l = limiter(redis, FailPolicy.RAISE);
                Limiter open = limiter(redis, FailPolicy.FAIL_OPEN)) {
            long start = System.nanoTime();
            StoreUnavailableException e = assertThrows(StoreUnavailableException.class, () -> l.check("k"));
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(e.getMessage().contains("0 of 1 replicas") && e.getMessage().contains("durable_replicas"), e.getMessage());
            assertTrue(tookMs >= 100 && tookMs < 1100, "answered after " + tookMs + " ms");
            Decision d = open.check("k");
            assertTrue(d.allowed() && d.fallback());
        }
    }

    @Test
    void passwordedSentinelsNeedSentinelPasswordAndADurableChargeIsAdmittedWithAReplica() {
        String[] urls = property("throttlekit.test.sentinels.password").split(",");
        StoreUnavailableException e = assertThrows(StoreUnavailableException.class, () -> RedisStore.builder(urls)
                .mode(RedisStore.Mode.SENTINEL).serviceName("tkmain").timeout(Duration.ofSeconds(2)).connect());
        assertTrue(e.getMessage().contains("NOAUTH") || e.getMessage().contains("uthentication"), e.getMessage());
        assertThrows(StoreUnavailableException.class, () -> RedisStore.builder(urls).mode(RedisStore.Mode.SENTINEL)
                .serviceName("tkmain").timeout(Duration.ofSeconds(2)).sentinelPassword("nope").connect());
        // A generous WAIT timeout: on a loaded machine the replica's acknowledgement can take a while.
        try (RedisStore redis = RedisStore.builder(urls).mode(RedisStore.Mode.SENTINEL).serviceName("tkmain")
                        .timeout(Duration.ofSeconds(5)).sentinelUsername("default").sentinelPassword("spw")
                        .durableReplicas(1).durableTimeout(Duration.ofSeconds(4)).connect();
                Limiter l = limiter(redis, FailPolicy.RAISE)) {
            assertTrue(l.check("k").allowed());
            assertTrue(l.check("k").allowed());
            assertTrue(l.check("k").allowed());
            assertFalse(l.check("k").allowed());
        }
    }

    @Test
    void badDurableAndSentinelOptionsAreConfigInvalidNamingTheOption() {
        Object[][] cases = {
            {RedisStore.builder("redis://127.0.0.1:1").durableReplicas(65), "redis.durable_replicas"},
            {RedisStore.builder("redis://127.0.0.1:1").durableReplicas(-1), "redis.durable_replicas"},
            {RedisStore.builder("redis://127.0.0.1:1").durableReplicas(1).timeout(Duration.ofMillis(100))
                    .durableTimeout(Duration.ofMillis(100)), "redis.durable_timeout_ms"},
            {RedisStore.builder("redis://127.0.0.1:1").durableReplicas(1).deterministicReplay(true), "redis.durable_replicas"},
            {RedisStore.builder("redis://127.0.0.1:1").sentinelPassword("pw"), "redis.sentinel_password"},
            {RedisStore.builder("redis://127.0.0.1:1").mode(RedisStore.Mode.SENTINEL).serviceName("m").sentinelUsername("u"),
                    "redis.sentinel_password"},
        };
        for (Object[] c : cases) {
            ConfigInvalidException e = assertThrows(ConfigInvalidException.class, () -> ((RedisStore.Builder) c[0]).connect());
            assertTrue(e.getMessage().contains((String) c[1]), e.getMessage() + " should name " + c[1]);
        }
        assertThrows(ConfigInvalidException.class, () -> RedisStore.builder("redis://127.0.0.1:1").durableTimeout(Duration.ofNanos(1500)));
        assertThrows(ConfigInvalidException.class, () -> RedisStore.builder("redis://127.0.0.1:1").sentinelPassword(null));
    }
}
