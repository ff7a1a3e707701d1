package dev.throttlekit;

import java.time.Duration;

/** A shaper reservation: accepted with a delay to wait, or rejected with how much too long the queue is. */
public record Reservation(boolean accepted, long delayMs) {
    /** {@link #delayMs()} as a duration. */
    public Duration delay() {
        return Duration.ofMillis(delayMs);
    }
}
