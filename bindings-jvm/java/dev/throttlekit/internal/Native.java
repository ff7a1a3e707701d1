package dev.throttlekit.internal;

import dev.throttlekit.ThrottleKitException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/**
 * The native methods (implemented by hand over JNI in {@code bindings-jvm/src}) and the two
 * callbacks the native half makes. Not public API: the classes of {@code dev.throttlekit} wrap it.
 *
 * <p>Handles are {@code long} addresses of native objects. Hot-path methods take the address of
 * the calling thread's {@link Scratch} buffer and the key's UTF-8 length in it, and write their
 * results there; nothing crosses as a Java object.
 */
public final class Native {
    private Native() {}

    static {
        Loader.load();
    }

    /** Where the native library was loaded from. */
    public static String loadedFrom() {
        return Loader.loaded;
    }

    // Stores and clocks.
    public static native long memoryStoreNew(long maxKeys, long maxKeyLength);
    public static native long memoryStoreStat(long h, int which);
    public static native long redisStoreConnect(byte[] config);
    public static native long postgresStoreConnect(byte[] config);
    public static native void postgresMigrate(byte[] config);
    public static native long sqliteStoreOpen(byte[] config);
    public static native void storeClose(long h);
    public static native void storeFree(long h);
    public static native long clockNew(long now);
    public static native long clockOp(long h, int op, long v);
    public static native void clockFree(long h);

    // Limiter.
    public static native long limiterNew(byte[] config, long store, long clock);
    public static native void check(long h, long addr, int len, long cost);
    public static native boolean tryAcquire(long h, long addr, int len, long cost);
    public static native void limiterOp(long h, int op, long addr, int len, long cost);
    public static native long[] checkMany(long h, byte[] packed, long cost);
    public static native void limiterAsync(long h, int op, byte[] key, long cost, NativeFuture<?> f);
    public static native long[] limiterMetrics(long h);
    public static native long limiterLimit(long h);
    public static native long[] limiterTier(long h);
    public static native long limiterRelease(long h, long idleMs);
    public static native long[] leaseDefaults();
    public static native void limiterClose(long h);
    public static native void limiterFree(long h);

    // MultiLimiter.
    public static native long multiNew(byte[] config, long store, long clock);
    public static native long[] multiOp(long h, int op, byte[] packed, long cost);
    public static native void multiAsync(long h, int op, byte[] packed, long cost, NativeFuture<?> f);
    public static native void multiClose(long h);
    public static native void multiFree(long h);
    public static native long[] multiTier(long h);
    public static native long multiRelease(long h, long idleMs);

    public static native long[] multiMetrics(long h);

    // Shaper.
    public static native long shaperNew(byte[] config, long store, long clock);
    public static native void shaperOp(long h, int op, long addr, int len, long cost);
    public static native void shaperAsync(long h, int op, byte[] key, long cost, NativeFuture<?> f);
    public static native void shaperClose(long h);
    public static native void shaperFree(long h);

    public static native long[] shaperMetrics(long h);

    // AdaptiveLimiter and its permits.
    public static native long adaptiveNew(byte[] config, boolean virtualClock);
    public static native long adaptiveAcquire(long h, long addr, int len, long timeoutMs);
    public static native boolean adaptiveRelease(long permit, int outcome, boolean measured, long rttNs);
    public static native void adaptivePermitFree(long permit);
    public static native long[] adaptiveMetrics(long h);
    public static native long adaptiveOp(long h, int op, long v);
    public static native void adaptiveClose(long h);
    public static native void adaptiveFree(long h);

    // The HTTP edge.
    public static native long httpEdgeNew(byte[] headerOptions, byte[] clientKeyOptions);
    public static native byte[] httpEdgeCheck(long edge, long limiter, byte[] peer, byte[] forwarded, long cost);
    public static native byte[] httpEdgeHeader(long edge);
    public static native void httpEdgeFree(long h);

    // Stateless.
    public static native byte[] strategyInfo(byte[] json);
    public static native long fromDouble(int which, double v);
    public static native byte[] http(int which, byte[] request);
    public static native byte[] version();
    public static native long address(ByteBuffer direct);
    public static native void panicForTest();

    /** Called by the native half to build the exception for an error code (0: a caught panic). */
    static Throwable exception(int code, long retryAfterMs, byte[] message) {
        return ThrottleKitException.of(code, new String(message, StandardCharsets.UTF_8), retryAfterMs);
    }

    /** Marks the native runtime's threads (see {@link #onRuntimeThread()}). */
    private static final ThreadLocal<Boolean> RUNTIME_THREAD = new ThreadLocal<>();

    /** Called by the native half, once, on each runtime thread it attaches to the VM. */
    static void runtimeThreadAttached() {
        RUNTIME_THREAD.set(Boolean.TRUE);
    }

    /**
     * Whether the calling thread is one of the native runtime's: the threads that complete
     * throttlekit's futures and run their dependent stages, and that host the calls those stages
     * start. A wait for a throttlekit call there waits for the thread itself.
     */
    public static boolean onRuntimeThread() {
        return RUNTIME_THREAD.get() != null;
    }

    /** Called from a native runtime thread when an asynchronous call succeeded. */
    static void complete(CompletableFuture<?> f, long[] values) {
        ((NativeFuture<?>) f).done(values);
    }

    /**
     * Called from a native runtime thread when an asynchronous call succeeded with at most six
     * longs: the first {@code n} of {@code a..f} (no array made by the native half).
     */
    static void completeSmall(CompletableFuture<?> f, int n, long a, long b, long c, long d, long e, long g) {
        ((NativeFuture<?>) f).done(n, a, b, c, d, e, g);
    }

    /** Called from a native runtime thread when an asynchronous call failed. */
    static void fail(CompletableFuture<?> f, Throwable error) {
        ((NativeFuture<?>) f).failed(error);
    }

    /** UTF-8 bytes of {@code s}. */
    public static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
