package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Native;
import dev.throttlekit.internal.NativeFuture;
import dev.throttlekit.internal.Scratch;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * The plumbing every object over a native handle shares ({@link Limiter}, {@link MultiLimiter},
 * {@link Shaper}, the stores, the clock), written once: building the native object, freeing it,
 * closing it, the {@code CompletableFuture} twins and the calls through the thread's
 * {@link Scratch} buffer.
 *
 * <p>{@code close()} only marks a native object closed (calls after it throw
 * {@link StoreUnavailableException}); its memory is freed by this cleaner once the Java object is
 * unreachable, so no call can be running on it. Every method keeps its object reachable until the
 * native call returns ({@code Reference.reachabilityFence}), and an asynchronous call until its
 * future completes.
 */
final class Handles {
    private static final Cleaner CLEANER = Cleaner.create();

    private Handles() {}

    /** A native constructor taking its options as JSON, a store handle and a clock handle (0: the defaults). */
    interface New {
        long create(byte[] config, long store, long clock);
    }

    /** A native call that completes {@code f} later, from a runtime thread. */
    interface Start {
        void start(NativeFuture<?> f);
    }

    /** A native call through the thread's scratch buffer: the key's length there, results back there. */
    interface ScratchCall {
        void call(long addr, int len);
    }

    /**
     * Builds a native object from {@code config} on {@code store} and {@code clock} (either may be
     * null) and has it freed with {@code free} once {@code owner} is unreachable.
     */
    static long create(Object owner, New ctor, Map<String, Object> config, Store store, ManualClock clock, LongConsumer free) {
        long h = ctor.create(Json.write(config).getBytes(StandardCharsets.UTF_8),
                store == null ? 0 : store.handle(), clock == null ? 0 : clock.handle());
        Reference.reachabilityFence(store);
        Reference.reachabilityFence(clock);
        register(owner, h, free);
        return h;
    }

    /** Frees {@code handle} with {@code free} once {@code owner} is unreachable. */
    static void register(Object owner, long handle, LongConsumer free) {
        CLEANER.register(owner, () -> free.accept(handle));
    }

    /** Runs {@code action} once {@code owner} is unreachable, or when the returned cleanable is cleaned. */
    static Cleaner.Cleanable clean(Object owner, Runnable action) {
        return CLEANER.register(owner, action);
    }

    /** Closes {@code h} with {@code close}, keeping {@code owner} reachable meanwhile. */
    static void close(Object owner, long h, LongConsumer close) {
        try {
            close.accept(h);
        } finally {
            Reference.reachabilityFence(owner);
        }
    }

    /**
     * A {@code CompletableFuture} twin: the future {@code start} completes with the result longs,
     * converted by {@code convert}; already failed when the call cannot start (bad arguments,
     * closed). It keeps {@code owner} (so its native object) reachable until it completes.
     */
    static <T> CompletableFuture<T> async(Object owner, Function<long[], T> convert, Start start) {
        NativeFuture<T> f = new NativeFuture<>(owner, convert);
        try {
            start.start(f);
        } catch (ThrottleKitException e) {
            return CompletableFuture.failedFuture(e);
        }
        return f;
    }

    /** Writes {@code key} to the thread's scratch buffer, runs {@code call} on it, and returns the buffer (its results). */
    static Scratch scratch(Object owner, String key, ScratchCall call) {
        Scratch s = Scratch.get();
        int len = s.key(key(key));
        try {
            call.call(s.address(), len);
        } finally {
            Reference.reachabilityFence(owner);
        }
        return s;
    }

    /** The decision in the scratch buffer's six result longs. */
    static Decision decision(Scratch s) {
        return new Decision(s.out(0) != 0, s.out(1), s.out(2), s.out(3), s.out(4), s.out(5) != 0);
    }

    /** {@code key} as UTF-8 bytes (for the asynchronous calls), or a {@link ConfigInvalidException} when it is null. */
    static byte[] utf8(String key) {
        return key(key).getBytes(StandardCharsets.UTF_8);
    }

    /** {@code key}, or a {@link ConfigInvalidException} when it is null. */
    static String key(String key) {
        if (key == null) throw new ConfigInvalidException("key must not be null", -1);
        return key;
    }
}
