package dev.throttlekit;

import dev.throttlekit.internal.Native;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@link Mode#LEASED} mode's options. Values are checked by core when the limiter is built: a bad
 * one is a {@link ConfigInvalidException} naming {@code lease.batch}, {@code lease.lowWater},
 * {@code lease.windowCoupled} or {@code lease.maxKeys}.
 *
 * <pre>{@code
 * Limiter hot = Limiter.builder(Strategy.fixedWindow(1000, Duration.ofSeconds(1)))
 *         .store(redis)
 *         .lease(Lease.builder().batch(100).windowCoupled(true).build())   // mode LEASED
 *         .build();
 * }</pre>
 *
 * @param batch units one lease asks for, the asking request's included (1..2^53)
 * @param lowWater a spend that leaves this many credits or fewer also tops them up (below {@code batch})
 * @param windowCoupled credits expire at the fixed window's (or fixed/calendar quota's) reset: exactly
 *     {@code limit} per window (those strategies only)
 * @param maxKeys keys the local tier holds credits for (an evicted key's credits are given back)
 */
public record Lease(long batch, long lowWater, boolean windowCoupled, long maxKeys) {
    /** Core's defaults ({@code LeaseOptions::default()}: batch 100, lowWater 0, uncoupled, 10000 keys). */
    public static final Lease DEFAULTS = defaults();

    private static Lease defaults() {
        long[] d = Native.leaseDefaults();
        return new Lease(d[0], d[1], d[2] != 0, d[3]);
    }

    /** A builder starting from {@link #DEFAULTS}. */
    public static Builder builder() {
        return new Builder();
    }

    Map<String, Object> wire() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("batch", batch);
        m.put("lowWater", lowWater);
        m.put("windowCoupled", windowCoupled);
        m.put("maxKeys", maxKeys);
        return m;
    }

    /** How lease options are built (unset values keep core's defaults). */
    public static final class Builder {
        private long batch = DEFAULTS.batch;
        private long lowWater = DEFAULTS.lowWater;
        private boolean windowCoupled = DEFAULTS.windowCoupled;
        private long maxKeys = DEFAULTS.maxKeys;

        private Builder() {}

        /** Units per lease, the asking request's included. */
        public Builder batch(long batch) {
            this.batch = batch;
            return this;
        }

        /** Top the credits up when a spend leaves this many or fewer (0: only when they run out). */
        public Builder lowWater(long lowWater) {
            this.lowWater = lowWater;
            return this;
        }

        /** Credits expire at the window's reset (fixed window and fixed/calendar quotas only). */
        public Builder windowCoupled(boolean on) {
            this.windowCoupled = on;
            return this;
        }

        /** Keys the tier remembers at once. */
        public Builder maxKeys(long maxKeys) {
            this.maxKeys = maxKeys;
            return this;
        }

        /** The options. */
        public Lease build() {
            return new Lease(batch, lowWater, windowCoupled, maxKeys);
        }
    }
}
