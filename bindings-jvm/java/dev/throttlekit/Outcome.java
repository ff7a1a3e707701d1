package dev.throttlekit;

/** How a request that held an adaptive {@link Permit} ended. */
public enum Outcome {
    /** It completed: its round trip is a latency sample. */
    SUCCESS,
    /** Not a latency signal (a client error, a cancelled request, a cache hit). */
    IGNORE,
    /** A timeout or a 503 from below: a congestion signal. */
    DROPPED;

    /** The outcome named {@code "success"}, {@code "ignore"} or {@code "dropped"} (core's names); another is {@link ConfigInvalidException}. */
    public static Outcome parse(String name) {
        return switch (name == null ? "" : name) {
            case "success" -> SUCCESS;
            case "ignore" -> IGNORE;
            case "dropped" -> DROPPED;
            default -> throw new ConfigInvalidException("outcome must be success, ignore or dropped", -1);
        };
    }
}
