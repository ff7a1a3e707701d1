package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import dev.throttlekit.internal.Native;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Hostile arguments and lifecycles: every one is a coded exception, and the JVM lives on. */
class HostileTest {
    private static Limiter limiter() {
        return Limiter.builder(Strategy.gcra(10, Duration.ofSeconds(1))).build();
    }

    @Test
    void badCostsAreConfigInvalid() {
        try (Limiter l = limiter()) {
            for (long bad : new long[] {0, -1, Long.MIN_VALUE, Long.MAX_VALUE, (1L << 53) + 1}) {
                ConfigInvalidException e = assertThrows(ConfigInvalidException.class, () -> l.check("k", bad), "cost " + bad);
                assertTrue(e.getMessage().contains("cost"), e.getMessage());
                assertThrows(ConfigInvalidException.class, () -> l.tryAcquire("k", bad));
                assertThrows(ConfigInvalidException.class, () -> l.forecast("k", bad));
            }
            for (double bad : new double[] {Double.NaN, Double.POSITIVE_INFINITY, -1, 0, 1.5, 1e300}) {
                assertThrows(ConfigInvalidException.class, () -> Numbers.costFromDouble(bad), "cost " + bad);
            }
            assertThrows(ConfigInvalidException.class, () -> Numbers.nowFromDouble(Double.NaN));
            assertEquals(3, Numbers.costFromDouble(3.0));
        }
    }

    @Test
    void keysEmptyHugeAndNull() {
        try (Limiter l = limiter()) {
            // The empty key is a key like any other in core.
            assertTrue(l.check("").allowed());
            String mb = "x".repeat(1 << 20);
            assertThrows(ConfigInvalidException.class, () -> l.check(mb));
            assertThrows(ConfigInvalidException.class, () -> l.tryAcquire(mb + "é"));
            assertThrows(ConfigInvalidException.class, () -> l.check(null));
            assertThrows(ConfigInvalidException.class, () -> l.checkMany(java.util.Arrays.asList("a", null), 1));
            assertThrows(ConfigInvalidException.class, () -> l.checkMany(null, 1));
            // A lone surrogate encodes as '?', as String.getBytes does.
            assertEquals(l.check("\uD800").remaining() - 1, l.check("?").remaining());
            // The thread's buffer grew for the 1 MB key and still works for short ones.
            assertTrue(l.check("after").allowed());
        }
        Limiter unbounded = Limiter.builder(Strategy.gcra(10, Duration.ofSeconds(1)))
                .store(MemoryStore.builder().maxKeyLength(Long.MAX_VALUE).build()).build();
        assertTrue(unbounded.check("y".repeat(1 << 20)).allowed());
    }

    @Test
    void callsAfterCloseAreStoreUnavailable() {
        Limiter l = limiter();
        l.check("k");
        l.close();
        l.close(); // idempotent
        StoreUnavailableException e = assertThrows(StoreUnavailableException.class, () -> l.check("k"));
        assertTrue(e.getMessage().contains("closed"));
        assertThrows(StoreUnavailableException.class, () -> l.tryAcquire("k"));
        assertThrows(StoreUnavailableException.class, () -> l.peek("k"));
        assertThrows(StoreUnavailableException.class, () -> l.reset("k"));
        assertThrows(StoreUnavailableException.class, () -> l.checkMany(List.of("k"), 1));
        assertThrows(StoreUnavailableException.class, l::metrics);
        var f = l.checkAsync("k");
        assertTrue(f.isCompletedExceptionally());

        MemoryStore store = MemoryStore.create();
        Limiter on = Limiter.builder(Strategy.gcra(1, Duration.ofSeconds(1))).store(store).build();
        store.close();
        assertThrows(StoreUnavailableException.class, store::size);
        assertTrue(on.check("still-works").allowed(), "a limiter keeps its own reference to the store's state");
        assertThrows(StoreUnavailableException.class, () -> Limiter.builder(Strategy.gcra(1, Duration.ofSeconds(1))).store(store).build());

        MultiLimiter m = MultiLimiter.builder(Rule.ALL).dimension("a", Strategy.gcra(1, Duration.ofSeconds(1))).build();
        m.close();
        assertThrows(StoreUnavailableException.class, () -> m.check(List.of("x")));
        Shaper s = Shaper.builder(1, 10.0).build();
        s.close();
        assertThrows(StoreUnavailableException.class, () -> s.reserve("x", 1));
    }

    @Test
    void closeRacingChecksNeverCrashes() throws Exception {
        for (int round = 0; round < 20; round++) {
            Limiter l = limiter();
            Thread[] threads = new Thread[4];
            int[] errors = new int[1];
            for (int t = 0; t < threads.length; t++) {
                threads[t] = new Thread(() -> {
                    for (int i = 0; i < 2000; i++) {
                        try {
                            l.tryAcquire("k" + (i % 7));
                        } catch (StoreUnavailableException e) {
                            synchronized (errors) {
                                errors[0]++;
                            }
                        }
                    }
                });
                threads[t].start();
            }
            l.close();
            for (Thread t : threads) t.join();
        }
    }

    @Test
    void wrongKeyCountForAMultiLimiter() {
        try (MultiLimiter m = MultiLimiter.builder(Rule.ALL).dimension("a", Strategy.gcra(1, Duration.ofSeconds(1)))
                .dimension("b", Strategy.gcra(1, Duration.ofSeconds(1))).build()) {
            assertThrows(ConfigInvalidException.class, () -> m.check(List.of("only-one")));
            assertThrows(ConfigInvalidException.class, () -> m.check(List.of("a", "b", "c")));
            assertThrows(ConfigInvalidException.class, () -> m.check(List.of("a", "b"), 0));
        }
    }

    @Test
    void aPanicArrivesAsAnInternalException() {
        InternalException e = assertThrows(InternalException.class, Native::panicForTest);
        assertEquals("internal", e.code());
        assertTrue(e.getMessage().contains("panic"));
        try (Limiter l = limiter()) {
            assertTrue(l.check("alive").allowed(), "the JVM and the library carry on");
        }
    }

    @Test
    void randomArgumentsGiveDecisionsOrCodedExceptions() {
        Random r = new Random(21);
        try (Limiter l = limiter()) {
            for (int i = 0; i < 20_000; i++) {
                long cost = switch (r.nextInt(4)) {
                    case 0 -> r.nextLong();
                    case 1 -> r.nextInt(20) - 5;
                    case 2 -> 1L << r.nextInt(63);
                    default -> 1;
                };
                StringBuilder key = new StringBuilder();
                int n = r.nextInt(300);
                for (int j = 0; j < n; j++) key.append((char) r.nextInt(0x10000));
                try {
                    Decision d = l.check(key.toString(), cost);
                    assertTrue(d.remaining() >= 0);
                } catch (ThrottleKitException e) {
                    assertEquals("config_invalid", e.code());
                }
            }
        }
        for (int i = 0; i < 2000; i++) {
            long limit = r.nextLong() >> r.nextInt(64);
            double period = switch (r.nextInt(3)) {
                case 0 -> Double.longBitsToDouble(r.nextLong());
                case 1 -> -r.nextDouble();
                default -> r.nextDouble() * 1e9;
            };
            try {
                Strategy.tokenBucket(limit, period);
            } catch (ThrottleKitException e) {
                assertEquals("config_invalid", e.code());
            }
        }
    }

    @Test
    void exceptionsAreOneHierarchy() {
        ThrottleKitException e = ThrottleKitException.of(4, "full", 12);
        assertInstanceOf(QueueFullException.class, e);
        assertEquals(Duration.ofMillis(12), e.retryAfter().orElseThrow());
        assertEquals("not_implemented", ThrottleKitException.of(5, "x", -1).code());
        assertTrue(ThrottleKitException.of(1, "x", -1).retryAfter().isEmpty());
    }
}
