package dev.throttlekit;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The counters of a limiter (a multi limiter: its combined decisions; a shaper: reservations
 * accepted as allowed, rejected as denied), cumulative since it was built: feed them to
 * OpenTelemetry observable counters and an explicit-bucket histogram. {@code enabled} is false
 * (and all zero) unless it was built with {@code metrics(true)}.
 *
 * @param peeks peeks answered (a failed one counts in {@code errors}), apart from the checks
 * @param forecasts forecasts answered, apart from the checks
 * @param errors failed calls by code ({@code "config_invalid"}, ...), zeros included
 * @param latencyBoundsUs the histogram's upper bounds in µs (the last is {@code Long.MAX_VALUE})
 * @param latencyCounts Redis calls per bucket
 */
public record Metrics(boolean enabled, long allowed, long denied, long fallbackAllowed, long fallbackDenied,
        long peeks, long forecasts, Map<String, Long> errors, long latencySumUs, List<Long> latencyBoundsUs, List<Long> latencyCounts) {
    private static final String[] CODES = {"config_invalid", "store_unavailable", "rate_limit_exceeded", "queue_full", "not_implemented"};

    static Metrics of(long[] v) {
        Map<String, Long> errors = new LinkedHashMap<>();
        for (int i = 0; i < CODES.length; i++) errors.put(CODES[i], v[5 + i]);
        List<Long> bounds = new ArrayList<>();
        List<Long> counts = new ArrayList<>();
        for (int i = 13; i + 1 < v.length; i += 2) {
            bounds.add(v[i]);
            counts.add(v[i + 1]);
        }
        return new Metrics(v[0] != 0, v[1], v[2], v[3], v[4], v[11], v[12], java.util.Collections.unmodifiableMap(errors), v[10],
                List.copyOf(bounds), List.copyOf(counts));
    }

    /** Calls timed (the histogram's total count). */
    public long latencyCount() {
        return latencyCounts.stream().mapToLong(Long::longValue).sum();
    }
}
