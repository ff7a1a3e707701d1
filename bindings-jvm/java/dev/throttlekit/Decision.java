package dev.throttlekit;

import java.time.Duration;
import java.time.Instant;

/**
 * One decision: whether the request is allowed, the limit it was judged against, the whole units
 * still admissible, when the key is fully replenished (epoch ms) and how long to wait when denied
 * (0 exactly when allowed). {@code fallback} is true when the store was unavailable and the
 * limiter's fail policy decided.
 */
public record Decision(boolean allowed, long limit, long remaining, long resetAtMs, long retryAfterMs, boolean fallback) {
    /** {@link #resetAtMs()} as an instant. */
    public Instant resetAt() {
        return Instant.ofEpochMilli(resetAtMs);
    }

    /** {@link #retryAfterMs()} as a duration. */
    public Duration retryAfter() {
        return Duration.ofMillis(retryAfterMs);
    }

    /** This decision if allowed, else a {@link RateLimitExceededException} carrying the retry hint. */
    public Decision orThrow() {
        if (allowed) return this;
        throw new RateLimitExceededException("rate limit exceeded: retry in " + retryAfterMs + " ms", retryAfterMs);
    }

    static Decision of(long[] v, int at) {
        return new Decision(v[at] != 0, v[at + 1], v[at + 2], v[at + 3], v[at + 4], v[at + 5] != 0);
    }
}
