package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Native;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A store in one SQLite file (WAL mode): every process of this machine that opens the same file
 * shares each limit exactly, each decision one transaction under the file's write lock. The
 * options are core's ({@code docs/sqlite.md}); core checks every value.
 *
 * <pre>{@code
 * try (SqliteStore sqlite = SqliteStore.builder(Path.of("/var/lib/app/limits.db")).build()) { ... }
 * }</pre>
 */
public final class SqliteStore implements Store {
    private final long h;

    private SqliteStore(long h) {
        this.h = h;
        Handles.register(this, h, Native::storeFree);
    }

    /** A builder for the file at {@code path} (created if missing; its directory must exist). */
    public static Builder builder(Path path) {
        return new Builder(path);
    }

    @Override
    public long handle() {
        return h;
    }

    /** Closes the connection; later calls throw {@link StoreUnavailableException}. */
    @Override
    public void close() {
        try {
            Native.storeClose(h);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** How a commit reaches the disk (SQLite's {@code PRAGMA synchronous}). */
    public enum Synchronous {
        /** A commit survives a crash of the process; the last ones before a power loss may be lost (the default). */
        NORMAL,
        /** A commit survives a power loss; each decision waits for the disk. */
        FULL
    }

    /** The file's options and the fail policy limiters on the store take. */
    public static final class Builder {
        private final Map<String, Object> o = new LinkedHashMap<>();

        private Builder(Path path) {
            if (path == null) throw new ConfigInvalidException("path must not be null", -1);
            o.put("path", path.toString());
        }

        /** The table holding the state (default {@code throttlekit}). */
        public Builder table(String table) {
            if (table == null) throw new ConfigInvalidException("table must not be null", -1);
            o.put("table", table);
            return this;
        }

        /** How long a call waits for another process's write lock before {@code store_unavailable} (default 5 s). */
        public Builder busyTimeout(Duration timeout) {
            o.put("busyTimeoutMs", Strategy.wholeMs("busyTimeout", timeout));
            return this;
        }

        /** How commits reach the disk (default {@link Synchronous#NORMAL}). */
        public Builder synchronous(Synchronous synchronous) {
            if (synchronous == null) throw new ConfigInvalidException("synchronous must not be null", -1);
            o.put("synchronous", synchronous.name().toLowerCase());
            return this;
        }

        /** Create the table when missing (the default). Off: a missing table is {@code config_invalid}. */
        public Builder migrate(boolean on) {
            o.put("migrate", on);
            return this;
        }

        /** Full keys ({@code prefix:key}) of at most {@code n} UTF-8 bytes (>= 1; default 256). */
        public Builder maxKeyLength(long n) {
            o.put("maxKeyLength", n);
            return this;
        }

        /**
         * Sweep long-expired rows as decisions go (the default). Off, a row is deleted only when
         * its key is next touched, so expiry follows nothing but the callers' clock (replays).
         */
        public Builder sweep(boolean on) {
            o.put("sweep", on);
            return this;
        }

        /** What limiters on this store answer when the file is locked past the busy timeout, by default. */
        public Builder failPolicy(FailPolicy policy) {
            if (policy == null) throw new ConfigInvalidException("failPolicy must not be null", -1);
            o.put("failPolicy", policy.wire());
            return this;
        }

        /**
         * Opens the file: a path that cannot be opened, a file that is not a database, a missing
         * table with {@code migrate(false)} or a table of another shape throws
         * {@link ConfigInvalidException}.
         */
        public SqliteStore build() {
            return new SqliteStore(Native.sqliteStoreOpen(Json.write(o).getBytes(StandardCharsets.UTF_8)));
        }
    }
}
