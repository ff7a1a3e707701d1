package dev.throttlekit;

/**
 * A refused acquire: the limit was full (or the wait ran out). An ordinary outcome, not an error.
 *
 * @param limit the limit when the request was refused
 * @param inflight the requests in flight then
 * @param retryAfterMs a retry hint: the latest window's latency percentile (1000 before any window)
 * @param retryAfterSecs the {@code Retry-After} header's value: whole seconds, at least 1
 */
public record Rejection(long limit, long inflight, long retryAfterMs, long retryAfterSecs) implements Admission {}
