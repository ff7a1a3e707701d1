package dev.throttlekit;

/** Code {@code "internal"}: A bug in throttlekit: a panic in the native code, caught at the JNI boundary. */
public final class InternalException extends ThrottleKitException {
    private static final long serialVersionUID = 1L;
    /** The stable code of this class. */
    public static final String CODE = "internal";

    /** An exception with {@code message} and a retry hint in ms ({@code -1}: none). */
    public InternalException(String message, long retryAfterMs) {
        super(message, retryAfterMs);
    }

    @Override
    public String code() {
        return CODE;
    }
}
