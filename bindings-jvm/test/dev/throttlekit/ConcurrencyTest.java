package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Exactly K admitted from many threads on one key. */
class ConcurrencyTest {
    static int admitted(Limiter l, String key, int threads, int perThread) throws InterruptedException {
        AtomicInteger ok = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < perThread; i++) if (l.tryAcquire(key)) ok.incrementAndGet();
            });
            ts[t].start();
        }
        start.countDown();
        for (Thread t : ts) t.join();
        return ok.get();
    }

    @Test
    void exactlyKFromManyThreadsInMemory() throws Exception {
        // Time stands still: on the system clock an hour boundary mid-test would admit more.
        try (Limiter l = Limiter.builder(Strategy.fixedWindow(1000, Duration.ofHours(1))).clock(new ManualClock(1_000)).build()) {
            assertEquals(1000, admitted(l, "shared", 8, 400));
        }
    }
}
