package dev.throttlekit;

/**
 * A limiter's local tier counters, cumulative since it was built (all zero in {@link Mode#STRICT}).
 *
 * @param localAdmits requests admitted from leased credits, without the store
 * @param localDenials requests denied from a cached denial, without the store
 * @param leases leases sent to the store
 * @param lateCreditsDropped credits dropped because their grant arrived after its expiry
 * @param creditsReturned credits given back to the store ({@code close()}, {@link Limiter#releaseLeases}, evictions)
 */
public record TierStats(long localAdmits, long localDenials, long leases, long lateCreditsDropped, long creditsReturned) {
    static TierStats of(long[] v) {
        return new TierStats(v[0], v[1], v[2], v[3], v[4]);
    }
}
