import dev.throttlekit.*;

public class QuickStart {
    public static void main(String[] args) throws Exception {
        // In memory: 100 requests a minute, bursts of 10, keys namespaced under "api".
        Strategy gcra = Strategy.Companion.gcra(100L, 60_000.0, 10L);
        Limiter limiter = new Limiter(gcra, new LimiterOptions(null, null, "api", null, null, false));
        Decision d = limiter.checkBlocking("user:42", 1L);
        if (!d.getAllowed()) System.out.println("429: retry in " + d.getRetryAfterMs() + " ms");
        System.out.println("memory: allowed=" + d.getAllowed() + " remaining=" + d.getRemaining());

        // On Redis, shared by a fleet: one atomic script call per decision.
        String url = args.length > 0 ? args[0] : "redis://127.0.0.1:6379";
        // Java spells every option: timeoutMs, serverClock, failPolicy, deterministicReplay, then the
        // connection options (mode, serviceName, tlsCaFile, tlsCertFile, tlsKeyFile, scripting).
        RedisStore redis = RedisStore.Companion.connect(url, new RedisStoreOptions(500L, false, FailPolicy.FAIL_OPEN, false,
                null, null, null, null, null, null));
        Limiter shared = new Limiter(Strategy.Companion.tokenBucket(20L, 5.0),
                new LimiterOptions(new Store.Redis(redis), null, "quickstart", null, null, false));
        Decision r = shared.checkBlocking("user:42", 2L);
        System.out.println("redis: allowed=" + r.getAllowed() + " remaining=" + r.getRemaining());
        try {
            Strategy.Companion.gcra(0L, 60_000.0, null);
        } catch (ThrottleKitException.ConfigInvalid e) {
            System.out.println("error code: " + e.getCode()); // config_invalid
        }
    }
}
