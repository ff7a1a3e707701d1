package dev.throttlekit;

/** Code {@code "queue_full"}: The shaper's wait would exceed its maximum queue time ({@link Shaper#schedule}). */
public final class QueueFullException extends ThrottleKitException {
    private static final long serialVersionUID = 1L;
    /** The stable code of this class. */
    public static final String CODE = "queue_full";

    /** An exception with {@code message} and a retry hint in ms ({@code -1}: none). */
    public QueueFullException(String message, long retryAfterMs) {
        super(message, retryAfterMs);
    }

    @Override
    public String code() {
        return CODE;
    }
}
