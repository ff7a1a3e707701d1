// The Kotlin companion of the Java library: `suspend` twins of the blocking calls (over the
// CompletableFuture twins, so a Redis round trip suspends the coroutine instead of holding a
// thread), kotlin.time.Duration factories, a builder DSL and small idioms. The Java library
// never needs it; it needs kotlin-stdlib and kotlinx-coroutines-core.
package dev.throttlekit.kotlin

import dev.throttlekit.Decision
import dev.throttlekit.Lease
import dev.throttlekit.Limiter
import dev.throttlekit.Mode
import dev.throttlekit.MultiDecision
import dev.throttlekit.MultiLimiter
import dev.throttlekit.Reservation
import dev.throttlekit.Shaper
import dev.throttlekit.Strategy
import kotlinx.coroutines.future.await
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.toJavaDuration

/** Suspending [Limiter.check]: a Redis round trip suspends instead of blocking the thread. */
suspend fun Limiter.awaitCheck(key: String, cost: Long = 1): Decision = checkAsync(key, cost).await()

/** Suspending [Limiter.peek]. */
suspend fun Limiter.awaitPeek(key: String): Decision = peekAsync(key).await()

/** Suspending [Limiter.forecast]. */
suspend fun Limiter.awaitForecast(key: String, cost: Long = 1): Decision = forecastAsync(key, cost).await()

/** Suspending [Limiter.reset]. */
suspend fun Limiter.awaitReset(key: String) {
    resetAsync(key).await()
}

/** Suspending [Limiter.checkMany]. */
suspend fun Limiter.awaitCheckMany(keys: List<String>, cost: Long = 1): List<Decision> = checkManyAsync(keys, cost).await()

/** Suspending [Limiter.releaseLeases]: every key's unspent credits, or those of keys idle for [idle]. */
suspend fun Limiter.awaitReleaseLeases(idle: Duration? = null): Long =
    (if (idle == null) releaseLeasesAsync() else releaseLeasesAsync(idle.toJavaDuration())).await()

/**
 * The leased mode in the builder DSL (`docs/leasing.md`):
 * `limiter(fixedWindow(1000, 1.seconds)) { store(redis); leased { batch(100); windowCoupled(true) } }`.
 */
fun Limiter.Builder.leased(configure: Lease.Builder.() -> Unit = {}): Limiter.Builder =
    mode(Mode.LEASED).lease(Lease.builder().apply(configure).build())

/** The cached-denial mode in the builder DSL: `limiter(s) { cachedDeny() }`. */
fun Limiter.Builder.cachedDeny(): Limiter.Builder = mode(Mode.CACHED_DENY)

/** The leased mode on a multi limiter's builder, as on [Limiter.Builder] (`lowWater` must stay 0 there). */
fun MultiLimiter.Builder.leased(configure: Lease.Builder.() -> Unit = {}): MultiLimiter.Builder =
    mode(Mode.LEASED).lease(Lease.builder().apply(configure).build())

/** The cached-denial mode on a multi limiter's builder. */
fun MultiLimiter.Builder.cachedDeny(): MultiLimiter.Builder = mode(Mode.CACHED_DENY)

/** Suspending [MultiLimiter.releaseLeases], as [Limiter.awaitReleaseLeases]. */
suspend fun MultiLimiter.awaitReleaseLeases(idle: Duration? = null): Long =
    (if (idle == null) releaseLeasesAsync() else releaseLeasesAsync(idle.toJavaDuration())).await()

/** Suspending [MultiLimiter.check]. */
suspend fun MultiLimiter.awaitCheck(keys: List<String>, cost: Long = 1): MultiDecision = checkAsync(keys, cost).await()

/** Suspending [MultiLimiter.reset]. */
suspend fun MultiLimiter.awaitReset(keys: List<String>) {
    resetAsync(keys).await()
}

/** Suspending [Shaper.reserve]. */
suspend fun Shaper.awaitReserve(key: String, cost: Long = 1): Reservation = reserveAsync(key, cost).await()

/** Suspending [Shaper.schedule]: the wait is a timer, not a blocked thread. */
suspend fun Shaper.awaitSchedule(key: String, cost: Long = 1): Reservation = scheduleAsync(key, cost).await()

/** Suspending [Shaper.reset]. */
suspend fun Shaper.awaitReset(key: String) {
    resetAsync(key).await()
}

/** Runs [block] when [key] is admitted (cost [cost]); otherwise returns [onDenied]'s answer for the decision. */
inline fun <T> Limiter.ifAllowed(key: String, cost: Long = 1, onDenied: (Decision) -> T, block: (Decision) -> T): T {
    val d = check(key, cost)
    return if (d.allowed()) block(d) else onDenied(d)
}

/** A limiter of [strategy], configured by [configure] on its builder: `limiter(gcra(10, 1.seconds)) { prefix("api") }`. */
fun limiter(strategy: Strategy, configure: Limiter.Builder.() -> Unit = {}): Limiter =
    Limiter.builder(strategy).apply(configure).build()

/** [Decision.retryAfterMs] as a Kotlin duration. */
val Decision.retryAfterDuration: Duration get() = retryAfterMs().milliseconds

/** GCRA: [limit] requests per [period], bursts of [burst] (default [limit]). */
fun gcra(limit: Long, period: Duration, burst: Long? = null): Strategy =
    if (burst == null) Strategy.gcra(limit, period.toJavaDuration()) else Strategy.gcra(limit, period.toJavaDuration(), burst)

/** A token bucket of [capacity] tokens refilling [refillPerSec] a second. */
fun tokenBucket(capacity: Long, refillPerSec: Double): Strategy = Strategy.tokenBucket(capacity, refillPerSec)

/** A fixed window of [limit] per [window]. */
fun fixedWindow(limit: Long, window: Duration): Strategy = Strategy.fixedWindow(limit, window.toJavaDuration())

/** A sliding window of [limit] per [window] over [buckets] sub-buckets (default 10). */
fun slidingWindow(limit: Long, window: Duration, buckets: Long? = null): Strategy =
    if (buckets == null) Strategy.slidingWindow(limit, window.toJavaDuration())
    else Strategy.slidingWindow(limit, window.toJavaDuration(), buckets)

/** An exact sliding-window log of [limit] per [window]. */
fun slidingWindowLog(limit: Long, window: Duration): Strategy = Strategy.slidingWindowLog(limit, window.toJavaDuration())
