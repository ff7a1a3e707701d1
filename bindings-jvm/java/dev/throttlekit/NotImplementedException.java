package dev.throttlekit;

/** Code {@code "not_implemented"}: The operation is not available on this store. */
public final class NotImplementedException extends ThrottleKitException {
    private static final long serialVersionUID = 1L;
    /** The stable code of this class. */
    public static final String CODE = "not_implemented";

    /** An exception with {@code message} and a retry hint in ms ({@code -1}: none). */
    public NotImplementedException(String message, long retryAfterMs) {
        super(message, retryAfterMs);
    }

    @Override
    public String code() {
        return CODE;
    }
}
