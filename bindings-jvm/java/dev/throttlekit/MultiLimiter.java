package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Native;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Several named dimensions (say per-IP and per-tenant) decided atomically together: under
 * {@link Rule#ALL} a request passes only if every dimension admits it, and then all commit; under
 * {@link Rule#ANY} one suffices. A request names one key per dimension, in declaration order.
 * On a Redis Cluster every key of a limiter shares one hash tag (see {@link Builder#hashTag}).
 *
 * <p>The two-tier modes work as on {@link Limiter} ({@code mode(Mode)}, {@code lease(Lease)},
 * {@link #tierStats()}, {@link #releaseLeases()}): in {@link Mode#LEASED} each dimension's key
 * holds credits, and a request is admitted locally only when every dimension holds credits for
 * its cost; otherwise the dimensions short of credits are leased together in one store call.
 * {@link Lease#lowWater()} must be 0 here (a dimension is leased when it runs short), else
 * {@link ConfigInvalidException} naming {@code lease.lowWater}.
 */
public final class MultiLimiter extends Tiered implements AutoCloseable {
    private final long h;
    private final List<String> names;

    /** {@code releaseLeases}' async op (5) names no keys (the native half reads none for it). */
    private static final Natives NATIVES = new Natives(Native::multiTier, Native::multiRelease,
            (h, idleMs, f) -> Native.multiAsync(h, 5, new byte[0], idleMs, f));

    private MultiLimiter(Builder b) {
        super(NATIVES);
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("rule", b.rule.wire());
        c.put("dimensions", b.dimensions);
        if (b.hashTag != null) c.put("hashTag", b.hashTag);
        b.putOptions(c);
        b.putMode(c);
        h = Handles.create(this, Native::multiNew, c, b.store, b.clock, Native::multiFree);
        names = List.copyOf(b.names);
    }

    /** A builder for a multi limiter combining its dimensions by {@code rule}. */
    public static Builder builder(Rule rule) {
        return new Builder(rule);
    }

    /** The counters (each check's combined decision), cumulative since it was built (all zero unless built with {@code metrics(true)}). */
    public Metrics metrics() {
        try {
            return Metrics.of(Native.multiMetrics(h));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The dimensions' names, in declaration order. */
    public List<String> dimensions() {
        return names;
    }

    /** Checks one request of cost 1 with one key per dimension. */
    public MultiDecision check(List<String> keys) {
        return check(keys, 1);
    }

    /** Checks one request of {@code cost} with one key per dimension. */
    public MultiDecision check(List<String> keys, long cost) {
        try {
            return decision(Native.multiOp(h, 0, Limiter.pack(keys), cost));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Forgets the state of every dimension's key. */
    public void reset(List<String> keys) {
        try {
            Native.multiOp(h, 3, Limiter.pack(keys), 1);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@link #check(List, long)} without holding a thread while the store answers. */
    public CompletableFuture<MultiDecision> checkAsync(List<String> keys, long cost) {
        return async(0, keys, cost, this::decision);
    }

    /** {@link #reset} without holding a thread. */
    public CompletableFuture<Void> resetAsync(List<String> keys) {
        return async(3, keys, 1, v -> null);
    }

    @Override
    long handle() {
        return h;
    }

    /**
     * Closes it (not its store); later calls throw {@link StoreUnavailableException}. Idempotent. In
     * {@link Mode#LEASED}, unspent credits are given back first (best effort: a store that cannot be
     * reached keeps them until they expire).
     */
    @Override
    public void close() {
        Handles.close(this, h, Native::multiClose);
    }

    private <T> CompletableFuture<T> async(int op, List<String> keys, long cost, java.util.function.Function<long[], T> convert) {
        return Handles.async(this, convert, f -> Native.multiAsync(h, op, Limiter.pack(keys), cost, f));
    }

    private MultiDecision decision(long[] v) {
        List<Decision> dims = new ArrayList<>();
        for (int i = 7; i + 6 <= v.length; i += 6) dims.add(Decision.of(v, i));
        int b = (int) v[0];
        return new MultiDecision(Decision.of(v, 1), b >= 0 && b < names.size() ? names.get(b) : "", List.copyOf(dims));
    }

    /** How a multi limiter is built. */
    public static final class Builder extends Tiered.Builder<Builder> {
        private final Rule rule;
        private final List<Object> dimensions = new ArrayList<>();
        private final List<String> names = new ArrayList<>();
        private String hashTag;

        private Builder(Rule rule) {
            if (rule == null) throw new ConfigInvalidException("rule must not be null", -1);
            this.rule = rule;
        }

        /** Adds a dimension named {@code name} with cost multiplier 1. */
        public Builder dimension(String name, Strategy strategy) {
            return dimension(name, strategy, 1);
        }

        /** Adds a dimension whose cost is the request's cost times {@code costMultiplier} (>= 1). */
        public Builder dimension(String name, Strategy strategy, long costMultiplier) {
            if (name == null || strategy == null) throw new ConfigInvalidException("dimension name and strategy must not be null", -1);
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("name", name);
            d.put("strategy", Json.parse(strategy.toJson()));
            d.put("costMultiplier", costMultiplier);
            dimensions.add(d);
            names.add(name);
            return this;
        }

        /** The Redis Cluster hash tag of every key (default: the prefix, or {@code tk}); derive one per tenant to spread load. */
        public Builder hashTag(String tag) {
            this.hashTag = tag;
            return this;
        }

        @Override
        Builder self() {
            return this;
        }

        /** The multi limiter. */
        public MultiLimiter build() {
            return new MultiLimiter(this);
        }
    }
}
