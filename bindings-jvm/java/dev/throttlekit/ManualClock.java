package dev.throttlekit;

import dev.throttlekit.internal.Native;
import java.lang.ref.Reference;
import java.time.Duration;
import java.time.Instant;

/**
 * A clock that moves only when told to (tests, replays). Hand it to a limiter's builder; the
 * memory store expires keys on it too. {@link #advance} is forward only; {@link #set} may go back.
 */
public final class ManualClock {
    private final long h;

    /** A clock showing {@code nowMs} (epoch ms, within ±2^53). */
    public ManualClock(long nowMs) {
        h = Native.clockNew(nowMs);
        Handles.register(this, h, Native::clockFree);
    }

    /** A clock showing {@code now}. */
    public static ManualClock at(Instant now) {
        if (now == null) throw new ConfigInvalidException("now must not be null", -1);
        return new ManualClock(now.toEpochMilli());
    }

    /** The time shown, epoch ms. */
    public long nowMs() {
        return op(0, 0);
    }

    /** The time shown. */
    public Instant now() {
        return Instant.ofEpochMilli(nowMs());
    }

    /** Shows {@code nowMs} (backwards allowed). */
    public void set(long nowMs) {
        op(1, nowMs);
    }

    /** Moves forward by {@code ms} (negative is {@code config_invalid}); returns the new time. */
    public long advance(long ms) {
        return op(2, ms);
    }

    /** Moves forward by {@code d}; returns the new time in epoch ms. */
    public long advance(Duration d) {
        if (d == null) throw new ConfigInvalidException("advance must not be null", -1);
        try {
            return advance(d.toMillis());
        } catch (ArithmeticException e) {
            throw new ConfigInvalidException("advance is too long", -1);
        }
    }

    long handle() {
        return h;
    }

    private long op(int op, long v) {
        try {
            return Native.clockOp(h, op, v);
        } finally {
            Reference.reachabilityFence(this);
        }
    }
}
