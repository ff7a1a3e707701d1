package dev.throttlekit;

import dev.throttlekit.internal.Native;
import java.lang.ref.Cleaner;
import java.time.Duration;

/**
 * One request admitted by an {@link AdaptiveLimiter}. Release it once with its {@link Outcome};
 * {@link #close()} without an outcome releases it as {@link Outcome#IGNORE}, so
 * try-with-resources always frees the slot:
 *
 * <pre>{@code
 * try (Permit permit = (Permit) admission) {
 *     callTheService();
 *     permit.release(Outcome.SUCCESS);   // a timeout: Outcome.DROPPED
 * }
 * }</pre>
 *
 * Releasing twice is harmless (the second call returns {@code false}). A permit that becomes
 * unreachable without a release is released as {@code IGNORE} and counted in
 * {@link AdaptiveMetrics#leaked()}. Safe for concurrent use.
 */
public final class Permit implements Admission, AutoCloseable {
    private final Slot state;
    private final Cleaner.Cleanable cleanable;

    Permit(long handle) {
        state = new Slot(handle);
        cleanable = Handles.clean(this, state);
    }

    /** Releases with {@code outcome}, the round trip measured by core since the grant; whether this call released it. */
    public boolean release(Outcome outcome) {
        return release(outcome, true, 0);
    }

    /**
     * Releases with {@code outcome} and a round trip the caller measured (negative:
     * {@link ConfigInvalidException} for {@code rtt}, and the permit stays held).
     */
    public boolean release(Outcome outcome, Duration rtt) {
        return release(outcome, false, rtt.toNanos());
    }

    /** Releases as {@link Outcome#IGNORE} unless it already was released. */
    @Override
    public void close() {
        release(Outcome.IGNORE);
    }

    /** Whether it was released. */
    public boolean isReleased() {
        synchronized (state) {
            return state.h == 0;
        }
    }

    private boolean release(Outcome outcome, boolean measured, long rttNs) {
        if (outcome == null) throw new ConfigInvalidException("outcome must not be null", -1);
        boolean released;
        synchronized (state) {
            if (state.h == 0) return false;
            released = Native.adaptiveRelease(state.h, outcome.ordinal(), measured, rttNs);
        }
        cleanable.clean(); // frees the native permit now that it is released
        return released;
    }

    /** The native permit's address; freeing it unreleased is the leak core counts. */
    private static final class Slot implements Runnable {
        long h;

        Slot(long h) {
            this.h = h;
        }

        @Override
        public synchronized void run() {
            if (h != 0) Native.adaptivePermitFree(h);
            h = 0;
        }
    }
}
