package dev.throttlekit.internal;

import java.lang.ref.Reference;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The future a {@code CompletableFuture} twin returns, completed by the native half with its
 * result longs, converted here ({@code Decision}, {@code Reservation}, ...). Completing the
 * caller's own future, instead of a {@code long[]} future with dependent stages for the
 * conversion and for keeping the owner alive, spares each call two stages and their wake-ups
 * on the runtime thread (the {@code 64 CompletableFutures in flight} bench row). A failure
 * completes it with the {@code ThrottleKitException} itself, as a call that cannot start does.
 *
 * <p>It holds its owner (a limiter, multi limiter or shaper), so the owner's native object lives
 * until the call completes; the native half holds this future by a global reference until then.
 */
public final class NativeFuture<T> extends CompletableFuture<T> {
    private final Object owner;
    private final Function<long[], T> convert;

    public NativeFuture(Object owner, Function<long[], T> convert) {
        this.owner = owner;
        this.convert = convert;
    }

    void done(long[] values) {
        try {
            complete(convert.apply(values));
        } catch (RuntimeException e) {
            completeExceptionally(e);
        } finally {
            Reference.reachabilityFence(owner);
        }
    }

    /** The first {@code n} of {@code a..f} as the result longs (built here, not by native code). */
    void done(int n, long a, long b, long c, long d, long e, long f) {
        long[] v = new long[n];
        if (n > 0) v[0] = a;
        if (n > 1) v[1] = b;
        if (n > 2) v[2] = c;
        if (n > 3) v[3] = d;
        if (n > 4) v[4] = e;
        if (n > 5) v[5] = f;
        done(v);
    }

    void failed(Throwable error) {
        try {
            completeExceptionally(error);
        } finally {
            Reference.reachabilityFence(owner);
        }
    }
}
