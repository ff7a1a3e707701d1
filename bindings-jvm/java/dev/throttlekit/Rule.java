package dev.throttlekit;

/** How a {@link MultiLimiter} admits a request. */
public enum Rule {
    /** Every dimension must allow; then all commit, else none does. */
    ALL,
    /** One allowing dimension suffices; only the allowing ones commit. */
    ANY;

    String wire() {
        return name().toLowerCase();
    }
}
