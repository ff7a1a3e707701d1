package dev.throttlekit.conformance;

import static dev.throttlekit.conformance.Conformance.fields;
import static dev.throttlekit.conformance.Conformance.number;
import static dev.throttlekit.conformance.Conformance.string;

import dev.throttlekit.AdaptiveLimiter;
import dev.throttlekit.Admission;
import dev.throttlekit.Outcome;
import dev.throttlekit.Permit;
import dev.throttlekit.ThrottleKitException;
import dev.throttlekit.internal.Json;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The adaptive concurrency vectors ({@code "format": "throttlekit-adaptive/1"},
 * conformance-vectors/adaptive): each case builds an {@link AdaptiveLimiter} on a virtual clock
 * from its config and replays acquire / release / drop / advance through the public API,
 * comparing the limit and in-flight count (and granted / released, or the error code) after each
 * event. A "drop" is a permit left to the garbage collector, as a Java caller would leak it: the
 * runner collects until the permit's cleaner has released it (core counts the leak).
 */
final class AdaptiveVectors {
    static final String FORMAT = "throttlekit-adaptive/1";
    private static final Set<String> FILE = Set.of("format", "comment", "cases");
    private static final Set<String> CASE = Set.of("id", "comment", "config", "expectError", "events");
    private static final Set<String> EVENT = Set.of("op", "permit", "partition", "outcome", "rttUs", "us", "expect", "expectError");
    private static final Set<String> EXPECT = Set.of("granted", "released", "limit", "inflight");

    private AdaptiveVectors() {}

    static void replay(Object file, Conformance.Report report) {
        Map<String, Object> f = fields(file, FILE, "adaptive file");
        if (!(f.get("cases") instanceof List<?> cases)) throw new Conformance.FormatError("cases must be a list");
        for (Object c : cases) replayCase(fields(c, CASE, "adaptive case"), report);
    }

    private static void replayCase(Map<String, Object> c, Conformance.Report report) {
        String id = string(c.get("id"), "id");
        Object wantError = c.get("expectError");
        AdaptiveLimiter limiter;
        try {
            limiter = AdaptiveLimiter.builderFromJson(Json.write(c.get("config"))).virtualClock().build();
        } catch (ThrottleKitException e) {
            if (e.code().equals(wantError)) report.ok();
            else report.fail(id + ": expected " + wantError + ", got error " + e.code() + ": " + e.getMessage());
            return;
        }
        if (wantError != null) {
            report.fail(id + ": expected error " + wantError + ", got a limiter");
            limiter.close();
            return;
        }
        Map<String, Permit> held = new HashMap<>();
        List<?> events = c.get("events") instanceof List<?> l ? l : List.of();
        for (int i = 0; i < events.size(); i++) {
            Map<String, Object> e = fields(events.get(i), EVENT, id + " event " + i);
            String want = e.get("expectError") != null ? "error " + e.get("expectError") : describe(e.get("expect"));
            String got;
            try {
                got = run(limiter, held, e);
            } catch (ThrottleKitException ex) {
                got = "error " + ex.code();
            }
            if (want.equals(got)) report.ok();
            else report.fail(id + " event " + i + " (" + e.get("op") + "): expected " + want + ", got " + got);
        }
        limiter.close();
    }

    /** The state after the event, in {@link #describe}'s form. */
    private static String run(AdaptiveLimiter l, Map<String, Permit> held, Map<String, Object> e) {
        String op = string(e.get("op"), "op");
        String name = e.get("permit") instanceof String s ? s : "";
        Boolean granted = null;
        Boolean released = null;
        switch (op) {
            case "advance" -> l.advanceVirtualClock(Duration.ofNanos((long) (e.get("us") == null ? 0 : number(e.get("us"), "us")) * 1000));
            case "acquire" -> {
                Admission a = l.tryAcquire(e.get("partition") instanceof String p ? p : "");
                granted = a.granted();
                if (a instanceof Permit p && held.put(name, p) != null) collect(l, l.inflight() - 1);
            }
            case "drop" -> {
                if (held.remove(name) != null) collect(l, l.inflight() - 1);
            }
            case "release" -> {
                Permit p = held.get(name);
                if (p == null) return "error config_invalid";
                Outcome o = Outcome.parse(string(e.get("outcome"), "outcome"));
                released = e.get("rttUs") == null ? p.release(o)
                        : p.release(o, Duration.ofNanos((long) number(e.get("rttUs"), "rttUs") * 1000));
            }
            default -> throw new Conformance.FormatError("unknown adaptive op " + op);
        }
        return state(granted, released, l.limit(), l.inflight());
    }

    private static String describe(Object expect) {
        Map<String, Object> x = fields(expect, EXPECT, "expect");
        return state((Boolean) x.get("granted"), (Boolean) x.get("released"), (long) number(x.get("limit"), "limit"),
                (long) number(x.get("inflight"), "inflight"));
    }

    private static String state(Boolean granted, Boolean released, long limit, long inflight) {
        return "granted=" + granted + " released=" + released + " limit=" + limit + " inflight=" + inflight;
    }

    /** Runs the collector until a dropped permit's cleaner has brought in-flight down to {@code target}. */
    private static void collect(AdaptiveLimiter l, long target) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (l.inflight() > target && System.nanoTime() < deadline) {
            System.gc();
            try {
                Thread.sleep(1);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
