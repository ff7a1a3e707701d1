package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The runtime's hubs (bindings-jvm/src/runtime.rs): two tasks host every asynchronous call,
 * complete many futures a turn, and take in the calls those completions start. These tests
 * check what that must not change: every future completes exactly once with the right answer,
 * a chain that never waits cannot starve the others, and a close in the middle of a batch ends
 * every future with a decision or a coded exception. The waits below bound a hang; none of
 * them measures time.
 */
class HubTest {
    static String redis() {
        String url = System.getProperty("throttlekit.test.redis");
        assertNotNull(url, "bindings-jvm/test.sh always gives a Redis URL");
        return url;
    }

    static String fresh() {
        return "jvmtest:hub:" + UUID.randomUUID();
    }

    /** A slot: {@code left} checks of {@code key}, each started by the stage of the one before. */
    static void chain(Limiter l, String key, int left, AtomicInteger allowed, AtomicInteger completions, CompletableFuture<Void> end) {
        l.checkAsync(key).whenComplete((d, e) -> {
            completions.incrementAndGet();
            if (e != null) {
                end.completeExceptionally(e);
                return;
            }
            if (d.allowed()) allowed.incrementAndGet();
            if (left > 1) chain(l, key, left - 1, allowed, completions, end);
            else end.complete(null);
        });
    }

    @Test
    void manyChainsFromSeveralThreadsCompleteInBatchesAndAdmitExactlyK() throws Exception {
        try (RedisStore redis = RedisStore.builder(redis()).connect();
                Limiter l = Limiter.builder(Strategy.fixedWindow(1000, Duration.ofHours(1))).store(redis).clock(RedisTest.thisHour())
                        .prefix(fresh()).build()) {
            AtomicInteger allowed = new AtomicInteger(), completions = new AtomicInteger();
            List<CompletableFuture<Void>> ends = new ArrayList<>();
            List<Thread> starters = new ArrayList<>();
            // 4 threads start 16 chains each (64 in flight), 50 checks a chain: 3200 checks for
            // a limit of 1000, most of them started by a completion inside a hub's turn.
            for (int t = 0; t < 4; t++) {
                List<CompletableFuture<Void>> mine = new ArrayList<>();
                for (int c = 0; c < 16; c++) mine.add(new CompletableFuture<>());
                ends.addAll(mine);
                starters.add(new Thread(() -> mine.forEach(end -> chain(l, "hot", 50, allowed, completions, end))));
            }
            starters.forEach(Thread::start);
            for (Thread t : starters) t.join();
            CompletableFuture.allOf(ends.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            assertEquals(3200, completions.get(), "each future completed exactly once");
            assertEquals(1000, allowed.get());
            assertEquals(0, l.peek("hot").remaining());
        }
    }

    @Test
    void aChainThatNeverWaitsCannotStarveOtherCalls() throws Exception {
        // On memory every call completes at once, so this chain would run forever inside one
        // hub turn if a hub did not yield: the calls started from this thread meanwhile, which
        // go to both hubs' inboxes, and Redis calls, whose connection's driver is a task on the
        // same two threads, must still complete.
        try (Limiter l = Limiter.builder(Strategy.gcra(1_000_000_000L, Duration.ofSeconds(1))).build()) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger spins = new AtomicInteger();
            CompletableFuture<Void> spinner = new CompletableFuture<>();
            spin(l, stop, spins, spinner);
            try (RedisStore redis = RedisStore.builder(redis()).connect();
                    Limiter r = Limiter.builder(Strategy.gcra(1_000_000_000L, Duration.ofSeconds(1))).store(redis).prefix(fresh()).build()) {
                for (int i = 0; i < 200; i++) {
                    assertTrue(l.checkAsync("other:" + i).get(30, TimeUnit.SECONDS).allowed());
                }
                // A Redis call needs the connection's driver task to run on the same runtime.
                for (int i = 0; i < 50; i++) {
                    assertTrue(r.checkAsync("k").get(30, TimeUnit.SECONDS).allowed());
                }
                assertTrue(spins.get() > 0, "the spinning chain ran");
            } finally {
                stop.set(true);
            }
            spinner.get(30, TimeUnit.SECONDS);
        }
    }

    static void spin(Limiter l, AtomicBoolean stop, AtomicInteger spins, CompletableFuture<Void> end) {
        l.checkAsync("spin").whenComplete((d, e) -> {
            spins.incrementAndGet();
            if (e != null) end.completeExceptionally(e);
            else if (stop.get()) end.complete(null);
            else spin(l, stop, spins, end);
        });
    }

    @Test
    void closingTheStoreMidBatchEndsEveryChainWithADecisionOrACodedException() throws Exception {
        RedisStore redis = RedisStore.builder(redis()).timeout(Duration.ofSeconds(2)).connect();
        Limiter l = Limiter.builder(Strategy.gcra(1_000_000_000L, Duration.ofSeconds(1))).store(redis).prefix(fresh()).build();
        AtomicInteger allowed = new AtomicInteger(), completions = new AtomicInteger();
        List<CompletableFuture<Void>> ends = new ArrayList<>();
        for (int c = 0; c < 64; c++) {
            CompletableFuture<Void> end = new CompletableFuture<>();
            ends.add(end);
            chain(l, "k", Integer.MAX_VALUE, allowed, completions, end);
        }
        // Let the chains run, then close the store under them.
        while (completions.get() < 2000) Thread.sleep(5);
        redis.close();
        for (CompletableFuture<Void> end : ends) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> end.get(30, TimeUnit.SECONDS));
            assertInstanceOf(StoreUnavailableException.class, e.getCause(), String.valueOf(e.getCause()));
        }
        int done = completions.get();
        assertTrue(allowed.get() >= 2000 - 64, "the checks before the close were decisions");
        // A call after the close fails at once, coded; nothing completes twice later.
        ExecutionException late = assertThrows(ExecutionException.class, () -> l.checkAsync("k").get(30, TimeUnit.SECONDS));
        assertInstanceOf(StoreUnavailableException.class, late.getCause());
        Thread.sleep(100);
        assertEquals(done, completions.get());
        l.close();
    }

    @Test
    void closingTheLimiterMidBatchEndsEveryChain() throws Exception {
        try (RedisStore redis = RedisStore.builder(redis()).timeout(Duration.ofSeconds(2)).connect()) {
            Limiter l = Limiter.builder(Strategy.gcra(1_000_000_000L, Duration.ofSeconds(1))).store(redis).prefix(fresh()).build();
            AtomicInteger allowed = new AtomicInteger(), completions = new AtomicInteger();
            List<CompletableFuture<Void>> ends = new ArrayList<>();
            for (int c = 0; c < 64; c++) {
                CompletableFuture<Void> end = new CompletableFuture<>();
                ends.add(end);
                chain(l, "k", Integer.MAX_VALUE, allowed, completions, end);
            }
            while (completions.get() < 2000) Thread.sleep(5);
            l.close();
            for (CompletableFuture<Void> end : ends) {
                ExecutionException e = assertThrows(ExecutionException.class, () -> end.get(30, TimeUnit.SECONDS));
                assertInstanceOf(StoreUnavailableException.class, e.getCause(), String.valueOf(e.getCause()));
            }
            // The store is the limiter's only: it still serves a new limiter.
            try (Limiter again = Limiter.builder(Strategy.gcra(3, Duration.ofHours(1))).store(redis).prefix(fresh()).build()) {
                assertTrue(again.checkAsync("k").get(30, TimeUnit.SECONDS).allowed());
            }
        }
    }

    /**
     * What {@code wait} throws when a stage on a runtime thread waits with it for a second call.
     * A first call that completes before its stage is attached runs the stage on this thread,
     * where a wait is fine and succeeds: that attempt is checked and repeated.
     */
    static Throwable refusedWait(Limiter l, java.util.function.Function<CompletableFuture<Decision>, Decision> wait) throws Exception {
        for (int attempt = 0; attempt < 100; attempt++) {
            AtomicBoolean onRuntime = new AtomicBoolean();
            CompletableFuture<Decision> w = l.checkAsync("a").thenApply(d -> {
                onRuntime.set(dev.throttlekit.internal.Native.onRuntimeThread());
                return wait.apply(l.checkAsync("b"));
            });
            try {
                w.get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (onRuntime.get()) return e.getCause();
                throw e;
            }
            assertFalse(onRuntime.get(), "a wait on a runtime thread must not succeed");
        }
        return fail("no stage ran on a runtime thread in 100 attempts");
    }

    @Test
    void aStageThatWaitsForACallGetsACodedExceptionInsteadOfAHang() throws Exception {
        // The stage runs on the runtime thread that completed the first call; a wait there for a
        // second call would wait for that thread itself. join, get and get(timeout) are refused.
        try (RedisStore redis = RedisStore.builder(redis()).connect();
                Limiter l = Limiter.builder(Strategy.gcra(1_000_000_000L, Duration.ofSeconds(1))).store(redis).prefix(fresh()).build()) {
            List<java.util.function.Function<CompletableFuture<Decision>, Decision>> waits = List.of(
                    CompletableFuture::join,
                    f -> {
                        try {
                            return f.get();
                        } catch (InterruptedException | ExecutionException e) {
                            throw new AssertionError(e);
                        }
                    },
                    f -> {
                        try {
                            return f.get(30, TimeUnit.SECONDS);
                        } catch (InterruptedException | ExecutionException | java.util.concurrent.TimeoutException e) {
                            throw new AssertionError(e);
                        }
                    });
            for (var wait : waits) {
                Throwable cause = refusedWait(l, wait);
                ConfigInvalidException e = assertInstanceOf(ConfigInvalidException.class, cause, String.valueOf(cause));
                assertEquals("config_invalid", e.code());
                assertTrue(e.getMessage().contains("thenCompose"), e.getMessage());
            }
            // The chained form of the same thing works, and the runtime still serves calls.
            assertTrue(l.checkAsync("a").thenCompose(d -> l.checkAsync("b")).get(30, TimeUnit.SECONDS).allowed());
            // A wait off the runtime's threads is untouched.
            assertTrue(l.checkAsync("c").join().allowed());
        }
    }
}
