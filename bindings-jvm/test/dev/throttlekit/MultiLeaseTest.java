package dev.throttlekit;

import static dev.throttlekit.LeaseTest.assertField;
import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The two-tier modes on {@link MultiLimiter} (issue #23, {@code docs/leasing.md} "Multi limiters"):
 * coded errors for bad options, fewer store calls when leased (its {@link TierStats}), credits given
 * back by {@code releaseLeases} and {@code close}, and a fleet of three within the bound on memory
 * and on Redis (test.sh's server; script calls counted as {@link LeaseTest} counts them).
 */
class MultiLeaseTest {
    static final Duration HOUR = Duration.ofHours(1);

    /** Per IP 100 and per tenant 100 an hour, both fixed windows (so coupling is allowed). */
    static MultiLimiter.Builder ipAndTenant(Store store) {
        return MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(100, HOUR))
                .dimension("tenant", Strategy.fixedWindow(100, HOUR)).store(store);
    }

    static final List<String> KEYS = List.of("10.0.0.1", "acme");

    @Test
    void badOptionsAreConfigInvalidNamingTheField() {
        Supplier<MultiLimiter.Builder> b = () -> ipAndTenant(null);
        assertField("lease.lowWater", () -> b.get().lease(Lease.builder().batch(5).lowWater(1).build()).build());
        assertField("lease.lowWater", () -> b.get().mode(Mode.LEASED).lease(Lease.builder().lowWater(-1).build()).build());
        assertField("lease.batch", () -> b.get().lease(Lease.builder().batch(0).build()).build());
        assertField("lease.maxKeys", () -> b.get().mode(Mode.CACHED_DENY).lease(Lease.builder().maxKeys(0).build()).build());
        assertField("lease.windowCoupled", () -> MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(10, HOUR))
                .dimension("user", Strategy.gcra(10, HOUR)).lease(Lease.builder().windowCoupled(true).build()).build());
        assertThrows(ConfigInvalidException.class, () -> b.get().mode(null));
        assertThrows(ConfigInvalidException.class, () -> b.get().lease(null));
        // lowWater 0 (the default) is accepted, and a lease alone means LEASED.
        try (MultiLimiter m = b.get().lease(Lease.builder().batch(5).build()).build()) {
            assertEquals(Mode.LEASED, m.mode());
        }
    }

    @Test
    void strictIsTheDefaultAndCountsNothing() {
        try (MultiLimiter m = ipAndTenant(null).build()) {
            assertEquals(Mode.STRICT, m.mode());
            for (int i = 0; i < 5; i++) assertTrue(m.check(KEYS).allowed());
            assertEquals(new TierStats(0, 0, 0, 0, 0), m.tierStats());
            assertEquals(0, m.releaseLeases());
        }
    }

    /**
     * 18 requests leased in batches of 5: the same 18 admitted as a strict twin, 4 fused lease calls
     * (requests 1, 6, 11, 16) instead of 18, 14 admitted locally; the 2 credits left on each of the
     * two dimension keys go back to the store, which a strict limiter on it then sees.
     */
    @Test
    void leasedAdmitsLocallyWithFewerStoreCallsAndGivesCreditsBack() throws Exception {
        try (MemoryStore store = MemoryStore.builder().build();
                MultiLimiter leased = ipAndTenant(store).lease(Lease.builder().batch(5).build()).metrics(true).build();
                MultiLimiter strict = ipAndTenant(MemoryStore.builder().build()).build()) {
            for (int i = 0; i < 18; i++) {
                assertTrue(leased.check(KEYS).allowed());
                assertTrue(strict.check(KEYS).allowed());
            }
            TierStats s = leased.tierStats();
            assertEquals(4, s.leases(), s.toString());
            assertEquals(14, s.localAdmits(), s.toString());
            assertEquals(4, leased.releaseLeases(), "2 unspent credits on each dimension key");
            assertEquals(4, leased.tierStats().creditsReturned());
            assertEquals(0, leased.releaseLeases(), "nothing left to give back");
            // The store now holds the 18 spent units only: the next check sees 100 - 18 - 1.
            MultiLimiter peer = ipAndTenant(store).build();
            MultiDecision d = peer.check(KEYS);
            assertEquals(81, d.dimensions().get(0).remaining(), d.toString());
            assertEquals(81, d.dimensions().get(1).remaining(), d.toString());
            // The futures and the idle form.
            assertTrue(leased.check(KEYS).allowed());
            assertEquals(0, leased.releaseLeases(Duration.ofHours(2)), "nothing was idle that long");
            assertEquals(8, leased.releaseLeasesAsync().get(), "4 unspent credits on each key");
            assertEquals(0, leased.releaseLeasesAsync(Duration.ZERO).get());
            assertThrows(ConfigInvalidException.class, () -> leased.releaseLeases(Duration.ofMillis(-1)));
            ExecutionException e = assertThrows(ExecutionException.class, () -> leased.releaseLeasesAsync(null).get());
            assertInstanceOf(ConfigInvalidException.class, e.getCause());
        }
    }

    @Test
    void closeGivesCreditsBack() {
        try (MemoryStore store = MemoryStore.builder().build()) {
            MultiLimiter leased = ipAndTenant(store).lease(Lease.builder().batch(50).build()).build();
            MultiLimiter strict = ipAndTenant(store).build();
            assertTrue(leased.check(KEYS).allowed());
            assertEquals(49, strict.check(KEYS).dimensions().get(1).remaining(), "the lease took 50 units, strict 1");
            leased.close();
            // 1 leased + 2 strict spent: close gave the 49 unspent back.
            assertEquals(97, strict.check(KEYS).dimensions().get(1).remaining());
            assertThrows(StoreUnavailableException.class, () -> leased.check(KEYS));
            assertThrows(StoreUnavailableException.class, leased::releaseLeases);
            leased.close();
        }
    }

    @Test
    void cachedDenyAnswersARepeatedDenialLocally() {
        ManualClock clock = new ManualClock(1_000_000);
        try (MultiLimiter m = MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(2, Duration.ofSeconds(10)))
                .dimension("tenant", Strategy.fixedWindow(100, Duration.ofSeconds(10))).clock(clock).mode(Mode.CACHED_DENY).build()) {
            assertEquals(Mode.CACHED_DENY, m.mode());
            assertTrue(m.check(KEYS).allowed());
            assertTrue(m.check(KEYS).allowed());
            MultiDecision first = m.check(KEYS);
            assertFalse(first.allowed());
            assertEquals("ip", first.binding());
            for (int i = 0; i < 5; i++) assertFalse(m.check(KEYS).allowed());
            assertEquals(5, m.tierStats().localDenials());
            clock.advance(first.decision().retryAfterMs());
            assertTrue(m.check(KEYS).allowed(), "after the retry time the store decides again");
        }
    }

    /**
     * Three multi limiters (three nodes) on one store and one manual clock, each with its own IP and
     * one shared tenant limited to 6 a window, batch 3, on {@link LeaseTest#fleetSchedule}: uncoupled
     * credits leased before a reset are spent after it. Per window the tenant admits at most
     * {@code limit + N·(batch−1)} = 12 (10 reached) uncoupled, exactly the limit when coupled.
     */
    static void fleetStaysWithinTheBound(Supplier<Store> stores, String prefix) {
        for (boolean coupled : new boolean[] {false, true}) {
            ManualClock clock = new ManualClock(1_000_000_000);
            List<Store> opened = new ArrayList<>();
            List<MultiLimiter> nodes = new ArrayList<>();
            for (int n = 0; n < 3; n++) {
                Store s = stores.get();
                opened.add(s);
                nodes.add(MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(1000, LeaseTest.FLEET_WINDOW))
                        .dimension("tenant", Strategy.fixedWindow(6, LeaseTest.FLEET_WINDOW)).store(s).clock(clock)
                        .prefix(prefix + coupled).failPolicy(FailPolicy.FAIL_CLOSED)
                        .lease(Lease.builder().batch(3).windowCoupled(coupled).build()).build());
            }
            int[] admitted = LeaseTest.fleetSchedule(clock, n -> nodes.get(n).check(List.of("10.0.0." + n, "acme")).allowed());
            long leases = 0;
            for (MultiLimiter node : nodes) {
                leases += node.tierStats().leases();
                node.close();
            }
            // Each node's own Redis connection; the memory fleet shares one store, closed by its caller.
            for (Store s : opened) if (s instanceof RedisStore r) r.close();
            LeaseTest.assertFleetBound(admitted, coupled, leases);
            assertEquals(16, leases, "fused leases for the 48 checks");
        }
    }

    @Test
    void aFleetOnOneMemoryStoreStaysWithinTheBound() {
        try (MemoryStore shared = MemoryStore.builder().build()) {
            // One store for the three nodes: the stand-in for one Redis.
            fleetStaysWithinTheBound(() -> shared, "fleet");
        }
    }

    // --- Redis ------------------------------------------------------------------------------

    @Test
    void aFleetOnOneRedisTenantStaysWithinTheBound() {
        String url = LeaseTest.url();
        fleetStaysWithinTheBound(() -> RedisStore.builder(url).connect(), LeaseTest.fresh());
    }

    @Test
    void leasedMakesFewerScriptCallsOnRedisSyncAndAsync() throws Exception {
        String url = LeaseTest.url();
        try (RedisStore redis = RedisStore.builder(url).timeout(Duration.ofSeconds(2)).connect();
                MultiLimiter strict = MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(10_000, HOUR))
                        .dimension("tenant", Strategy.fixedWindow(10_000, HOUR)).store(redis).prefix(LeaseTest.fresh()).build();
                MultiLimiter leased = MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(10_000, HOUR))
                        .dimension("tenant", Strategy.fixedWindow(10_000, HOUR)).store(redis).prefix(LeaseTest.fresh())
                        // On a clock standing still at the hour's start: on the system clock an hour
                        // boundary mid-test would end the window-coupled leases early (one lease more).
                        .clock(RedisTest.thisHour())
                        .lease(Lease.builder().batch(50).windowCoupled(true).build()).build()) {
            long c0 = LeaseTest.scriptCalls(url);
            for (int i = 0; i < 200; i++) assertTrue(strict.check(KEYS).allowed());
            long strictCalls = LeaseTest.scriptCalls(url) - c0;
            long c1 = LeaseTest.scriptCalls(url);
            for (int i = 0; i < 100; i++) assertTrue(leased.check(KEYS).allowed());
            for (int i = 0; i < 100; i++) assertTrue(leased.checkAsync(KEYS, 1).get().allowed());
            long leasedCalls = LeaseTest.scriptCalls(url) - c1;
            assertTrue(strictCalls >= 200, "strict: one script call per decision, saw " + strictCalls);
            assertEquals(4, leased.tierStats().leases(), "200 decisions in fused leases of 50");
            assertEquals(196, leased.tierStats().localAdmits());
            assertEquals(4, leasedCalls, "one script call per fused lease");
            // Nothing unspent after 4 × 50: the give-back asks nothing of Redis.
            assertEquals(0, leased.releaseLeasesAsync().get());
        }
    }
}
