import dev.throttlekit.*
import kotlinx.coroutines.runBlocking

fun main(args: Array<String>) {
    // In memory: 100 requests a minute, bursts of 10, keys namespaced under "api".
    val limiter = Limiter(Strategy.gcra(100, 60_000.0, 10), LimiterOptions(prefix = "api"))
    val d = limiter.checkBlocking("user:42")
    if (!d.allowed) println("429: retry in ${d.retryAfterMs} ms")
    println("memory: allowed=${d.allowed} remaining=${d.remaining}")

    // On Redis, shared by a fleet: one atomic script call per decision; `check` suspends.
    val url = args.firstOrNull() ?: "redis://127.0.0.1:6379"
    val redis = RedisStore.connect(url, RedisStoreOptions(timeoutMs = 500, failPolicy = FailPolicy.FAIL_OPEN))
    val shared = Limiter(Strategy.tokenBucket(20, 5.0), LimiterOptions(store = redis.asStore(), prefix = "quickstart"))
    val r = runBlocking { shared.check("user:42", 2) }
    println("redis: allowed=${r.allowed} remaining=${r.remaining}")
    try {
        Strategy.gcra(0, 60_000.0, null)
    } catch (e: ThrottleKitException) {
        println("error code: ${e.code}") // config_invalid
    }
}
