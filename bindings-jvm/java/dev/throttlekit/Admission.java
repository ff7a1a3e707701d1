package dev.throttlekit;

import java.util.Optional;

/**
 * The answer to an {@link AdaptiveLimiter} acquire: a {@link Permit}, or a {@link Rejection}.
 *
 * <pre>{@code
 * Admission a = limiter.tryAcquire("live");
 * if (a instanceof Rejection r) { ... 503, Retry-After: r.retryAfterSecs() ... }
 * try (Permit permit = (Permit) a) { ... permit.release(Outcome.SUCCESS); }
 * }</pre>
 */
public sealed interface Admission permits Permit, Rejection {
    /** The permit, if granted. */
    default Optional<Permit> permit() {
        return this instanceof Permit p ? Optional.of(p) : Optional.empty();
    }

    /** Whether a permit was granted. */
    default boolean granted() {
        return this instanceof Permit;
    }
}
