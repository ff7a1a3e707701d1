// Replays conformance-vector files through the public Kotlin API:
//
//   tk-conformance [--store memory|redis] [--redis-url URL] [--api blocking|suspend] FILE...
//
// The format is conformance-vectors/FORMAT.md. Each suite gets a fresh limiter (or multi
// limiter, or shaper) on a fresh store, driven by a ManualClock set to every op's `now`. Every
// call goes through the classes an application uses (`checkBlocking`, or the `suspend check`
// with --api suspend), so a pass proves what a JVM caller gets, including how bad costs are
// refused (`costFromDouble`, core's rule). On Redis the store runs in deterministic-replay mode
// and each suite gets its own key prefix, which stands in for a fresh store.
//
// Prints one line per mismatch (suite id, op index, expected, got) and ends with
// `N passed, M failed`; exits 0 only when M is 0 (2 when a file is malformed).
package dev.throttlekit.conformance

import dev.throttlekit.*
import java.io.File
import java.util.UUID
import kotlin.system.exitProcess
import kotlinx.coroutines.runBlocking

private val FILE_FIELDS = setOf("contractVersion", "generatedFrom", "frozen", "decisionFields", "note", "description", "suites")
private val SUITE_FIELDS = setOf(
    "id", "name", "comment", "primitive", "strategy", "shaper", "rule", "dimensions",
    "key", "keys", "prefix", "expectError", "ops",
)
private val DIMENSION_FIELDS = setOf("name", "strategy", "costMultiplier")
private val SHAPER_FIELDS = setOf("ratePerSec", "maxQueueMs")
private val OP_FIELDS = setOf("now", "op", "cost", "key", "keys", "expect", "expectError", "comment")
private val DECISION_FIELDS = setOf("allowed", "limit", "remaining", "resetAt", "retryAfterMs")
private val EXPECT_FIELDS = mapOf(
    "rateLimit" to DECISION_FIELDS,
    "multi" to DECISION_FIELDS + "binding",
    "shaper" to setOf("accepted", "delayMs"),
)
private val OPS = mapOf(
    "rateLimit" to setOf("check", "peek", "forecast", "reset"),
    "multi" to setOf("check", "reset"),
    "shaper" to setOf("reserve", "reset"),
)
private val DEFAULT_OP = mapOf("rateLimit" to "check", "multi" to "check", "shaper" to "reserve")

/** A vectors file does not follow FORMAT.md. */
class VectorFormatError(message: String) : Exception(message)

@Suppress("UNCHECKED_CAST")
private fun fields(obj: Any?, allowed: Set<String>, where: String): Map<String, Any?> {
    if (obj !is Map<*, *>) throw VectorFormatError("$where: expected an object")
    val unknown = obj.keys.filter { it !in allowed }
    if (unknown.isNotEmpty()) throw VectorFormatError("$where: unknown field(s) $unknown")
    return obj as Map<String, Any?>
}

private fun number(v: Any?, where: String): Double =
    (v as? JsonNumber)?.value ?: throw VectorFormatError("$where: expected a number")

@Suppress("UNCHECKED_CAST")
private fun strings(v: Any?, where: String): List<String> =
    (v as? List<*>)?.takeIf { l -> l.all { it is String } } as List<String>?
        ?: throw VectorFormatError("$where: expected a list of strings")

/** Pass and fail counts (one per op, plus one per expectError suite) and the mismatch lines. */
class Report {
    var passed = 0
    var failed = 0
    val failures = mutableListOf<String>()
    fun ok() { passed++ }
    fun fail(line: String) { failed++; failures += line }
}

/** Fresh stores for suites: a new MemoryStore each, or one Redis store under fresh prefixes. */
class Stores(val kind: String, redisUrl: String?) {
    private val redis: RedisStore? = if (kind == "redis") {
        RedisStore.connect(
            redisUrl ?: System.getenv("THROTTLEKIT_REDIS_URL") ?: "redis://127.0.0.1:6379",
            RedisStoreOptions(deterministicReplay = true),
        )
    } else null
    private val run = UUID.randomUUID().toString().take(12)
    private var suites = 0

    /** A store for one suite and the prefix to use on it. */
    fun next(prefix: String): Pair<Store, String> {
        val r = redis ?: return Pair(MemoryStore(null).asStore(), prefix)
        suites++
        val isolated = "tkconf:$run:$suites"
        return Pair(r.asStore(), if (prefix.isEmpty()) isolated else "$isolated:$prefix")
    }
}

/** One suite's target and how each op calls it. */
private sealed interface Target {
    fun call(op: String, key: Any?, cost: Double?, suspending: Boolean): Map<String, Any?>
    fun reset(key: Any?)
    fun close()
}

private fun <T> run(suspending: Boolean, blocking: () -> T, suspended: suspend () -> T): T =
    if (suspending) runBlocking { suspended() } else blocking()

private fun Decision.fields(): Map<String, Any?> = mapOf(
    "allowed" to allowed, "limit" to limit, "remaining" to remaining, "resetAt" to resetAt, "retryAfterMs" to retryAfterMs,
)

private class LimiterTarget(val l: Limiter) : Target {
    override fun call(op: String, key: Any?, cost: Double?, suspending: Boolean): Map<String, Any?> {
        val k = key as? String ?: throw VectorFormatError("key must be a string")
        return when (op) {
            "check" -> costFromDouble(cost!!).let { c -> run(suspending, { l.checkBlocking(k, c) }, { l.check(k, c) }) }.fields()
            "forecast" -> costFromDouble(cost!!).let { c -> run(suspending, { l.forecastBlocking(k, c) }, { l.forecast(k, c) }) }.fields()
            "peek" -> run(suspending, { l.peekBlocking(k) }, { l.peek(k) }).fields()
            else -> { run(suspending, { l.resetBlocking(k) }, { l.reset(k) }); emptyMap() }
        }
    }
    override fun reset(key: Any?) = l.resetBlocking(key as String)
    override fun close() = l.close()
}

private class MultiTarget(val m: MultiLimiter) : Target {
    override fun call(op: String, key: Any?, cost: Double?, suspending: Boolean): Map<String, Any?> {
        val keys = strings(key, "keys")
        return when (op) {
            "check" -> {
                val c = costFromDouble(cost!!)
                val d = run(suspending, { m.checkBlocking(keys, c) }, { m.check(keys, c) })
                d.decision.fields() + ("binding" to d.binding)
            }
            else -> { run(suspending, { m.resetBlocking(keys) }, { m.reset(keys) }); emptyMap() }
        }
    }
    override fun reset(key: Any?) = m.resetBlocking(strings(key, "keys"))
    override fun close() = m.close()
}

private class ShaperTarget(val s: Shaper) : Target {
    override fun call(op: String, key: Any?, cost: Double?, suspending: Boolean): Map<String, Any?> {
        val k = key as? String ?: throw VectorFormatError("key must be a string")
        return when (op) {
            "reserve" -> {
                val c = costFromDouble(cost!!)
                val r = run(suspending, { s.reserveBlocking(k, c) }, { s.reserve(k, c) })
                mapOf("accepted" to r.accepted, "delayMs" to r.delayMs)
            }
            else -> { run(suspending, { s.resetBlocking(k) }, { s.reset(k) }); emptyMap() }
        }
    }
    override fun reset(key: Any?) = s.resetBlocking(key as String)
    override fun close() = s.close()
}

private fun build(suite: Map<String, Any?>, primitive: String, store: Store, prefix: String, clock: ManualClock): Target =
    when (primitive) {
        "rateLimit" -> LimiterTarget(
            Limiter(Strategy.fromJson(toJson(suite["strategy"])), LimiterOptions(store = store, clock = clock, prefix = prefix)),
        )
        "shaper" -> {
            val o = fields(suite["shaper"], SHAPER_FIELDS, "shaper")
            ShaperTarget(
                Shaper(
                    number(o["ratePerSec"], "shaper.ratePerSec"),
                    number(o["maxQueueMs"], "shaper.maxQueueMs"),
                    ShaperOptions(store = store, clock = clock, prefix = prefix),
                ),
            )
        }
        else -> {
            val dims = (suite["dimensions"] as? List<*> ?: emptyList<Any?>()).mapIndexed { i, d ->
                val o = fields(d, DIMENSION_FIELDS, "dimensions[$i]")
                val mult = o["costMultiplier"]?.let { costFromDouble(number(it, "costMultiplier")) } ?: 1L
                Dimension(o["name"] as String, Strategy.fromJson(toJson(o["strategy"])), mult)
            }
            val rule = when (suite["rule"]) {
                "all" -> Rule.ALL
                "any" -> Rule.ANY
                else -> throw VectorFormatError("rule must be all or any")
            }
            MultiTarget(MultiLimiter(rule, dims, MultiLimiterOptions(store = store, clock = clock, prefix = prefix)))
        }
    }

/** Replays one suite; throws VectorFormatError when it is malformed. */
fun replaySuite(raw: Any?, index: Int, stores: Stores, suspending: Boolean, report: Report) {
    val suite = fields(raw, SUITE_FIELDS, "suites[$index]")
    val sid = (suite["id"] ?: suite["name"] ?: "suites[$index]") as String
    val primitive = suite["primitive"] as String? ?: "rateLimit"
    val allowedOps = OPS[primitive] ?: throw VectorFormatError("$sid: unknown primitive $primitive")
    val ops = suite["ops"] as? List<*> ?: throw VectorFormatError("$sid: ops must be a list")
    val parsed = ops.mapIndexed { i, raw ->
        val op = fields(raw, OP_FIELDS, "$sid op $i")
        val name = op["op"] as String? ?: DEFAULT_OP.getValue(primitive)
        if (name !in allowedOps) throw VectorFormatError("$sid op $i: op $name does not apply to $primitive")
        if ("now" !in op) throw VectorFormatError("$sid op $i: now is required")
        op["expect"]?.let { fields(it, EXPECT_FIELDS.getValue(primitive), "$sid op $i expect") }
        op
    }

    val clock = ManualClock(0)
    val (store, prefix) = stores.next(suite["prefix"] as String? ?: "")
    val target = try {
        build(suite, primitive, store, prefix, clock)
    } catch (e: ThrottleKitException) {
        if (suite["expectError"] == e.code) report.ok()
        else repeat(maxOf(1, ops.size)) { report.fail("$sid op $it: building failed: ${e.code}: ${e.message}") }
        return
    }
    if ("expectError" in suite) {
        report.fail("$sid: building should fail with ${suite["expectError"]}, but succeeded")
        target.close()
        return
    }

    val keyField = if (primitive == "multi") "keys" else "key"
    val usedKeys = LinkedHashSet<Any?>()
    parsed.forEachIndexed { i, op ->
        val name = op["op"] as String? ?: DEFAULT_OP.getValue(primitive)
        val key = op[keyField] ?: suite[keyField]
        usedKeys += key
        val cost = op["cost"]?.let { number(it, "$sid op $i cost") } ?: 1.0
        val got = try {
            clock.set(nowFromDouble(number(op["now"], "$sid op $i now")))
            target.call(name, key, cost, suspending)
        } catch (e: ThrottleKitException) {
            if (op["expectError"] == e.code) report.ok()
            else report.fail("$sid op $i: expected ${op["expect"]}, got ${e.code}: ${e.message}")
            return@forEachIndexed
        }
        if ("expectError" in op) {
            report.fail("$sid op $i: expected error ${op["expectError"]}, got $got")
            return@forEachIndexed
        }
        @Suppress("UNCHECKED_CAST")
        val expect = (op["expect"] as Map<String, Any?>?) ?: emptyMap()
        val mismatched = expect.filter { (k, v) -> !same(v, got[k]) }
        if (mismatched.isEmpty()) report.ok()
        else report.fail("$sid op $i ($name at ${op["now"]}): expected $expect, got $got")
    }
    if (stores.kind == "redis") usedKeys.forEach { target.reset(it) } // leave nothing behind
    target.close()
}

/** An expected JSON value against what the API returned (numbers compared by value). */
private fun same(expected: Any?, got: Any?): Boolean = when (expected) {
    is JsonNumber -> got is Long && expected.value == got.toDouble()
    else -> expected == got
}

/** Replays every file in `paths`. */
fun replayFiles(paths: List<String>, stores: Stores, suspending: Boolean): Report {
    val report = Report()
    for (path in paths) {
        val data = try {
            fields(parseJson(File(path).readText()), FILE_FIELDS, "file")
        } catch (e: JsonError) {
            throw VectorFormatError("$path: ${e.message}")
        }
        val suites = data["suites"] as? List<*> ?: throw VectorFormatError("$path: suites must be a list")
        try {
            suites.forEachIndexed { i, s -> replaySuite(s, i, stores, suspending, report) }
        } catch (e: VectorFormatError) {
            throw VectorFormatError("$path: ${e.message}")
        }
    }
    return report
}

fun main(args: Array<String>) {
    var store = "memory"
    var url: String? = null
    var api = "blocking"
    val files = mutableListOf<String>()
    val usage = "usage: tk-conformance [--store memory|redis] [--redis-url URL] [--api blocking|suspend] FILE..."
    var i = 0
    while (i < args.size) {
        when (val a = args[i]) {
            "--store" -> store = args.getOrNull(++i) ?: ""
            "--redis-url" -> url = args.getOrNull(++i)
            "--api" -> api = args.getOrNull(++i) ?: ""
            "-h", "--help" -> { println(usage); return }
            else -> if (a.startsWith("--")) { System.err.println(usage); exitProcess(2) } else files += a
        }
        i++
    }
    if (store !in setOf("memory", "redis") || api !in setOf("blocking", "suspend") || files.isEmpty()) {
        System.err.println(usage)
        exitProcess(2)
    }
    val report = try {
        replayFiles(files, Stores(store, url), api == "suspend")
    } catch (e: VectorFormatError) {
        System.err.println("error: ${e.message}"); exitProcess(2)
    } catch (e: ThrottleKitException) {
        System.err.println("error: ${e.code}: ${e.message}"); exitProcess(2)
    } catch (e: java.io.IOException) {
        System.err.println("error: ${e.message}"); exitProcess(2)
    }
    report.failures.forEach(::println)
    println("${report.passed} passed, ${report.failed} failed")
    exitProcess(if (report.failed == 0) 0 else 1)
}
