package dev.throttlekit.internal;

import dev.throttlekit.ConfigInvalidException;
import java.lang.ref.Reference;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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

    /**
     * {@inheritDoc}
     *
     * @throws ConfigInvalidException when called, before completion, from a stage that
     *     throttlekit's runtime thread runs: the call is hosted by that very thread, so the wait
     *     would never end (chain the call with {@code thenCompose}, or give the stage an executor)
     */
    @Override
    public T join() {
        refuseWaitOnRuntimeThread();
        return super.join();
    }

    /** {@inheritDoc} Refused as {@link #join()} is, on a runtime thread before completion. */
    @Override
    public T get() throws InterruptedException, ExecutionException {
        refuseWaitOnRuntimeThread();
        return super.get();
    }

    /** {@inheritDoc} Refused as {@link #join()} is, on a runtime thread before completion. */
    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        refuseWaitOnRuntimeThread();
        return super.get(timeout, unit);
    }

    private void refuseWaitOnRuntimeThread() {
        if (!isDone() && Native.onRuntimeThread()) {
            throw new ConfigInvalidException(
                    "a stage that throttlekit's runtime thread runs waited (join/get) for a throttlekit call that"
                            + " this thread hosts, which would never finish: chain it (thenCompose) or run the stage"
                            + " on an executor of its own (thenApplyAsync(fn, executor))",
                    -1);
        }
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
