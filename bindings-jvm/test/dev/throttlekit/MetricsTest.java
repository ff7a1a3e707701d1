package dev.throttlekit;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Peeks and forecasts counted apart from checks; a multi limiter's and a shaper's counters. */
class MetricsTest {
    @Test
    void peeksAndForecastsAreCountedApartFromChecks() {
        try (Limiter l = Limiter.builder(Strategy.fixedWindow(2, Duration.ofHours(1))).metrics(true).build()) {
            l.check("k");
            l.peek("k");
            l.peek("other");
            l.forecast("k", 2);
            Metrics m = l.metrics();
            assertEquals(List.of(1L, 0L, 2L, 1L), List.of(m.allowed(), m.denied(), m.peeks(), m.forecasts()));
        }
    }

    @Test
    void aMultiLimiterCountsItsCombinedDecisions() {
        try (MultiLimiter off = MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(2, Duration.ofHours(1))).build()) {
            off.check(List.of("1.2.3.4"));
            assertFalse(off.metrics().enabled());
            assertEquals(0, off.metrics().allowed());
        }
        try (MultiLimiter m = MultiLimiter.builder(Rule.ALL).dimension("ip", Strategy.fixedWindow(2, Duration.ofHours(1)))
                .metrics(true).build()) {
            for (int i = 0; i < 3; i++) m.check(List.of("1.2.3.4"));
            assertThrows(ConfigInvalidException.class, () -> m.check(List.of("a", "b")));
            Metrics s = m.metrics();
            assertTrue(s.enabled());
            assertEquals(List.of(2L, 1L, 1L), List.of(s.allowed(), s.denied(), s.errors().get("config_invalid")));
        }
    }

    @Test
    void aShaperCountsReservationsAcceptedAndRejected() {
        ManualClock clock = ManualClock.at(Instant.ofEpochMilli(1000));
        try (Shaper s = Shaper.builder(10, 150).clock(clock).metrics(true).build();
                Shaper off = Shaper.builder(10, 150).build()) {
            for (int i = 0; i < 3; i++) s.reserve("q", 1); // 0 and 100 ms: accepted; 200 ms: past the queue
            Metrics m = s.metrics();
            assertTrue(m.enabled());
            assertEquals(List.of(2L, 1L, 0L), List.of(m.allowed(), m.denied(), m.latencyCount()));
            assertFalse(off.metrics().enabled());
        }
    }
}
