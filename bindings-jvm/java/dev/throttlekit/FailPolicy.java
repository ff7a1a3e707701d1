package dev.throttlekit;

/** What a limiter answers when its store cannot (connection refused, timeout). */
public enum FailPolicy {
    /** Deny, with {@code fallback == true} on the decision (the default for quotas). */
    FAIL_CLOSED,
    /** Allow, with {@code fallback == true} on the decision (availability over accuracy). */
    FAIL_OPEN,
    /** Throw {@link StoreUnavailableException} (the default for other strategies). */
    RAISE;

    String wire() {
        return name().toLowerCase();
    }
}
