package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Native;
import dev.throttlekit.internal.Scratch;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A concurrency limit that follows the service's latency (docs/adaptive.md): it admits a request
 * only while fewer than its limit are in flight, and moves the limit with the round trips its
 * permits report. Every option is core's; bad ones are {@link ConfigInvalidException} naming the
 * field, at {@link Builder#build()}.
 *
 * <pre>{@code
 * AdaptiveLimiter limiter = AdaptiveLimiter.builder("gradient2").build();
 * Admission a = limiter.tryAcquire();
 * if (a instanceof Rejection r) { ... shed: 503, Retry-After: r.retryAfterSecs() ... }
 * try (Permit permit = (Permit) a) {
 *     callTheService();
 *     permit.release(Outcome.SUCCESS);
 * }
 * }</pre>
 *
 * Safe for concurrent use. {@code close()} marks it closed (later calls throw
 * {@link StoreUnavailableException}); permits still held stay valid.
 */
public final class AdaptiveLimiter implements AutoCloseable {
    private final long h;

    private AdaptiveLimiter(Builder b) {
        String json = b.json != null ? b.json : Json.write(b.config);
        long handle = Native.adaptiveNew(json.getBytes(StandardCharsets.UTF_8), b.virtualClock);
        Handles.register(this, handle, Native::adaptiveFree);
        h = handle;
    }

    /** A builder for gradient2 with every default. */
    public static Builder builder() {
        return new Builder("gradient2");
    }

    /** A builder for {@code algorithm}: {@code fixed}, {@code aimd}, {@code vegas} or {@code gradient2}. */
    public static Builder builder(String algorithm) {
        return new Builder(algorithm);
    }

    /** A builder for the whole configuration as core's JSON (the vectors' form), e.g. {@code {"algorithm":"aimd"}}. */
    public static Builder builderFromJson(String json) {
        Builder b = new Builder(null);
        b.json = json;
        return b;
    }

    /** A permit if the limit has room, else a {@link Rejection}; never waits. */
    public Admission tryAcquire() {
        return admit("", -1);
    }

    /** {@link #tryAcquire()} for a configured partition (an unknown one: {@link ConfigInvalidException}). */
    public Admission tryAcquire(String partition) {
        return admit(partition, -1);
    }

    /** Waits up to {@code timeout} for a permit (FIFO or LIFO, as configured), blocking the thread. */
    public Admission acquire(Duration timeout) {
        return acquire("", timeout);
    }

    /** {@link #acquire(Duration)} for a configured partition. */
    public Admission acquire(String partition, Duration timeout) {
        if (timeout.isNegative()) throw new ConfigInvalidException("timeout must not be negative", -1);
        return admit(partition, timeout.toMillis());
    }

    private Admission admit(String partition, long timeoutMs) {
        if (partition == null) throw new ConfigInvalidException("partition must not be null", -1);
        Scratch s = Scratch.get();
        int len = s.key(partition);
        long permit;
        try {
            permit = Native.adaptiveAcquire(h, s.address(), len, timeoutMs);
        } finally {
            Reference.reachabilityFence(this);
        }
        if (permit != 0) return new Permit(permit);
        return new Rejection(s.out(0), s.out(1), s.out(2), s.out(3));
    }

    /** The current limit. */
    public long limit() {
        return op(0, 0);
    }

    /** Permits held now. */
    public long inflight() {
        return op(1, 0);
    }

    /** A consistent snapshot of the counters. */
    public AdaptiveMetrics metrics() {
        try {
            return AdaptiveMetrics.of(Native.adaptiveMetrics(h));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Moves the virtual clock of a limiter built with {@link Builder#virtualClock()} forward
     * ({@link NotImplementedException} on the monotonic clock).
     */
    public void advanceVirtualClock(Duration d) {
        op(2, d.toNanos());
    }

    private long op(int op, long v) {
        try {
            return Native.adaptiveOp(h, op, v);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public void close() {
        Handles.close(this, h, Native::adaptiveClose);
    }

    /** How an adaptive limiter is built: core's options, by their JSON names (absent: core's default). */
    public static final class Builder {
        private final Map<String, Object> config = new LinkedHashMap<>();
        private final List<Map<String, Object>> partitions = new ArrayList<>();
        private boolean virtualClock;
        private String json;

        private Builder(String algorithm) {
            config.put("algorithm", algorithm);
        }

        private Builder set(String name, Object value) {
            if (json != null) throw new ConfigInvalidException(name + " cannot be set beside builderFromJson's JSON", -1);
            config.put(name, value);
            return this;
        }

        /** The limit before any sample (for {@code fixed}, the limit); default 20. */
        public Builder initialLimit(long v) {
            return set("initialLimit", v);
        }

        /** The lowest the limit goes; default 1. */
        public Builder minLimit(long v) {
            return set("minLimit", v);
        }

        /** The highest the limit goes; default 1000. */
        public Builder maxLimit(long v) {
            return set("maxLimit", v);
        }

        /** The window's latency percentile, in (0, 1]; default 0.9. */
        public Builder percentile(double v) {
            return set("percentile", v);
        }

        /** Successful round trips shorter than this many µs are ignored; default 100. */
        public Builder minRttUs(long v) {
            return set("minRttUs", v);
        }

        /** A window closes after this many samples (or the limit, if more); default 50. */
        public Builder windowMinSamples(long v) {
            return set("windowMinSamples", v);
        }

        /** The limit never exceeds this multiple of the window's in-flight peak; default 2. */
        public Builder peakMultiple(double v) {
            return set("peakMultiple", v);
        }

        /** Double the limit each uncongested window until the first congestion signal. */
        public Builder slowStart(boolean v) {
            return set("slowStart", v);
        }

        /** The order waiters get freed permits: {@code fifo} (default) or {@code lifo}. */
        public Builder order(String v) {
            return set("order", v);
        }

        /** A partition guaranteed {@code percent} of the limit when it is full. */
        public Builder partition(String name, double percent) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("name", name);
            p.put("percent", percent);
            partitions.add(p);
            return set("partitions", partitions);
        }

        /** aimd / gradient2: the latency tolerated, as a multiple of the no-load round trip. */
        public Builder tolerance(double v) {
            return set("tolerance", v);
        }

        /** aimd: the factor a congested window multiplies the limit by. */
        public Builder backoff(double v) {
            return set("backoff", v);
        }

        /** vegas: the queue below which the limit grows, times log10(limit). */
        public Builder alpha(double v) {
            return set("alpha", v);
        }

        /** vegas: the queue above which the limit shrinks, times log10(limit). */
        public Builder beta(double v) {
            return set("beta", v);
        }

        /** gradient2: how far each window moves the limit toward a lower estimate, in (0, 1]. */
        public Builder smoothing(double v) {
            return set("smoothing", v);
        }

        /** Measures round trips on a virtual clock at 0 that moves only with {@link AdaptiveLimiter#advanceVirtualClock} (tests, the vectors). */
        public Builder virtualClock() {
            virtualClock = true;
            return this;
        }

        /** The limiter. */
        public AdaptiveLimiter build() {
            return new AdaptiveLimiter(this);
        }
    }
}
