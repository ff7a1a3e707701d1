package dev.throttlekit;

import java.time.Duration;
import java.util.Optional;

/**
 * Every throttlekit failure: unchecked, with a stable {@link #code()} ({@code "config_invalid"},
 * {@code "store_unavailable"}, {@code "rate_limit_exceeded"}, {@code "queue_full"},
 * {@code "not_implemented"}, the same strings as every other binding) and one subclass per code,
 * so a caller can {@code catch (StoreUnavailableException e)} or switch on {@code e.code()}.
 * {@code "internal"} ({@link InternalException}) reports a bug: a panic in the native code, caught
 * at the boundary instead of crashing the JVM.
 *
 * <p>A denied request is not an exception: it is a {@link Decision} with {@code allowed() == false}.
 */
public abstract sealed class ThrottleKitException extends RuntimeException
        permits ConfigInvalidException, StoreUnavailableException, RateLimitExceededException, QueueFullException,
                NotImplementedException, InternalException {
    private static final long serialVersionUID = 1L;
    private final long retryAfterMs;

    ThrottleKitException(String message, long retryAfterMs) {
        super(message);
        this.retryAfterMs = retryAfterMs;
    }

    /** The stable code. */
    public abstract String code();

    /** How long to wait before trying again, when the error knows ({@code queue_full}, {@code rate_limit_exceeded}). */
    public Optional<Duration> retryAfter() {
        return retryAfterMs < 0 ? Optional.empty() : Optional.of(Duration.ofMillis(retryAfterMs));
    }

    /** The exception for core's error code number (0 for a caught panic). Internal. */
    public static ThrottleKitException of(int code, String message, long retryAfterMs) {
        return switch (code) {
            case 1 -> new ConfigInvalidException(message, retryAfterMs);
            case 2 -> new StoreUnavailableException(message, retryAfterMs);
            case 3 -> new RateLimitExceededException(message, retryAfterMs);
            case 4 -> new QueueFullException(message, retryAfterMs);
            case 5 -> new NotImplementedException(message, retryAfterMs);
            default -> new InternalException(message, retryAfterMs);
        };
    }
}
