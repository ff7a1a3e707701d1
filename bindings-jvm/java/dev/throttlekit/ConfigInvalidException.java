package dev.throttlekit;

/** Code {@code "config_invalid"}: An option, a cost, a key or another argument is out of its domain. */
public final class ConfigInvalidException extends ThrottleKitException {
    private static final long serialVersionUID = 1L;
    /** The stable code of this class. */
    public static final String CODE = "config_invalid";

    /** An exception with {@code message} and a retry hint in ms ({@code -1}: none). */
    public ConfigInvalidException(String message, long retryAfterMs) {
        super(message, retryAfterMs);
    }

    @Override
    public String code() {
        return CODE;
    }
}
