package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Keys;
import dev.throttlekit.internal.Native;
import dev.throttlekit.internal.Scratch;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A strategy bound to a store, a clock and a key prefix. Thread-safe: share one limiter.
 *
 * <pre>{@code
 * try (Limiter limiter = Limiter.builder(Strategy.gcra(100, Duration.ofMinutes(1))).build()) {
 *     Decision d = limiter.check("user:42");
 *     if (!d.allowed()) reply429(d.retryAfter());
 * }
 * }</pre>
 *
 * <p>Blocking calls run on the calling thread (on Redis, one round trip). Each has a
 * {@code CompletableFuture} twin ({@code checkAsync}, ...) that does not hold a thread while Redis
 * answers; those futures complete on throttlekit's runtime threads, so give blocking dependent
 * stages an executor of their own ({@code thenApplyAsync(fn, executor)}).
 * {@link #tryAcquire(String, long)} allocates nothing.
 */
public final class Limiter extends Tiered implements AutoCloseable {
    private final long h;
    private final Strategy strategy;
    private final String prefix;

    /** {@code releaseLeases}' async op (5) names no key. */
    private static final Natives NATIVES = new Natives(Native::limiterTier, Native::limiterRelease,
            (h, idleMs, f) -> Native.limiterAsync(h, 5, new byte[0], idleMs, f));

    private Limiter(Builder b) {
        super(NATIVES);
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("strategy", Json.parse(b.strategy.toJson()));
        b.putOptions(c);
        b.putMode(c);
        h = Handles.create(this, Native::limiterNew, c, b.store, b.clock, Native::limiterFree);
        strategy = b.strategy;
        prefix = b.prefix;
    }

    /** A builder for a limiter of {@code strategy} (a fresh memory store and the system clock unless set). */
    public static Builder builder(Strategy strategy) {
        return new Builder(strategy);
    }

    /** Checks a request of cost 1 for {@code key}, consuming it when allowed. */
    public Decision check(String key) {
        return check(key, 1);
    }

    /** Checks a request of {@code cost} units for {@code key}, consuming them when allowed. */
    public Decision check(String key, long cost) {
        Scratch s = Scratch.get();
        int len = s.key(Handles.key(key));
        try {
            Native.check(h, s.address(), len, cost);
        } finally {
            Reference.reachabilityFence(this);
        }
        return new Decision(s.out(0) != 0, s.out(1), s.out(2), s.out(3), s.out(4), s.out(5) != 0);
    }

    /** Whether a request of cost 1 is allowed (consuming it); allocates nothing. */
    public boolean tryAcquire(String key) {
        return tryAcquire(key, 1);
    }

    /** Whether a request of {@code cost} is allowed (consuming it when so); allocates nothing. */
    public boolean tryAcquire(String key, long cost) {
        Scratch s = Scratch.get();
        int len = s.key(Handles.key(key));
        try {
            return Native.tryAcquire(h, s.address(), len, cost);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The key's current capacity, consuming nothing: whether a cost-1 request would pass, how many units would. */
    public Decision peek(String key) {
        return op(1, key, 1);
    }

    /** The decision a check of {@code cost} would get now, consuming nothing. */
    public Decision forecast(String key, long cost) {
        return op(2, key, cost);
    }

    /** Forgets {@code key}'s state. */
    public void reset(String key) {
        Handles.scratch(this, key, (addr, len) -> Native.limiterOp(h, 3, addr, len, 1));
    }

    /** One check of {@code cost} per key, all at one clock reading (pipelined on Redis; not atomic together). */
    public List<Decision> checkMany(List<String> keys, long cost) {
        byte[] packed = pack(keys);
        try {
            return decisions(Native.checkMany(h, packed, cost));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@link #check(String, long)} without holding a thread while the store answers. */
    public CompletableFuture<Decision> checkAsync(String key, long cost) {
        return async(0, key, cost, FIRST);
    }

    /** {@link #check(String)} without holding a thread. */
    public CompletableFuture<Decision> checkAsync(String key) {
        return checkAsync(key, 1);
    }

    /** {@link #peek} without holding a thread. */
    public CompletableFuture<Decision> peekAsync(String key) {
        return async(1, key, 1, FIRST);
    }

    /** {@link #forecast} without holding a thread. */
    public CompletableFuture<Decision> forecastAsync(String key, long cost) {
        return async(2, key, cost, FIRST);
    }

    /** {@link #reset} without holding a thread. */
    public CompletableFuture<Void> resetAsync(String key) {
        return async(3, key, 1, v -> null);
    }

    /** {@link #checkMany} without holding a thread. */
    public CompletableFuture<List<Decision>> checkManyAsync(List<String> keys, long cost) {
        return Handles.async(this, Limiter::decisions, f -> Native.limiterAsync(h, 4, pack(keys), cost, f));
    }

    /** The counters, cumulative since it was built (all zero unless built with {@code metrics(true)}). */
    public Metrics metrics() {
        try {
            return Metrics.of(Native.limiterMetrics(h));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    long handle() {
        return h;
    }

    /** The strategy. */
    public Strategy strategy() {
        return strategy;
    }

    /** The key prefix ({@code ""} for none). */
    public String prefix() {
        return prefix;
    }

    /**
     * Closes the limiter (not its store); later calls throw {@link StoreUnavailableException}.
     * Idempotent. In {@link Mode#LEASED}, unspent credits are given back first (best effort: a store
     * that cannot be reached keeps them until they expire).
     */
    @Override
    public void close() {
        Handles.close(this, h, Native::limiterClose);
    }

    private Decision op(int op, String key, long cost) {
        return Handles.decision(Handles.scratch(this, key, (addr, len) -> Native.limiterOp(h, op, addr, len, cost)));
    }

    /** The first decision of the result longs. */
    private static final java.util.function.Function<long[], Decision> FIRST = v -> Decision.of(v, 0);

    private <T> CompletableFuture<T> async(int op, String key, long cost, java.util.function.Function<long[], T> convert) {
        return Handles.async(this, convert, f -> Native.limiterAsync(h, op, Handles.utf8(key), cost, f));
    }

    static byte[] pack(List<String> keys) {
        if (keys == null) throw new ConfigInvalidException("keys must not be null", -1);
        for (String k : keys) Handles.key(k);
        return Keys.pack(keys);
    }

    private static List<Decision> decisions(long[] v) {
        List<Decision> out = new ArrayList<>(v.length / 6);
        for (int i = 0; i + 6 <= v.length; i += 6) out.add(Decision.of(v, i));
        return List.copyOf(out);
    }

    /** How a limiter is built. */
    public static final class Builder extends Tiered.Builder<Builder> {
        private final Strategy strategy;

        private Builder(Strategy strategy) {
            if (strategy == null) throw new ConfigInvalidException("strategy must not be null", -1);
            this.strategy = strategy;
        }

        @Override
        Builder self() {
            return this;
        }

        /** The limiter. */
        public Limiter build() {
            return new Limiter(this);
        }
    }
}
