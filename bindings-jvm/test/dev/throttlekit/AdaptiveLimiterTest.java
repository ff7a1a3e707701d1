package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The adaptive concurrency limiter: options, admissions, permits, waiting, partitions, metrics. */
class AdaptiveLimiterTest {
    private static AdaptiveLimiter fixed(int limit) {
        return AdaptiveLimiter.builder("fixed").initialLimit(limit).build();
    }

    @Test
    void badOptionsAreConfigInvalidNamingTheField() {
        Map<String, Runnable> builds = Map.of(
                "initialLimit", () -> AdaptiveLimiter.builder().initialLimit(0).build(),
                "partitions", () -> AdaptiveLimiter.builder().partition("live", 90).partition("batch", 20).build(),
                "backoff", () -> AdaptiveLimiter.builder("vegas").backoff(0.5).build(),
                "gradient2", () -> AdaptiveLimiter.builder("nope").build()); // the message lists the algorithms
        builds.forEach((field, build) -> {
            ConfigInvalidException e = assertThrows(ConfigInvalidException.class, build::run);
            assertEquals("config_invalid", e.code());
            assertTrue(e.getMessage().contains(field), e.getMessage());
        });
        assertThrows(ConfigInvalidException.class, () -> AdaptiveLimiter.builderFromJson("{\"limit\":3}").build());
        assertThrows(ConfigInvalidException.class, () -> Outcome.parse("timeout"));
        assertEquals(Outcome.DROPPED, Outcome.parse("dropped"));
    }

    /** docs/adaptive.md's Java example: shed when full, report how the request ended. */
    static int handle(AdaptiveLimiter limiter, BooleanSupplier callTheService, Map<String, String> headers) {
        Admission a = limiter.tryAcquire("live");
        if (a instanceof Rejection r) {
            headers.put("Retry-After", Long.toString(r.retryAfterSecs()));
            return 503;
        }
        try (Permit permit = (Permit) a) { // closed without an outcome (an exception): ignore
            boolean ok = callTheService.getAsBoolean();
            permit.release(ok ? Outcome.SUCCESS : Outcome.DROPPED);
            return ok ? 200 : 504;
        }
    }

    @Test
    void theDocsExample() {
        try (AdaptiveLimiter limiter = AdaptiveLimiter.builder("gradient2").initialLimit(1).partition("live", 90).build()) {
            Map<String, String> headers = new HashMap<>();
            assertEquals(200, handle(limiter, () -> true, headers));
            assertEquals(504, handle(limiter, () -> false, headers));
            Permit held = (Permit) limiter.tryAcquire("live");
            assertEquals(503, handle(limiter, () -> true, headers));
            assertEquals("1", headers.get("Retry-After"));
            held.close();
            AdaptiveMetrics m = limiter.metrics();
            assertEquals(1, m.succeeded());
            assertEquals(1, m.dropped());
            assertEquals(1, m.rejected());
        }
    }

    @Test
    void aFullLimitIsARejectionAndPermitsReleaseOnce() {
        try (AdaptiveLimiter l = fixed(2)) {
            Admission a = l.tryAcquire();
            Admission b = l.tryAcquire();
            assertTrue(a.granted() && b.granted());
            Admission c = l.tryAcquire();
            Rejection r = assertInstanceOf(Rejection.class, c);
            assertEquals(new Rejection(2, 2, 1000, 1), r);
            assertTrue(c.permit().isEmpty());

            Permit pa = a.permit().orElseThrow();
            assertTrue(pa.release(Outcome.SUCCESS));
            assertFalse(pa.release(Outcome.DROPPED), "twice is harmless");
            pa.close();
            assertTrue(pa.isReleased());

            Permit pb = (Permit) b;
            ConfigInvalidException e = assertThrows(ConfigInvalidException.class, () -> pb.release(Outcome.SUCCESS, Duration.ofNanos(-1)));
            assertTrue(e.getMessage().contains("rtt"), e.getMessage());
            assertEquals(1, l.inflight(), "a refused release leaves the permit held");
            try (pb) {
                // closed without an outcome: ignore
            }
            AdaptiveMetrics m = l.metrics();
            assertEquals(0, m.inflight());
            assertEquals(2, m.acquired());
            assertEquals(1, m.rejected());
            assertEquals(1, m.succeeded());
            assertEquals(1, m.ignored());
            assertEquals(0, m.leaked());
            assertFalse(m.slowStart());
            assertThrows(ConfigInvalidException.class, () -> l.tryAcquire("batch"));
            assertThrows(NotImplementedException.class, () -> l.advanceVirtualClock(Duration.ofMillis(1)));
        }
    }

    @Test
    void tryWithResourcesReleasesOnException() {
        try (AdaptiveLimiter l = fixed(1)) {
            assertThrows(IllegalStateException.class, () -> {
                try (Permit p = (Permit) l.tryAcquire()) {
                    throw new IllegalStateException("the service failed");
                }
            });
            assertEquals(0, l.inflight());
            assertEquals(1, l.metrics().ignored());
        }
    }

    @Test
    void anUnreleasedPermitIsCollectedAsALeak() throws InterruptedException {
        try (AdaptiveLimiter l = fixed(4)) {
            assertTrue(l.tryAcquire().granted()); // dropped on the floor
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (l.inflight() > 0 && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(1);
            }
            AdaptiveMetrics m = l.metrics();
            assertEquals(0, m.inflight());
            assertEquals(1, m.leaked());
        }
    }

    @Test
    void virtualClockMeasuresTheRoundTrip() {
        try (AdaptiveLimiter l = AdaptiveLimiter.builder("fixed").initialLimit(1).windowMinSamples(1).virtualClock().build()) {
            Permit p = (Permit) l.tryAcquire();
            l.advanceVirtualClock(Duration.ofMillis(7));
            assertTrue(p.release(Outcome.SUCCESS));
            assertEquals(7000, l.metrics().latencyUs());
            assertEquals(1, l.metrics().windows());
        }
    }

    @Test
    void acquireWaitsForAFreedPermitAndTimesOut() throws Exception {
        try (AdaptiveLimiter l = fixed(1)) {
            Permit held = (Permit) l.tryAcquire();
            long t0 = System.nanoTime();
            Rejection r = assertInstanceOf(Rejection.class, l.acquire(Duration.ofMillis(50)));
            assertTrue(System.nanoTime() - t0 >= 49_000_000L);
            assertEquals(1, r.inflight());
            Thread t = new Thread(() -> {
                try {
                    Thread.sleep(30);
                } catch (InterruptedException e) {
                    return;
                }
                held.release(Outcome.IGNORE);
            });
            t.start();
            try (Permit p = (Permit) l.acquire(Duration.ofSeconds(10))) {
                assertEquals(1, l.inflight());
                p.release(Outcome.SUCCESS);
            }
            t.join();
        }
    }

    @Test
    void partitionsKeepTheirShareWhenTheLimitIsFull() {
        try (AdaptiveLimiter l = AdaptiveLimiter.builder("fixed").initialLimit(10).partition("live", 80).partition("batch", 20).build()) {
            List<Permit> held = new ArrayList<>();
            held.add((Permit) l.tryAcquire("live"));
            held.add((Permit) l.tryAcquire("batch"));
            held.add((Permit) l.tryAcquire("batch"));
            Rejection r = assertInstanceOf(Rejection.class, l.tryAcquire("batch"));
            assertEquals(3, r.inflight(), "live is active: its unused 7 are kept for it");
            for (int i = 0; i < 7; i++) held.add((Permit) l.tryAcquire("live"));
            assertEquals(10, l.inflight());
            held.forEach(Permit::close);
        }
    }

    @Test
    void inflightNeverExceedsTheLimitUnder8Threads() throws Exception {
        try (AdaptiveLimiter l = fixed(3)) {
            AtomicLong max = new AtomicLong();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                Thread th = new Thread(() -> {
                    for (int i = 0; i < 2000; i++) {
                        if (l.tryAcquire() instanceof Permit p) {
                            try (p) {
                                max.accumulateAndGet(l.inflight(), Math::max);
                                p.release(Outcome.SUCCESS);
                            }
                        }
                    }
                });
                threads.add(th);
                th.start();
            }
            for (Thread th : threads) th.join();
            assertTrue(max.get() <= 3, "max in flight " + max.get());
            assertEquals(0, l.inflight());
        }
    }
}
