package dev.throttlekit;

import java.lang.ref.Cleaner;
import java.util.function.LongConsumer;

/**
 * Frees native objects. {@code close()} only marks a native object closed (calls after it throw
 * {@link StoreUnavailableException}); its memory is freed by this cleaner once the Java object is
 * unreachable, so no call can be running on it. Every method keeps its object reachable until the
 * native call returns ({@code Reference.reachabilityFence}), and an asynchronous call until its
 * future completes.
 */
final class Handles {
    private static final Cleaner CLEANER = Cleaner.create();

    private Handles() {}

    /** Frees {@code handle} with {@code free} once {@code owner} is unreachable. */
    static void register(Object owner, long handle, LongConsumer free) {
        CLEANER.register(owner, () -> free.accept(handle));
    }

    /** {@code key}, or a {@link ConfigInvalidException} when it is null. */
    static String key(String key) {
        if (key == null) throw new ConfigInvalidException("key must not be null", -1);
        return key;
    }
}
