package dev.throttlekit;

import dev.throttlekit.internal.NativeFuture;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongBinaryOperator;
import java.util.function.LongFunction;

/**
 * What {@link Limiter} and {@link MultiLimiter} share of the two-tier modes (issue #23,
 * {@code docs/leasing.md}), written once: {@link #mode()}, {@link #tierStats()} and
 * {@code releaseLeases} with its future twins over each one's own native calls, and the builders'
 * {@code mode}/{@code lease} options ({@link Builder}). Core decides everything; this only
 * translates.
 */
abstract class Tiered {
    private static final Mode[] MODES = Mode.values();
    /** {@code releaseLeases}' "every key" (the native half's {@code None}). */
    private static final long ALL_KEYS = Long.MIN_VALUE;

    /** One kind of limiter's native calls for its tier, each taking the native handle. */
    record Natives(LongFunction<long[]> tier, LongBinaryOperator release, AsyncRelease releaseAsync) {}

    /** The native {@code releaseLeases} that completes {@code f} later (the units given back). */
    interface AsyncRelease {
        void start(long h, long idleMs, NativeFuture<?> f);
    }

    private final Natives natives;

    Tiered(Natives natives) {
        this.natives = natives;
    }

    /** The native handle. */
    abstract long handle();

    /** The tier's counters in {@link TierStats}' order, then the mode's ordinal (the native half's {@code lease::tier_longs}). */
    private long[] tier() {
        try {
            return natives.tier().apply(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Gives back on the calling thread the credits of keys idle for {@code idleMs} ({@link #ALL_KEYS}: every key). */
    private long release(long idleMs) {
        try {
            return natives.release().applyAsLong(handle(), idleMs);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@link #release(long)} without holding a thread. */
    private CompletableFuture<Long> releaseAsync(long idleMs) {
        return Handles.async(this, v -> v[0], f -> natives.releaseAsync().start(handle(), idleMs, f));
    }

    /** The two-tier mode it was built with ({@link Mode#STRICT} unless set). */
    public Mode mode() {
        return MODES[(int) tier()[5]];
    }

    /** The local tier's counters (all zero in {@link Mode#STRICT}). */
    public TierStats tierStats() {
        return TierStats.of(tier());
    }

    /**
     * Gives back every key's unspent leased credits where the strategy can take them back (a fixed
     * window's or quota's counter, a GCRA or token bucket state); returns the units given back.
     * {@code close()} does it too. 0 unless {@link Mode#LEASED}.
     */
    public long releaseLeases() {
        return release(ALL_KEYS);
    }

    /** {@link #releaseLeases()} for the keys unused for {@code idle} only. */
    public long releaseLeases(Duration idle) {
        return release(idleMs(idle));
    }

    /** {@link #releaseLeases()} without holding a thread. */
    public CompletableFuture<Long> releaseLeasesAsync() {
        return releaseAsync(ALL_KEYS);
    }

    /** {@link #releaseLeases(Duration)} without holding a thread. */
    public CompletableFuture<Long> releaseLeasesAsync(Duration idle) {
        long ms;
        try {
            ms = idleMs(idle);
        } catch (ThrottleKitException e) {
            return CompletableFuture.failedFuture(e);
        }
        return releaseAsync(ms);
    }

    private static long idleMs(Duration idle) {
        if (idle == null) throw new ConfigInvalidException("idle must not be null", -1);
        try {
            return idle.toMillis();
        } catch (ArithmeticException e) {
            throw new ConfigInvalidException("idle is too long", -1);
        }
    }

    /** A limiter's or multi limiter's builder: its fail policy, {@code mode} and {@code lease} options; {@code B} is the builder itself. */
    abstract static class Builder<B extends Builder<B>> extends Built<B> {
        private FailPolicy failPolicy;
        private Mode mode;
        private Lease lease;

        Builder() {}

        /** What to answer when the store cannot (default: the store's, else fail-closed for quotas and raise otherwise). */
        public B failPolicy(FailPolicy policy) {
            this.failPolicy = policy;
            return self();
        }

        /**
         * The two-tier mode for hot keys (default {@link Mode#STRICT}); see {@code docs/leasing.md}
         * for what each costs and can over-admit. {@link Mode#CACHED_DENY} takes {@code maxKeys}
         * from {@link #lease(Lease)} when given.
         */
        public B mode(Mode mode) {
            if (mode == null) throw new ConfigInvalidException("mode must not be null", -1);
            this.mode = mode;
            return self();
        }

        /** The leased mode's options; without a {@link #mode(Mode)}, the mode is {@link Mode#LEASED}. */
        public B lease(Lease lease) {
            if (lease == null) throw new ConfigInvalidException("lease must not be null", -1);
            this.lease = lease;
            return self();
        }

        /** Adds the options that were set to {@code config} (the native half's {@code failPolicy}, {@code mode} and {@code lease}). */
        void putMode(Map<String, Object> config) {
            if (failPolicy != null) config.put("failPolicy", failPolicy.wire());
            if (mode != null) config.put("mode", mode.wire());
            if (lease != null) config.put("lease", lease.wire());
        }
    }
}
