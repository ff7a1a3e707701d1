package dev.throttlekit;

import dev.throttlekit.internal.Native;
import java.lang.ref.Reference;

/**
 * An in-process store: sharded, expiring on the limiter's clock, bounded (least recently used
 * keys are evicted past {@code maxKeys}; full keys longer than {@code maxKeyLength} bytes are
 * {@code config_invalid}). Defaults are core's: 917,504 keys, 256 bytes.
 */
public final class MemoryStore implements Store {
    private final long h;

    private MemoryStore(long maxKeys, long maxKeyLength) {
        h = Native.memoryStoreNew(maxKeys, maxKeyLength);
        Handles.register(this, h, Native::storeFree);
    }

    /** A store with core's default bounds. */
    public static MemoryStore create() {
        return builder().build();
    }

    /** A builder for the bounds. */
    public static Builder builder() {
        return new Builder();
    }

    /** How many live keys it evicted to stay within {@code maxKeys}: when it climbs, the bound is too small. */
    public long evictions() {
        try {
            return Native.memoryStoreStat(h, 0);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The number of keys held (expired keys not yet swept included). */
    public long size() {
        try {
            return Native.memoryStoreStat(h, 1);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public long handle() {
        return h;
    }

    @Override
    public void close() {
        try {
            Native.storeClose(h);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The bounds of a memory store. */
    public static final class Builder {
        private long maxKeys = Long.MIN_VALUE;
        private long maxKeyLength = Long.MIN_VALUE;

        private Builder() {}

        /** At most about {@code n} keys (>= 1; {@code Long.MAX_VALUE} lifts the bound). */
        public Builder maxKeys(long n) {
            if (n == Long.MIN_VALUE) n = 0; // never the "default" sentinel: core refuses it
            maxKeys = n;
            return this;
        }

        /** Full keys ({@code prefix:key}) of at most {@code n} UTF-8 bytes (>= 1). */
        public Builder maxKeyLength(long n) {
            if (n == Long.MIN_VALUE) n = 0;
            maxKeyLength = n;
            return this;
        }

        /** The store. */
        public MemoryStore build() {
            return new MemoryStore(maxKeys, maxKeyLength);
        }
    }
}
