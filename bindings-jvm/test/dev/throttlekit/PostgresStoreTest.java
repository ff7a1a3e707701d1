package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Postgres store, against the Postgres 15 bindings-jvm/test.sh starts (tests/postgres-server.sh;
 * its URL in the system property {@code throttlekit.test.postgres}, always set by test.sh). The
 * vectors replay on it through the conformance runner (test.sh); these cover what the vectors
 * cannot: limiters of every kind through the builders, exactly K from several threads, and bad
 * input as coded errors.
 */
class PostgresStoreTest {
    static String url;
    static PostgresStore store;

    @BeforeAll
    static void server() {
        url = System.getProperty("throttlekit.test.postgres");
        Assumptions.assumeTrue(url != null && !url.isEmpty(), "no Postgres URL given (bindings-jvm/test.sh always gives one)");
        store = PostgresStore.builder(url).poolSize(2).timeout(Duration.ofSeconds(3)).sweepInterval(Duration.ZERO).build();
    }

    @AfterAll
    static void close() {
        if (store != null) store.close();
    }

    static String fresh() {
        return "jvm-pg:" + UUID.randomUUID();
    }

    /** Runs {@code sql} with psql against the test server (as core's tests do). */
    static void psql(String sql) throws Exception {
        Process p = new ProcessBuilder("psql", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "psql: " + out);
    }

    /**
     * A clock standing still at the present, for tests that count a window's checks or space a
     * queue's departures: on the system clock a minute boundary between two checks would start
     * the count over, and a loaded machine's pause between two reservations would drain the
     * queue. Postgres judges expiry by the caller's {@code now}.
     */
    static ManualClock still() {
        return new ManualClock(System.currentTimeMillis());
    }

    @Test
    void limiterMultiAndShaperDecideOnIt() {
        ManualClock clock = still();
        try (Limiter l = Limiter.builder(Strategy.fixedWindow(3, Duration.ofMinutes(1))).store(store).clock(clock).prefix(fresh()).build()) {
            assertTrue(l.check("k").allowed());
            assertTrue(l.checkAsync("k").join().allowed());
            assertTrue(l.tryAcquire("k"));
            Decision denied = l.check("k");
            assertFalse(denied.allowed());
            assertTrue(denied.retryAfterMs() > 0);
            l.reset("k");
            assertEquals(2, l.check("k").remaining());
        }
        try (MultiLimiter m = MultiLimiter.builder(Rule.ALL).dimension("a", Strategy.fixedWindow(2, Duration.ofMinutes(1)))
                .dimension("b", Strategy.fixedWindow(3, Duration.ofMinutes(1))).store(store).clock(clock).prefix(fresh()).build()) {
            assertTrue(m.check(List.of("x", "y")).allowed());
            assertTrue(m.check(List.of("x", "y")).allowed());
            assertFalse(m.check(List.of("x", "y")).allowed()); // a is full
            assertTrue(m.check(List.of("other", "y")).allowed()); // the denial charged b nothing
            assertFalse(m.check(List.of("third", "y")).allowed());
        }
        try (Shaper s = Shaper.builder(10, Duration.ofMillis(250)).store(store).clock(clock).prefix(fresh()).build()) {
            Reservation first = s.reserve("k", 1);
            assertTrue(first.accepted());
            assertEquals(0, first.delayMs());
            Reservation second = s.reserve("k", 1);
            assertTrue(second.accepted());
            assertTrue(second.delayMs() > 0);
        }
    }

    /** docs/postgres.md's Java example (scripts/check-readme.py checks the page shows these lines). */
    static Decision docsExample(String url) {
        try (PostgresStore store = PostgresStore.builder(url).poolSize(4).timeout(Duration.ofMillis(500)).build();
                Limiter limiter = Limiter.builder(Strategy.gcra(100, Duration.ofMinutes(1))).store(store).build()) {
            return limiter.check("user:1"); // or limiter.checkAsync("user:1"), a CompletableFuture
        }
    }

    @Test
    void theDocsExampleDecides() {
        Decision d = docsExample(url);
        assertTrue(d.allowed());
        assertEquals(99, d.remaining());
    }

    @Test
    void exactlyKFromManyThreadsOnANewKey() throws Exception {
        try (Limiter l = Limiter.builder(Strategy.fixedWindow(60, Duration.ofHours(1))).store(store).clock(still()).prefix(fresh()).build()) {
            // The key does not exist yet: the threads race to insert its row.
            assertEquals(60, ConcurrencyTest.admitted(l, "hot", 6, 20));
        }
    }

    @Test
    void theStoreCarriesItsLimitersDefaultsAndClosedTheFailPolicyDecides() {
        PostgresStore s = PostgresStore.builder(url).poolSize(1).serverClock(true).failPolicy(FailPolicy.FAIL_OPEN).sweepInterval(Duration.ZERO).build();
        try (Limiter l = Limiter.builder(Strategy.gcra(1, Duration.ofSeconds(1))).store(s).prefix(fresh()).build();
                Limiter strict = Limiter.builder(Strategy.gcra(1, Duration.ofSeconds(1))).store(s).failPolicy(FailPolicy.RAISE).build()) {
            assertTrue(l.check("k").allowed());
            assertFalse(l.check("k").allowed());
            s.close();
            Decision open = l.check("k");
            assertTrue(open.allowed());
            assertTrue(open.fallback());
            assertEquals("store_unavailable", assertThrows(StoreUnavailableException.class, () -> strict.check("k")).code());
        }
    }

    @Test
    void aBadUrlIsConfigInvalid() {
        ConfigInvalidException e = assertThrows(ConfigInvalidException.class, () -> PostgresStore.builder("postgres://[nope").build());
        assertEquals("config_invalid", e.code());
        assertTrue(e.getMessage().contains("postgres.url"), e.getMessage());
    }

    @Test
    void aWrongPasswordIsStoreUnavailableNamingTheAuthentication() {
        String bad = url.replace("throttlekit:throttlekit@", "throttlekit:wrong@");
        assertNotEquals(url, bad);
        StoreUnavailableException e = assertThrows(StoreUnavailableException.class, () -> PostgresStore.builder(bad).poolSize(1).build());
        assertTrue(e.getMessage().toLowerCase().contains("auth"), e.getMessage());
    }

    @Test
    void anUnreachableServerIsStoreUnavailableWithinTheTimeouts() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        long t0 = System.nanoTime();
        assertThrows(StoreUnavailableException.class, () -> PostgresStore.builder("postgres://u:p@127.0.0.1:" + port + "/db").poolSize(1)
                .connectTimeout(Duration.ofMillis(500)).timeout(Duration.ofMillis(500)).build());
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
    }

    @Test
    void aMissingTableWithMigrateOffIsConfigInvalidUntilMigrated() {
        String table = "tk_jvm_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        PostgresStore.Builder b = PostgresStore.builder(url).table(table).migrate(false).poolSize(1).sweepInterval(Duration.ZERO);
        ConfigInvalidException e = assertThrows(ConfigInvalidException.class, b::build);
        assertTrue(e.getMessage().contains(table), e.getMessage());
        b.migrateSchema();
        try (PostgresStore s = b.build(); Limiter l = Limiter.builder(Strategy.fixedWindow(1, Duration.ofMinutes(1))).store(s).clock(still()).build()) {
            assertTrue(l.check("k").allowed());
            assertFalse(l.check("k").allowed());
        }
    }

    @Test
    void aTableOfAnotherShapeIsConfigInvalidWithMigrateOnOrOff() throws Exception {
        String table = "tk_jvm_shape_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        psql("CREATE TABLE " + table + " (key text PRIMARY KEY, hits int)");
        for (boolean migrate : new boolean[] {true, false}) {
            ConfigInvalidException e = assertThrows(ConfigInvalidException.class,
                    () -> PostgresStore.builder(url).table(table).migrate(migrate).poolSize(1).build());
            assertTrue(e.getMessage().contains(table), e.getMessage());
        }
    }

    @Test
    void badOptionsAreConfigInvalid() {
        String u = "postgres://u:p@127.0.0.1:1/db";
        assertThrows(ConfigInvalidException.class, () -> PostgresStore.builder(null));
        assertThrows(ConfigInvalidException.class, () -> PostgresStore.builder(u).table("Bad-Name").build());
        assertThrows(ConfigInvalidException.class, () -> PostgresStore.builder(u).poolSize(0).build());
        assertThrows(ConfigInvalidException.class, () -> PostgresStore.builder(u).poolSize(-1).build());
        assertThrows(ConfigInvalidException.class, () -> PostgresStore.builder(u).timeout(Duration.ofNanos(1_500_000)));
        assertThrows(ConfigInvalidException.class, () -> PostgresStore.builder(u).timeout(Duration.ofMillis(-5)).build());
    }
}
