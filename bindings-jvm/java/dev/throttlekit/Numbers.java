package dev.throttlekit;

import dev.throttlekit.internal.Native;

/**
 * Core's rules for numbers that arrive as doubles (JSON, a config file): a cost must be a
 * positive whole number up to 2^53, a time a whole number of epoch ms within ±2^53. Anything else
 * is {@link ConfigInvalidException} with core's message, as in every other binding.
 */
public final class Numbers {
    private Numbers() {}

    /** A cost from a double: {@code 1.5}, {@code 0}, {@code NaN} are refused. */
    public static long costFromDouble(double v) {
        return Native.fromDouble(0, v);
    }

    /** An epoch-ms time from a double. */
    public static long nowFromDouble(double v) {
        return Native.fromDouble(1, v);
    }
}
