package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Native;
import dev.throttlekit.internal.Scratch;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A leaky-bucket shaper: requests leave at {@code ratePerSec}; {@link #reserve} books a departure
 * and says how long to wait, {@link #schedule} books and waits, and a wait past
 * {@code maxQueue} is refused ({@code accepted == false}, or {@link QueueFullException} from
 * {@code schedule}).
 */
public final class Shaper implements AutoCloseable {
    private final long h;

    private Shaper(Builder b) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("ratePerSec", finite("ratePerSec", b.ratePerSec));
        c.put("maxQueueMs", b.maxQueueMs);
        b.putOptions(c);
        h = Handles.create(this, Native::shaperNew, c, b.store, b.clock, Native::shaperFree);
    }

    /** A builder for a shaper of {@code ratePerSec} departures a second, queueing at most {@code maxQueue}. */
    public static Builder builder(double ratePerSec, Duration maxQueue) {
        return new Builder(ratePerSec, Strategy.fractionalMs("maxQueue", maxQueue));
    }

    /** A builder with {@code maxQueueMs} as a number (fractions allowed, as core takes it). */
    public static Builder builder(double ratePerSec, double maxQueueMs) {
        return new Builder(ratePerSec, finite("maxQueueMs", maxQueueMs));
    }

    /** The counters (reservations accepted as allowed, rejected as denied), cumulative since it was built (all zero unless built with {@code metrics(true)}). */
    public Metrics metrics() {
        try {
            return Metrics.of(Native.shaperMetrics(h));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Books a departure of {@code cost} for {@code key}. */
    public Reservation reserve(String key, long cost) {
        return op(0, key, cost);
    }

    /** Books a departure and sleeps its delay; {@link QueueFullException} when the queue is too long. */
    public Reservation schedule(String key, long cost) {
        return op(1, key, cost);
    }

    /** Forgets {@code key}'s state. */
    public void reset(String key) {
        op(3, key, 1);
    }

    /** {@link #reserve} without holding a thread. */
    public CompletableFuture<Reservation> reserveAsync(String key, long cost) {
        return async(0, key, cost, v -> new Reservation(v[0] != 0, v[1]));
    }

    /** {@link #schedule} without holding a thread (the wait is a timer, not a sleeping thread). */
    public CompletableFuture<Reservation> scheduleAsync(String key, long cost) {
        return async(1, key, cost, v -> new Reservation(v[0] != 0, v[1]));
    }

    /** {@link #reset} without holding a thread. */
    public CompletableFuture<Void> resetAsync(String key) {
        return async(3, key, 1, v -> null);
    }

    /** Closes it (not its store). */
    @Override
    public void close() {
        Handles.close(this, h, Native::shaperClose);
    }

    private Reservation op(int op, String key, long cost) {
        Scratch s = Handles.scratch(this, key, (addr, len) -> Native.shaperOp(h, op, addr, len, cost));
        return op == 3 ? null : new Reservation(s.out(0) != 0, s.out(1));
    }

    private <T> CompletableFuture<T> async(int op, String key, long cost, java.util.function.Function<long[], T> convert) {
        return Handles.async(this, convert, f -> Native.shaperAsync(h, op, Handles.utf8(key), cost, f));
    }

    private static double finite(String name, double v) {
        if (!Double.isFinite(v)) throw new ConfigInvalidException(name + " must be a finite number", -1);
        return v;
    }

    /** How a shaper is built. */
    public static final class Builder extends Built<Builder> {
        private final double ratePerSec;
        private final Object maxQueueMs;

        private Builder(double ratePerSec, Object maxQueueMs) {
            this.ratePerSec = ratePerSec;
            this.maxQueueMs = maxQueueMs;
        }

        @Override
        Builder self() {
            return this;
        }

        /** The shaper. */
        public Shaper build() {
            return new Shaper(this);
        }
    }
}
