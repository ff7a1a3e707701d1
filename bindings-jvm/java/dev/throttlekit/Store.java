package dev.throttlekit;

/**
 * Where limiters keep their state: a {@link MemoryStore} (in process), a {@link RedisStore} or a
 * {@link PostgresStore} (shared by a fleet), or a {@link SqliteStore} (shared by one machine's
 * processes). One store serves any number of limiters, multi limiters and shapers; their
 * keys are kept apart by their prefixes. Closing a limiter does not close its store.
 */
public sealed interface Store extends AutoCloseable permits MemoryStore, RedisStore, PostgresStore, SqliteStore {
    /** The native handle (internal). */
    long handle();

    /** Closes the store; later calls on limiters using it throw {@link StoreUnavailableException}. */
    @Override
    void close();
}
