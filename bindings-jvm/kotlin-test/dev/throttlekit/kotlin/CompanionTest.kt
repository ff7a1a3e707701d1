package dev.throttlekit.kotlin

import dev.throttlekit.ConfigInvalidException
import dev.throttlekit.ManualClock
import dev.throttlekit.Mode
import dev.throttlekit.RedisStore
import dev.throttlekit.Rule
import dev.throttlekit.MultiLimiter
import dev.throttlekit.Shaper
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.util.UUID
import kotlin.time.Duration.Companion.hours
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds

/** The Kotlin companion: suspend twins, Duration factories, the DSL, on memory and Redis. */
class CompanionTest {
    /**
     * A clock standing still at the start of the current hour, for the Redis tests that count an
     * hour's window across many calls: on the system clock an hour boundary mid-test would start
     * the count over. Redis expires the window's key on its own clock at the window's end, an hour away.
     */
    private fun thisHour(): ManualClock {
        val now = System.currentTimeMillis()
        return ManualClock(now - now % 3_600_000)
    }

    @Test
    fun suspendTwinsOnMemory() = runBlocking {
        limiter(gcra(2, 1.hours)) { prefix("kt") }.use { l ->
            assertTrue(l.awaitCheck("k").allowed())
            assertEquals(1, l.awaitPeek("k").remaining())
            assertTrue(l.awaitForecast("k", 1).allowed())
            assertTrue(l.awaitCheck("k").allowed())
            val denied = l.awaitCheck("k")
            assertFalse(denied.allowed())
            assertTrue(denied.retryAfterDuration > 0.milliseconds)
            l.awaitReset("k")
            assertEquals(2, l.awaitCheckMany(listOf("a", "b")).size)
            assertEquals("denied", l.ifAllowed("k", 5, onDenied = { "denied" }) { "ok" })
        }
    }

    @Test
    fun exactlyKFromManyCoroutinesOnRedis() = runBlocking {
        val url = System.getProperty("throttlekit.test.redis") ?: error("no Redis URL: bindings-jvm/test.sh gives one")
        RedisStore.builder(url).connect().use { redis ->
            limiter(fixedWindow(40, 1.hours)) { store(redis); clock(thisHour()); prefix("kt:" + UUID.randomUUID()) }.use { l ->
                val results = (1..200).map { async { l.awaitCheck("hot").allowed() } }.awaitAll()
                assertEquals(40, results.count { it })
            }
        }
    }

    @Test
    fun multiAndShaperTwins() = runBlocking {
        val clock = ManualClock(0)
        MultiLimiter.builder(Rule.ALL).dimension("a", slidingWindow(1, 10.seconds)).clock(clock).build().use { m ->
            assertTrue(m.awaitCheck(listOf("x")).allowed())
            assertEquals("a", m.awaitCheck(listOf("x")).binding())
            m.awaitReset(listOf("x"))
        }
        Shaper.builder(1000.0, 1.0).clock(clock).build().use { s ->
            assertTrue(s.awaitReserve("q").accepted())
            assertTrue(s.awaitSchedule("q").accepted())
            s.awaitReset("q")
        }
    }

    @Test
    fun leasedAndCachedDenyInTheDsl() = runBlocking {
        val url = System.getProperty("throttlekit.test.redis") ?: error("no Redis URL: bindings-jvm/test.sh gives one")
        RedisStore.builder(url).connect().use { redis ->
            limiter(fixedWindow(40, 1.hours)) {
                store(redis); clock(thisHour()); prefix("kt:" + UUID.randomUUID()); leased { batch(8); windowCoupled(true) }
            }.use { l ->
                assertEquals(Mode.LEASED, l.mode())
                // Two checks one after the other: the first leases 8, the second spends a credit
                // locally (in a burst, every request may meet the lease in flight, as it did on a
                // loaded machine: then none is admitted locally).
                assertTrue(l.awaitCheck("hot").allowed())
                assertTrue(l.awaitCheck("hot").allowed())
                assertEquals(1L, l.tierStats().localAdmits(), l.tierStats().toString())
                val results = (1..98).map { async { l.awaitCheck("hot").allowed() } }.awaitAll()
                // Requests that meet a lease in flight take the strict path, which the credits
                // already counted can deny: what was not admitted is exactly what is given back.
                val admitted = 2 + results.count { it }.toLong()
                assertTrue(admitted <= 40, "never above the limit, coupled: $admitted")
                assertEquals(40L, admitted + l.awaitReleaseLeases(), "admitted + given back = the limit")
            }
        }
        limiter(fixedWindow(1, 1.hours)) { cachedDeny() }.use { l ->
            assertEquals(Mode.CACHED_DENY, l.mode())
            assertTrue(l.check("k").allowed())
            assertFalse(l.check("k").allowed())
            assertFalse(l.awaitCheck("k").allowed())
            assertEquals(1L, l.tierStats().localDenials())
        }
        assertThrows(ConfigInvalidException::class.java) { limiter(gcra(5, 1.seconds)) { leased { lowWater(200) } } }
        Unit
    }

    @Test
    fun multiModesInTheDsl() = runBlocking {
        val keys = listOf("10.0.0.1", "acme")
        MultiLimiter.builder(Rule.ALL).dimension("ip", fixedWindow(100, 1.hours)).dimension("tenant", fixedWindow(100, 1.hours))
            .leased { batch(10) }.build().use { m ->
                assertEquals(Mode.LEASED, m.mode())
                repeat(5) { assertTrue(m.awaitCheck(keys).allowed()) }
                assertEquals(1L, m.tierStats().leases())
                assertEquals(4L, m.tierStats().localAdmits())
                assertEquals(10L, m.awaitReleaseLeases(), "5 unspent credits on each dimension key")
            }
        MultiLimiter.builder(Rule.ALL).dimension("ip", fixedWindow(1, 1.hours)).cachedDeny().build().use { m ->
            assertEquals(Mode.CACHED_DENY, m.mode())
            assertTrue(m.check(listOf("x")).allowed())
            assertFalse(m.check(listOf("x")).allowed())
            assertFalse(m.awaitCheck(listOf("x")).allowed())
            assertEquals(1L, m.tierStats().localDenials())
        }
        assertThrows(ConfigInvalidException::class.java) {
            MultiLimiter.builder(Rule.ALL).dimension("ip", fixedWindow(100, 1.hours)).leased { lowWater(1) }.build()
        }
        Unit
    }

    @Test
    fun badOptionsAreCodedExceptions() {
        assertThrows(ConfigInvalidException::class.java) { gcra(0, 1.seconds) }
        assertThrows(ConfigInvalidException::class.java) { slidingWindowLog(1, (-1).seconds) }
        assertThrows(ConfigInvalidException::class.java) { tokenBucket(1, Double.NaN) }
    }
}
