package dev.throttlekit;

import java.util.Map;

/**
 * The options every {@link Limiter}, {@link MultiLimiter} and {@link Shaper} builder takes, written
 * once: the store, the clock, the key prefix, the clock's source and metrics. {@code B} is the
 * builder itself, so each setter chains on the concrete builder.
 */
abstract class Built<B extends Built<B>> {
    Store store;
    ManualClock clock;
    String prefix = "";
    private Boolean serverClock;
    private boolean metrics;

    Built() {}

    /** This builder, for chaining. */
    abstract B self();

    /** The store (default: a fresh {@link MemoryStore} of its own). */
    public B store(Store store) {
        this.store = store;
        return self();
    }

    /** A manual clock (default: the system clock). */
    public B clock(ManualClock clock) {
        this.clock = clock;
        return self();
    }

    /** Keys are stored as {@code prefix:key} (default none). */
    public B prefix(String prefix) {
        if (prefix == null) throw new ConfigInvalidException("prefix must not be null", -1);
        this.prefix = prefix;
        return self();
    }

    /** Read time from Redis ({@code TIME}) instead of this host (default: the store's setting). */
    public B serverClock(boolean on) {
        this.serverClock = on;
        return self();
    }

    /**
     * Count decisions (a multi limiter's combined ones; a shaper's reservations, accepted as allowed
     * and rejected as denied) and time Redis calls, read with {@code metrics()} (off by default,
     * free when off).
     */
    public B metrics(boolean on) {
        this.metrics = on;
        return self();
    }

    /** Adds the options above that go to the native half ({@code prefix}, {@code serverClock}, {@code metrics}). */
    void putOptions(Map<String, Object> config) {
        config.put("prefix", prefix);
        if (serverClock != null) config.put("serverClock", serverClock);
        config.put("metrics", metrics);
    }
}
