// The Kotlin binding's tests, as a plain main (no test framework on the classpath): each check
// prints on failure, and the run ends with `N passed, M failed`. With a Redis URL as the first
// argument, the Redis tests run too.
//
//   java -cp ... dev.throttlekit.test.TestsKt [REDIS_URL]
package dev.throttlekit.test

import dev.throttlekit.*
import java.util.concurrent.CountDownLatch
import java.util.concurrent.atomic.AtomicLong
import kotlin.concurrent.thread
import kotlin.system.exitProcess
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking

private var passed = 0
private var failed = 0

private fun test(name: String, body: () -> Unit) {
    try {
        body()
        passed++
    } catch (e: Throwable) {
        failed++
        println("FAIL $name: $e")
    }
}

private fun check(cond: Boolean, what: () -> String) {
    if (!cond) throw AssertionError(what())
}

/** Runs `body`, which must fail with a ThrottleKitException of `code`; returns it. */
private fun expectCode(code: String, body: () -> Unit): ThrottleKitException {
    try {
        body()
    } catch (e: ThrottleKitException) {
        check(e.code == code) { "expected $code, got ${e.code}: ${e.message}" }
        return e
    }
    throw AssertionError("expected $code, nothing was thrown")
}

private fun memory() = LimiterOptions(store = MemoryStore(null).asStore(), clock = ManualClock(0))

/** `threads` threads, each doing `perThread` cost-1 checks on one limiter: how many passed. */
private fun admittedByThreads(limiter: Limiter, threads: Int, perThread: Int): Long {
    val admitted = AtomicLong()
    val start = CountDownLatch(1)
    val workers = (0 until threads).map {
        thread {
            start.await()
            repeat(perThread) { if (limiter.checkBlocking("shared", 1).allowed) admitted.incrementAndGet() }
        }
    }
    start.countDown()
    workers.forEach { it.join() }
    return admitted.get()
}

private fun badInputs() {
    test("strategy options out of their domain are config_invalid") {
        expectCode("config_invalid") { Strategy.gcra(0, 1000.0, null) }
        expectCode("config_invalid") { Strategy.gcra(10, Double.NaN, null) }
        expectCode("config_invalid") { Strategy.gcra(10, 1000.0, -1) }
        expectCode("config_invalid") { Strategy.tokenBucket(5, 0.0) }
        expectCode("config_invalid") { Strategy.fixedWindow(10, 0) }
        expectCode("config_invalid") { Strategy.slidingWindow(10, 1000, 0) }
        expectCode("config_invalid") { Strategy.slidingWindowLog(-3, 1000) }
        expectCode("config_invalid") { Strategy.quota(10, "fortnightly", null, null, null, null, null) }
        expectCode("config_invalid") { Strategy.quota(10, "calendar-day", null, null, 841, null, null) }
        // 2^53 + 1 would round to 2^53 as a double and pass: refused before the conversion.
        expectCode("config_invalid") { Strategy.fixedWindow((1L shl 53) + 1, 1000) }
    }
    test("JSON specs: malformed, unknown kind, unknown option are config_invalid") {
        expectCode("config_invalid") { Strategy.fromJson("{") }
        expectCode("config_invalid") { Strategy.fromJson("""{"kind":"nope","options":{}}""") }
        expectCode("config_invalid") { Strategy.fromJson("""{"kind":"gcra","options":{"limit":1,"periodMs":1,"x":1}}""") }
        val s = Strategy.fromJson("""{"kind":"gcra","options":{"limit":10,"periodMs":1000}}""")
        check(s.kind() == "gcra" && s.limit() == 10L) { "kind ${s.kind()} limit ${s.limit()}" }
        check(Strategy.fromJson(s.toJson()).toJson() == s.toJson()) { "toJson does not round-trip" }
    }
    test("bad costs are config_invalid, and change nothing") {
        val l = Limiter(Strategy.fixedWindow(2, 1000), memory())
        for (bad in listOf(0L, -1L, Long.MIN_VALUE, (1L shl 53) + 1)) expectCode("config_invalid") { l.checkBlocking("k", bad) }
        expectCode("config_invalid") { l.forecastBlocking("k", 0) }
        expectCode("config_invalid") { runBlocking { l.check("k", -5) } }
        for (bad in listOf(1.5, 0.0, -1.0, Double.NaN, Double.POSITIVE_INFINITY)) expectCode("config_invalid") { costFromDouble(bad) }
        expectCode("config_invalid") { nowFromDouble(0.5) }
        check(l.peekBlocking("k").remaining == 2L) { "a refused cost consumed" }
    }
    test("metrics count checks by outcome when asked for, and are all zero otherwise") {
        val on = Limiter(Strategy.fixedWindow(2, 1000), memory().copy(metrics = true))
        repeat(3) { on.checkBlocking("k") }
        val m = on.metrics()
        check(m.enabled && m.allowed == 2UL && m.denied == 1UL) { "metrics $m" }
        check(m.errors["config_invalid"] == 0UL && m.latencyCounts.size == m.latencyBoundsUs.size + 1) { "metrics $m" }
        val off = Limiter(Strategy.fixedWindow(2, 1000), memory())
        off.checkBlocking("k")
        check(!off.metrics().enabled && off.metrics().allowed == 0UL) { "metrics off ${off.metrics()}" }
    }
    test("a memory store is bounded by default: long keys are config_invalid, evictions are counted") {
        val l = Limiter(Strategy.fixedWindow(5, 1000), memory())
        l.checkBlocking("k".repeat(256))
        expectCode("config_invalid") { l.checkBlocking("k".repeat(257)) }
        val small = MemoryStore(maxKeys = 4, maxKeyLength = 8)
        val s = Limiter(Strategy.fixedWindow(5, 1000), LimiterOptions(store = small.asStore(), clock = ManualClock(0)))
        expectCode("config_invalid") { s.checkBlocking("123456789") }
        for (i in 0 until 1000) s.checkBlocking("k$i")
        check(small.evictions() > 0UL && small.len() < 1000) { "evictions ${small.evictions()}, len ${small.len()}" }
        expectCode("config_invalid") { MemoryStore(maxKeyLength = 0) }
    }
    test("other constructors refuse bad arguments with config_invalid") {
        expectCode("config_invalid") { MemoryStore(0) }
        expectCode("config_invalid") { MemoryStore(-1) }
        expectCode("config_invalid") { ManualClock(0).advance(-1) }
        expectCode("config_invalid") { Shaper(0.0, 100.0, ShaperOptions()) }
        expectCode("config_invalid") { Shaper(10.0, -1.0, ShaperOptions()) }
        expectCode("config_invalid") { MultiLimiter(Rule.ALL, emptyList(), MultiLimiterOptions()) }
        val s = Strategy.fixedWindow(5, 1000)
        expectCode("config_invalid") { MultiLimiter(Rule.ALL, listOf(Dimension("a", s, 0)), MultiLimiterOptions()) }
        val m = MultiLimiter(Rule.ALL, listOf(Dimension("a", s), Dimension("b", s)), MultiLimiterOptions())
        expectCode("config_invalid") { m.checkBlocking(listOf("only-one"), 1) }
    }
    test("every error case carries its stable code, and the codes are core's list") {
        check(errorCodes() == listOf("config_invalid", "store_unavailable", "rate_limit_exceeded", "queue_full", "not_implemented")) {
            "codes ${errorCodes()}"
        }
        val e = expectCode("config_invalid") { Strategy.gcra(0, 1.0, null) }
        check(e is ThrottleKitException.ConfigInvalid && e.message!!.contains("limit")) { "message ${e.message}" }
    }
    test("a Redis URL nobody serves is store_unavailable, not a hang or a crash") {
        val port = java.net.ServerSocket(0).use { it.localPort } // closed again: nobody listens
        expectCode("store_unavailable") { RedisStore.connect("redis://127.0.0.1:$port", RedisStoreOptions(timeoutMs = 300)) }
        expectCode("config_invalid") { RedisStore.connect("redis://127.0.0.1:1", RedisStoreOptions(timeoutMs = -1)) }
    }
    test("core's connection options are checked by core: bad mode, scripting, sentinel without a service") {
        val url = "redis://127.0.0.1:1"
        expectCode("config_invalid") { RedisStore.connect(url, RedisStoreOptions(mode = "ring")) }
        expectCode("config_invalid") { RedisStore.connect(url, RedisStoreOptions(scripting = "lua")) }
        expectCode("config_invalid") { RedisStore.connect(url, RedisStoreOptions(mode = "sentinel")) }
        expectCode("config_invalid") { RedisStore.connect(url, RedisStoreOptions(tlsCertFile = "/nonexistent.pem")) }
    }
}

private fun behaviour() {
    test("checkBlocking and the suspend check decide the same: K of N admitted, retryAfterMs on denial") {
        val clock = ManualClock(1_000)
        val l = Limiter(Strategy.fixedWindow(3, 1_000), LimiterOptions(clock = clock, prefix = "api"))
        check(l.prefix() == "api" && l.strategy().kind() == "fixedWindow") { "accessors" }
        val got = (1..3).map { l.checkBlocking("u", 1).allowed } + runBlocking { l.check("u") }.allowed
        check(got == listOf(true, true, true, false)) { "got $got" }
        val d = l.checkBlocking("u", 1)
        check(!d.allowed && d.retryAfterMs == 1_000L && d.remaining == 0L && d.limit == 3L) { "denied $d" }
        clock.advance(1_000)
        check(l.checkBlocking("u", 1).allowed) { "not allowed after the window" }
        l.resetBlocking("u")
        check(l.peekBlocking("u").remaining == 3L) { "reset kept state" }
        check(l.checkManyBlocking(listOf("a", "b"), 3).all { it.allowed && it.remaining == 0L }) { "checkMany" }
    }
    test("a MemoryStore is shared by the limiters it is handed to") {
        val store = MemoryStore(null)
        check(store.isEmpty()) { "a new store holds keys" }
        val options = LimiterOptions(store = store.asStore(), clock = ManualClock(0), prefix = "p")
        val a = Limiter(Strategy.fixedWindow(1, 60_000), options)
        val b = Limiter(Strategy.fixedWindow(1, 60_000), options)
        check(a.checkBlocking("k").allowed && !b.checkBlocking("k").allowed) { "the second limiter did not see the first's use" }
        check(store.len() == 1L) { "len ${store.len()}" }
    }
    test("8 threads on one limiter admit exactly K") {
        val l = Limiter(Strategy.fixedWindow(500, 60_000), memory())
        val admitted = admittedByThreads(l, 8, 200)
        check(admitted == 500L) { "admitted $admitted of 1600, limit 500" }
    }
    test("1000 coroutines on one limiter admit exactly K") {
        val l = Limiter(Strategy.gcra(100, 60_000.0, 100), memory())
        val results = runBlocking { (1..1000).map { async { l.check("shared", 1).allowed } }.awaitAll() }
        check(results.count { it } == 100) { "admitted ${results.count { it }}" }
    }
    test("MultiLimiter ALL reports the binding dimension") {
        val clock = ManualClock(0)
        val m = MultiLimiter(
            Rule.ALL,
            listOf(Dimension("ip", Strategy.fixedWindow(5, 1000)), Dimension("user", Strategy.fixedWindow(2, 1000))),
            MultiLimiterOptions(clock = clock),
        )
        check(m.rule() == Rule.ALL && m.dimensionNames() == listOf("ip", "user")) { "accessors" }
        repeat(2) { check(m.checkBlocking(listOf("1.2.3.4", "bob"), 1).decision.allowed) { "allowed" } }
        val d = runBlocking { m.check(listOf("1.2.3.4", "bob")) }
        check(!d.decision.allowed && d.binding == "user" && d.dimensions.size == 2) { "got $d" }
    }
    test("Shaper: reserve spaces departures, schedule fails with queue_full and a retry hint") {
        val clock = ManualClock(0)
        val s = Shaper(10.0, 150.0, ShaperOptions(clock = clock))
        val r = (1..3).map { s.reserveBlocking("q", 1) }
        check(r.map { it.accepted } == listOf(true, true, false) && r[0].delayMs == 0L && r[1].delayMs == 100L) { "got $r" }
        val e = expectCode("queue_full") { s.scheduleBlocking("q", 5) }
        check((e.retryAfterMs ?: 0) > 0) { "retry hint ${e.retryAfterMs}" }
        s.resetBlocking("q")
        check(runBlocking { s.schedule("q", 1) }.accepted) { "schedule after reset" }
    }
}

private fun redis(url: String) {
    test("Redis: blocking and suspend checks share one limit; 4 threads admit exactly K") {
        val store = RedisStore.connect(url, RedisStoreOptions(timeoutMs = 2000))
        val prefix = "tk-kotlin-test:${System.nanoTime()}"
        val l = Limiter(Strategy.fixedWindow(100, 600_000), LimiterOptions(store = store.asStore(), prefix = prefix))
        check(l.checkBlocking("a", 60).allowed && runBlocking { l.check("a", 40) }.allowed) { "allowed" }
        check(!l.checkBlocking("a", 1).allowed) { "over the limit" }
        l.resetBlocking("a")
        val admitted = admittedByThreads(l, 4, 50)
        check(admitted == 100L) { "admitted $admitted of 200" }
        l.resetBlocking("shared")
    }
    test("Redis: a closed store is store_unavailable under raise, a fallback decision under failOpen") {
        val store = RedisStore.connect(url, RedisStoreOptions(timeoutMs = 500))
        val raise = Limiter(Strategy.gcra(5, 1000.0, null), LimiterOptions(store = store.asStore(), failPolicy = FailPolicy.RAISE))
        val open = Limiter(Strategy.gcra(5, 1000.0, null), LimiterOptions(store = store.asStore(), failPolicy = FailPolicy.FAIL_OPEN))
        store.disconnectBlocking()
        expectCode("store_unavailable") { raise.checkBlocking("k", 1) }
        val d = open.checkBlocking("k", 1)
        check(d.allowed && d.fallback) { "fail-open gave $d" }
        check(open.failPolicy() == FailPolicy.FAIL_OPEN) { "policy ${open.failPolicy()}" }
    }
}

fun main(args: Array<String>) {
    badInputs()
    behaviour()
    args.firstOrNull()?.let(::redis)
    println("$passed passed, $failed failed")
    exitProcess(if (failed == 0) 0 else 1)
}
