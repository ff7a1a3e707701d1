package dev.throttlekit;

/**
 * A limiter's two-tier mode for hot keys (issue #23; the table, the bounds and how each fails are in
 * {@code docs/leasing.md}). Core decides everything; the mode only says which tier answers.
 */
public enum Mode {
    /** Every decision asks the store (one Redis round trip). The default. */
    STRICT,
    /**
     * A denial is kept locally until its {@code retryAfter} and answered without the store for any
     * request at least as large. Exact: it never admits more than {@link #STRICT}.
     */
    CACHED_DENY,
    /**
     * One store call leases up to {@link Lease#batch()} units; the asking request is admitted and the
     * rest are spent locally. Over-admits at most {@code N·(batch−1)} per window for {@code N}
     * processes, nothing with {@link Lease#windowCoupled()}.
     */
    LEASED;

    String wire() {
        return name().toLowerCase();
    }

    static Mode ofWire(String wire) {
        return valueOf(wire.toUpperCase());
    }
}
