package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SQLite store on a temp file. The vectors replay on it through the conformance runner
 * (test.sh); these cover limiters of every kind through the builder, exactly K from several
 * threads (and two stores on one file), and bad input as coded errors.
 */
class SqliteStoreTest {
    @TempDir
    Path dir;

    @Test
    void limiterMultiAndShaperDecideOnIt() {
        // Time stands still: on the system clock a minute boundary between two checks would start
        // the count over, and a loaded machine's pause between the reservations would drain the queue.
        ManualClock clock = new ManualClock(System.currentTimeMillis());
        try (SqliteStore s = SqliteStore.builder(dir.resolve("a.db")).build();
                Limiter l = Limiter.builder(Strategy.fixedWindow(2, Duration.ofMinutes(1))).store(s).clock(clock).prefix("l").build();
                MultiLimiter m = MultiLimiter.builder(Rule.ALL).dimension("a", Strategy.fixedWindow(1, Duration.ofMinutes(1)))
                        .dimension("b", Strategy.fixedWindow(2, Duration.ofMinutes(1))).store(s).clock(clock).prefix("m").build();
                Shaper sh = Shaper.builder(10, Duration.ofMillis(250)).store(s).clock(clock).prefix("s").build()) {
            assertTrue(l.check("k").allowed());
            assertTrue(l.checkAsync("k").join().allowed());
            assertFalse(l.check("k").allowed());
            l.reset("k");
            assertEquals(1, l.check("k").remaining());
            assertTrue(m.check(List.of("x", "y")).allowed());
            assertFalse(m.check(List.of("x", "y")).allowed()); // a is full
            assertTrue(m.check(List.of("other", "y")).allowed()); // the denial charged b nothing
            assertEquals(0, sh.reserve("k", 1).delayMs());
            assertTrue(sh.reserve("k", 1).delayMs() > 0);
        }
    }

    /** docs/sqlite.md's Java example (scripts/check-readme.py checks the page shows these lines). */
    static Decision docsExample(Path file) {
        try (SqliteStore store = SqliteStore.builder(file).busyTimeout(Duration.ofSeconds(2)).build();
                Limiter limiter = Limiter.builder(Strategy.gcra(100, Duration.ofHours(1))).store(store).build()) {
            return limiter.check("user:42");
        }
    }

    @Test
    void theDocsExampleDecidesAndKeepsItsStateInTheFile() {
        Path file = dir.resolve("limits.db");
        assertEquals(99, docsExample(file).remaining());
        assertEquals(98, docsExample(file).remaining()); // a new store on the same file
    }

    @Test
    void exactlyKFromManyThreadsOnTwoStoresOfOneFile() throws Exception {
        Path file = dir.resolve("shared.db");
        // Time stands still: on the system clock an hour boundary mid-test would admit more.
        ManualClock clock = new ManualClock(System.currentTimeMillis());
        try (SqliteStore a = SqliteStore.builder(file).build();
                SqliteStore b = SqliteStore.builder(file).build();
                Limiter la = Limiter.builder(Strategy.fixedWindow(50, Duration.ofHours(1))).store(a).clock(clock).build();
                Limiter lb = Limiter.builder(Strategy.fixedWindow(50, Duration.ofHours(1))).store(b).clock(clock).build()) {
            int[] got = new int[2];
            Thread ta = new Thread(() -> got[0] = admitted(la));
            Thread tb = new Thread(() -> got[1] = admitted(lb));
            ta.start();
            tb.start();
            ta.join();
            tb.join();
            assertEquals(50, got[0] + got[1]);
        }
    }

    private static int admitted(Limiter l) {
        try {
            return ConcurrencyTest.admitted(l, "hot", 3, 20);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void aMissingTableWithMigrateOffIsConfigInvalid() {
        ConfigInvalidException e = assertThrows(ConfigInvalidException.class,
                () -> SqliteStore.builder(dir.resolve("empty.db")).table("limits").migrate(false).build());
        assertEquals("config_invalid", e.code());
        assertTrue(e.getMessage().contains("limits"), e.getMessage());
    }

    @Test
    void aTableOfAnotherShapeIsConfigInvalid() throws Exception {
        Path file = dir.resolve("shape.db");
        Process p = new ProcessBuilder("python3", "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE throttlekit (key TEXT PRIMARY KEY, hits INTEGER)'); c.commit()",
                file.toString()).redirectErrorStream(true).start();
        assertEquals(0, p.waitFor(), new String(p.getInputStream().readAllBytes()));
        ConfigInvalidException e = assertThrows(ConfigInvalidException.class, () -> SqliteStore.builder(file).build());
        assertTrue(e.getMessage().contains("throttlekit"), e.getMessage());
    }

    @Test
    void aFileThatIsNotADatabaseOrCannotBeOpenedIsConfigInvalid() throws Exception {
        Path junk = dir.resolve("junk.db");
        Files.writeString(junk, "this is not a database, just text long enough to fill a header page".repeat(20));
        assertThrows(ConfigInvalidException.class, () -> SqliteStore.builder(junk).build());
        assertThrows(ConfigInvalidException.class, () -> SqliteStore.builder(dir.resolve("no/such/dir/x.db")).build());
    }

    @Test
    void badOptionsAreConfigInvalid() {
        Path f = dir.resolve("opts.db");
        assertThrows(ConfigInvalidException.class, () -> SqliteStore.builder(null));
        assertThrows(ConfigInvalidException.class, () -> SqliteStore.builder(f).table("bad name").build());
        assertThrows(ConfigInvalidException.class, () -> SqliteStore.builder(f).maxKeyLength(0).build());
        assertThrows(ConfigInvalidException.class, () -> SqliteStore.builder(f).busyTimeout(Duration.ofMillis(-1)).build());
        assertThrows(ConfigInvalidException.class, () -> SqliteStore.builder(f).synchronous(null));
    }

    @Test
    void closedTheFailPolicyDecides() {
        SqliteStore s = SqliteStore.builder(dir.resolve("closed.db")).failPolicy(FailPolicy.FAIL_CLOSED).build();
        try (Limiter l = Limiter.builder(Strategy.gcra(5, Duration.ofSeconds(1))).store(s).build()) {
            assertTrue(l.check("k").allowed());
            s.close();
            Decision d = l.check("k");
            assertFalse(d.allowed());
            assertTrue(d.fallback());
        }
    }
}
