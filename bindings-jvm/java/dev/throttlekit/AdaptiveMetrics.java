package dev.throttlekit;

/**
 * A consistent snapshot of an {@link AdaptiveLimiter}'s counters (cumulative since it was built)
 * and state.
 *
 * @param limit the current limit
 * @param inflight permits held now
 * @param waiting callers waiting in {@code acquire} now
 * @param acquired permits granted
 * @param rejected requests refused (including acquire timeouts)
 * @param succeeded releases with {@link Outcome#SUCCESS}
 * @param dropped releases with {@link Outcome#DROPPED}
 * @param ignored releases with {@link Outcome#IGNORE}, leaked permits included
 * @param leaked permits collected without a release or close
 * @param shortRtts successful round trips shorter than {@code minRttUs}, left out of the windows
 * @param windows windows closed (limit updates)
 * @param baselineRttUs the no-load round trip in µs (0 before it is known)
 * @param latencyUs the latest window's latency percentile in µs
 * @param slowStart whether the limit is still in slow start
 */
public record AdaptiveMetrics(long limit, long inflight, long waiting, long acquired, long rejected, long succeeded,
        long dropped, long ignored, long leaked, long shortRtts, long windows, long baselineRttUs, long latencyUs,
        boolean slowStart) {
    static AdaptiveMetrics of(long[] v) {
        return new AdaptiveMetrics(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13] != 0);
    }
}
