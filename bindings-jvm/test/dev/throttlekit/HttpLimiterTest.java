package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The HTTP edge the servlet filter uses: keys, lines and bodies all come from core. */
class HttpLimiterTest {
    @Test
    void forwardsThenDeniesWithCoresLinesAndBody() {
        try (Limiter l = Limiter.builder(Strategy.gcra(2, Duration.ofSeconds(60), 2)).build()) {
            HttpLimiter edge = HttpLimiter.builder(l).build();
            HttpLimiter.Verdict first = edge.check("192.0.2.1", List.of());
            assertEquals(HttpLimiter.Outcome.FORWARD, first.outcome());
            assertEquals("192.0.2.1", first.key());
            assertEquals(List.of("RateLimit-Policy", "RateLimit"), first.headers().stream().map(HttpLimiter.Header::name).toList());
            assertEquals("\"default\";q=2;w=60", first.headers().get(0).value());
            edge.check("192.0.2.1", List.of());
            HttpLimiter.Verdict denied = edge.check("192.0.2.1", List.of("6.6.6.6"));
            assertEquals(429, denied.status());
            assertFalse(denied.decision().orElseThrow().allowed());
            assertEquals("Retry-After", denied.headers().get(denied.headers().size() - 1).name());
            assertTrue(denied.problemBody().contains("quota-exceeded"), denied.problemBody());
        }
    }

    @Test
    void trustedProxiesAndBadOptions() {
        try (Limiter l = Limiter.builder(Strategy.gcra(2, Duration.ofSeconds(60))).build()) {
            HttpLimiter edge = HttpLimiter.builder(l).trustedProxies(List.of("10.0.0.0/8")).family("draft-6").build();
            assertEquals("x-forwarded-for", edge.forwardedHeader());
            assertEquals("203.0.113.7", edge.check("10.0.0.1", List.of("6.6.6.6, 203.0.113.7")).key());
            assertEquals("2001:db8:1:2::/64", edge.check("2001:db8:1:2::99", List.of()).key());
            assertThrows(ConfigInvalidException.class, () -> HttpLimiter.builder(l).family("draft-99").build());
            assertThrows(ConfigInvalidException.class, () -> HttpLimiter.builder(l).trustedProxies(List.of("nope")).build());
            assertThrows(ConfigInvalidException.class, () -> edge.check("not-an-ip", List.of()));
            l.close();
            assertThrows(StoreUnavailableException.class, () -> edge.check("192.0.2.1", List.of()));
        }
    }
}
