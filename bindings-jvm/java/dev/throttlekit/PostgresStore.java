package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Native;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A Postgres store: every decision is one {@code INSERT ... ON CONFLICT DO UPDATE}, atomic under
 * READ COMMITTED, so a fleet of processes that shares a Postgres and no Redis shares each limit
 * exactly. The options are core's ({@code docs/postgres.md}) under the same names; core checks
 * every value.
 *
 * <pre>{@code
 * try (PostgresStore pg = PostgresStore.builder("postgres://app:secret@db:5432/app")
 *         .table("throttlekit").timeout(Duration.ofMillis(500)).build()) { ... }
 * }</pre>
 */
public final class PostgresStore implements Store {
    private final long h;

    private PostgresStore(long h) {
        this.h = h;
        Handles.register(this, h, Native::storeFree);
    }

    /**
     * A builder for a store at {@code url}: {@code postgres://user:password@host:port/db}, or
     * libpq's key-value form; {@code sslmode=require} for TLS through rustls with the system's
     * roots.
     */
    public static Builder builder(String url) {
        return new Builder(url);
    }

    @Override
    public long handle() {
        return h;
    }

    /** Closes the connections, blocking; later calls throw {@link StoreUnavailableException}. */
    @Override
    public void close() {
        try {
            Native.storeClose(h);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The connection options and the defaults limiters on the store take. */
    public static final class Builder {
        private final Map<String, Object> o = new LinkedHashMap<>();

        private Builder(String url) {
            if (url == null) throw new ConfigInvalidException("url must not be null", -1);
            o.put("url", url);
        }

        /** The table holding the limits: {@code name} or {@code schema.name} (default {@code throttlekit}). */
        public Builder table(String table) {
            if (table == null) throw new ConfigInvalidException("table must not be null", -1);
            o.put("table", table);
            return this;
        }

        /**
         * Create the table and its functions when missing, on connect (the default). Off: a
         * missing or misshapen table is {@code config_invalid}, and the schema is
         * {@link #migrateSchema}'s job.
         */
        public Builder migrate(boolean on) {
            o.put("migrate", on);
            return this;
        }

        /** Create the table {@code UNLOGGED}: faster writes; a crash of the server empties it, replicas never see it. */
        public Builder unlogged(boolean on) {
            o.put("unlogged", on);
            return this;
        }

        /** {@code synchronous_commit = off} on the store's connections: a server crash can lose the last few hundred ms of decisions. */
        public Builder synchronousCommitOff(boolean on) {
            o.put("synchronousCommitOff", on);
            return this;
        }

        /** Connections kept, each pipelining any number of calls (default 4). */
        public Builder poolSize(int n) {
            o.put("poolSize", (long) n);
            return this;
        }

        /** The longest wait for any one call (default 1 s); past it, {@code store_unavailable}, never resent (it may have committed). */
        public Builder timeout(Duration timeout) {
            o.put("timeoutMs", Strategy.wholeMs("timeout", timeout));
            return this;
        }

        /** How long connecting may take (default 3 s). */
        public Builder connectTimeout(Duration timeout) {
            o.put("connectTimeoutMs", Strategy.wholeMs("connectTimeout", timeout));
            return this;
        }

        /** How often the sweeper deletes expired rows (default 60 s; zero: never, expiry on read still holds). */
        public Builder sweepInterval(Duration interval) {
            o.put("sweepIntervalMs", Strategy.wholeMs("sweepInterval", interval));
            return this;
        }

        /** The most rows one sweep deletes (default 1000). */
        public Builder sweepBatch(long rows) {
            o.put("sweepBatch", rows);
            return this;
        }

        /** How long past its deadline, by the server's clock, a row stays before the sweeper may delete it (default 60 s). */
        public Builder sweepGrace(Duration grace) {
            o.put("sweepGraceMs", Strategy.wholeMs("sweepGrace", grace));
            return this;
        }

        /** Limiters on this store read time from Postgres ({@code clock_timestamp()}) by default. */
        public Builder serverClock(boolean on) {
            o.put("serverClock", on);
            return this;
        }

        /** What limiters on this store answer when Postgres cannot, by default. */
        public Builder failPolicy(FailPolicy policy) {
            if (policy == null) throw new ConfigInvalidException("failPolicy must not be null", -1);
            o.put("failPolicy", policy.wire());
            return this;
        }

        /**
         * Connects, blocking until the pool is filled and the table checked: a bad option, a
         * missing table with {@code migrate(false)} or a table of another shape throws
         * {@link ConfigInvalidException}; an unreachable server or a refused login
         * {@link StoreUnavailableException}.
         */
        public PostgresStore build() {
            return new PostgresStore(Native.postgresStoreConnect(config()));
        }

        /**
         * Creates (or brings up to date) the table and functions of this builder's URL and
         * table, then disconnects, blocking: the deploy step for stores built with
         * {@code migrate(false)}.
         */
        public void migrateSchema() {
            Native.postgresMigrate(config());
        }

        private byte[] config() {
            return Json.write(o).getBytes(StandardCharsets.UTF_8);
        }
    }
}
