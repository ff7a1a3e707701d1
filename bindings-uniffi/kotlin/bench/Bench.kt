// `make bench`'s Kotlin rows: throttlekit's `checkBlocking` (and the suspend `check`) on the
// memory store against Guava's RateLimiter, the JVM's usual pick, side by side in one run.
//
//   java -cp ... dev.throttlekit.bench.BenchKt [--quick]
//
// 1 key: one limiter vs one RateLimiter. 100k keys: one limiter (its store holds every key)
// vs a ConcurrentHashMap of RateLimiters, one per key, created on first use, as JVM users do.
// Both sides are set far above the offered rate, so every call is admitted and updates state
// (the path a healthy service takes). Each scenario warms up, then runs ROUNDS timed rounds
// alternating the two sides; the median round counts. Prints a human line per scenario and a
// `ROW` line per scenario for bench/summarize.py (ratio = Guava's time / ours: above 1 means
// throttlekit is faster).
package dev.throttlekit.bench

import com.google.common.util.concurrent.RateLimiter
import dev.throttlekit.*
import java.util.concurrent.ConcurrentHashMap
import kotlinx.coroutines.runBlocking

/** libc through JNA direct mapping: the cheapest native call JNA offers, for the reference row. */
private object Libc {
    init {
        com.sun.jna.Native.register(Libc::class.java, "c")
    }

    @JvmStatic external fun strnlen(s: ByteArray, max: Long): Int
}

/** Keeps results alive so the JIT cannot drop the calls. */
@Volatile private var sink = 0L

/** ns per call of `op(i)`, called in batches of 1000 until `millis` have passed. */
private inline fun timeNs(millis: Long, op: (Int) -> Boolean): Double {
    var admitted = 0L
    var calls = 0
    val start = System.nanoTime()
    val end = start + millis * 1_000_000
    var now = start
    while (now < end) {
        for (j in 0 until 1000) if (op(calls + j)) admitted++
        calls += 1000
        now = System.nanoTime()
    }
    sink += admitted
    return (now - start).toDouble() / calls
}

private fun median(xs: List<Double>) = xs.sorted()[xs.size / 2]

private class Scenario(val name: String, val ours: (Int) -> Boolean, val guava: (Int) -> Boolean)

fun main(args: Array<String>) {
    val quick = "--quick" in args
    val millis = if (quick) 300L else 1_000L
    val rounds = if (quick) 3 else 5
    val keys = Array(100_000) { "user:$it" }
    val rate = 1e9 // per second: never the binding constraint

    fun ourLimiter() = Limiter(
        Strategy.gcra(1_000_000_000, 1_000.0, 1_000_000_000),
        LimiterOptions(store = MemoryStore(null).asStore()),
    )

    val one = ourLimiter()
    val oneGuava = RateLimiter.create(rate)
    val many = ourLimiter()
    val manyGuava = ConcurrentHashMap<String, RateLimiter>()
    val scenarios = listOf(
        Scenario("1 key", { one.checkBlocking("user:1", 1).allowed }, { oneGuava.tryAcquire() }),
        Scenario(
            "100k keys",
            { i -> many.checkBlocking(keys[i % keys.size], 1).allowed },
            { i -> manyGuava.computeIfAbsent(keys[i % keys.size]) { RateLimiter.create(rate) }.tryAcquire() },
        ),
    )
    println("kotlin: throttlekit checkBlocking vs Guava RateLimiter.tryAcquire, memory, 1 thread, median of $rounds rounds of $millis ms")
    for (s in scenarios) {
        timeNs(2 * millis, s.ours)
        timeNs(2 * millis, s.guava) // warm-up: JIT, and (100k keys) every key of the map created
        val ours = ArrayList<Double>()
        val theirs = ArrayList<Double>()
        repeat(rounds) {
            ours += timeNs(millis, s.ours)
            theirs += timeNs(millis, s.guava)
        }
        val o = median(ours)
        val g = median(theirs)
        val ratio = g / o
        println("kotlin checkBlocking, ${s.name}: %.0f ns vs Guava %.0f ns -> %.2fx".format(o, g, ratio))
        println("ROW\tKotlin `checkBlocking`, GCRA, memory, ${s.name}\tGuava RateLimiter${if (s.name == "1 key") "" else " in a ConcurrentHashMap"}\t%.4f\t-\t%.0f vs %.0f ns".format(ratio, o, g))
    }

    // The suspend `check`, called one at a time from a coroutine: what a coroutine pays over
    // the blocking call (uniffi polls the Rust future through a continuation callback).
    val m = 20_000
    val suspendNs = runBlocking {
        var admitted = 0L
        repeat(m / 10) { if (one.check("user:1", 1).allowed) admitted++ } // warm-up
        val start = System.nanoTime()
        repeat(m) { if (one.check("user:1", 1).allowed) admitted++ }
        sink += admitted
        (System.nanoTime() - start).toDouble() / m
    }
    val blockingNs = timeNs(millis) { one.checkBlocking("user:1", 1).allowed }
    println("kotlin suspend check, 1 key: %.0f ns a call (checkBlocking: %.0f ns)".format(suspendNs, blockingNs))
    println("ROW\tKotlin suspend `check`, memory, 1 key\tthrottlekit `checkBlocking`\t%.4f\t-\t%.0f vs %.0f ns".format(blockingNs / suspendNs, suspendNs, blockingNs))

    // Where the time goes: uniffi's Kotlin allocates JNA Structures on every call (the call
    // status, by-value RustBuffers for the key and the returned record), and each is a JNA
    // `Memory`, whose allocation in Debian's JNA (5.13) registers a cleaner and a weak
    // reference. This row times that one allocation alone, for comparison.
    val memoryNs = timeNs(millis) { com.sun.jna.Memory(16).size() > 0 }
    println("reference: one JNA Memory(16) allocation alone: %.0f ns".format(memoryNs))
    val key = "user:12345\u0000".toByteArray()
    val directNs = timeNs(millis) { Libc.strnlen(key, 64) > 0 }
    println("reference: one JNA direct-mapped call taking a byte[] (libc strnlen): %.0f ns".format(directNs))
    if (sink == 42L) println()
}
