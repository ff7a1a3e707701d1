package dev.throttlekit;

/** Code {@code "rate_limit_exceeded"}: A request was refused with an exception instead of a denied decision ({@link Decision#orThrow()}). */
public final class RateLimitExceededException extends ThrottleKitException {
    private static final long serialVersionUID = 1L;
    /** The stable code of this class. */
    public static final String CODE = "rate_limit_exceeded";

    /** An exception with {@code message} and a retry hint in ms ({@code -1}: none). */
    public RateLimitExceededException(String message, long retryAfterMs) {
        super(message, retryAfterMs);
    }

    @Override
    public String code() {
        return CODE;
    }
}
