package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Allocation per call, counted by the JVM (ThreadMXBean): {@code tryAcquire} allocates nothing,
 * {@code check} only its {@code Decision}. Counts bytes, not time, so load cannot flake it.
 */
class AllocationTest {
    private static final com.sun.management.ThreadMXBean MX = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final int N = 200_000;

    static long allocated(Runnable body) {
        body.run(); // warm up: JIT-compile the path and grow the thread's buffer
        body.run();
        long before = MX.getCurrentThreadAllocatedBytes();
        body.run();
        return MX.getCurrentThreadAllocatedBytes() - before;
    }

    @Test
    void tryAcquireAllocatesNothing() {
        try (Limiter l = Limiter.builder(Strategy.gcra(1_000_000_000L, Duration.ofSeconds(1))).build()) {
            String[] keys = {"user:1", "user:2", "usér:3"};
            long bytes = allocated(() -> {
                for (int i = 0; i < N; i++) l.tryAcquire(keys[i % 3], 1);
            });
            // Zero per call: less than one byte per call (the slack is for one-off JIT events).
            assertTrue(bytes < N / 100, "tryAcquire allocated " + bytes + " bytes over " + N + " calls");
        }
    }

    @Test
    void checkAllocatesAtMostTheDecision() {
        try (Limiter l = Limiter.builder(Strategy.gcra(1_000_000_000L, Duration.ofSeconds(1))).build()) {
            long[] sink = new long[1];
            long bytes = allocated(() -> {
                for (int i = 0; i < N; i++) sink[0] += l.check("user:1", 1).remaining();
            });
            // A Decision record is 40 bytes with compressed oops; nothing else per call.
            assertTrue(bytes <= 48L * N, "check allocated " + bytes / N + " bytes per call");
        }
    }
}
