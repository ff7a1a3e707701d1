package dev.throttlekit;

/**
 * Where limiters keep their state: a {@link MemoryStore} (in process) or a {@link RedisStore}
 * (shared by a fleet). One store serves any number of limiters, multi limiters and shapers; their
 * keys are kept apart by their prefixes. Closing a limiter does not close its store.
 */
public sealed interface Store extends AutoCloseable permits MemoryStore, RedisStore {
    /** The native handle (internal). */
    long handle();

    /** Closes the store; later calls on limiters using it throw {@link StoreUnavailableException}. */
    @Override
    void close();
}
