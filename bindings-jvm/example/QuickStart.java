import dev.throttlekit.*;
import java.time.Duration;

public class QuickStart {
    public static void main(String[] args) {
        // In memory: 100 requests a minute, bursts of 10, keys namespaced under "api".
        try (Limiter limiter = Limiter.builder(Strategy.gcra(100, Duration.ofMinutes(1), 10)).prefix("api").build()) {
            Decision d = limiter.check("user:42");
            System.out.println("memory: allowed=" + d.allowed() + " remaining=" + d.remaining());
            if (!d.allowed()) System.out.println("429: retry in " + d.retryAfter().toMillis() + " ms");
        }

        // Shared by a fleet: the same limit on Redis, one atomic script call per decision.
        try (RedisStore redis = RedisStore.builder(args.length > 0 ? args[0] : "redis://127.0.0.1:6379").connect();
                Limiter limiter = Limiter.builder(Strategy.gcra(100, Duration.ofMinutes(1), 10)).store(redis).prefix("api").build()) {
            Decision d = limiter.checkAsync("user:42").join(); // or limiter.check(...), blocking
            System.out.println("redis: allowed=" + d.allowed() + " remaining=" + d.remaining());
        }

        // Bad input is a coded, unchecked exception; a denied request is not an exception.
        try {
            Strategy.gcra(0, Duration.ofMinutes(1));
        } catch (ThrottleKitException e) {
            System.out.println("error code: " + e.code());
        }
    }
}
