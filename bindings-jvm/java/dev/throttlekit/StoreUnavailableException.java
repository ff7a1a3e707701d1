package dev.throttlekit;

/** Code {@code "store_unavailable"}: The store could not answer (connection refused, timeout), or the object was closed. */
public final class StoreUnavailableException extends ThrottleKitException {
    private static final long serialVersionUID = 1L;
    /** The stable code of this class. */
    public static final String CODE = "store_unavailable";

    /** An exception with {@code message} and a retry hint in ms ({@code -1}: none). */
    public StoreUnavailableException(String message, long retryAfterMs) {
        super(message, retryAfterMs);
    }

    @Override
    public String code() {
        return CODE;
    }
}
