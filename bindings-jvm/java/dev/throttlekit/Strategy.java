package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Native;
import java.nio.charset.StandardCharsets;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A validated rate-limiting algorithm. Immutable; share it between limiters freely.
 *
 * <p>Every factory builds core's strategy spec (the vectors' JSON format) and lets core validate
 * it, so a bad option fails with the same {@link ConfigInvalidException} message as in every other
 * language.
 */
public final class Strategy {
    private final String kind;
    private final long limit;
    private final String json;

    private Strategy(String kind, long limit, String json) {
        this.kind = kind;
        this.limit = limit;
        this.json = json;
    }

    /** GCRA (the default algorithm): {@code limit} requests per {@code period}, bursts of {@code limit} from idle. */
    public static Strategy gcra(long limit, Duration period) {
        return spec("gcra", opts("limit", limit, "periodMs", fractionalMs("period", period)));
    }

    /** GCRA with bursts of {@code burst} from idle. Decisions report {@code limit == burst}. */
    public static Strategy gcra(long limit, Duration period, long burst) {
        return spec("gcra", opts("limit", limit, "periodMs", fractionalMs("period", period), "burst", burst));
    }

    /** A token bucket of {@code capacity} tokens (starts full), refilling {@code refillPerSec} a second. */
    public static Strategy tokenBucket(long capacity, double refillPerSec) {
        return spec("tokenBucket", opts("capacity", capacity, "refillPerSec", finite("refillPerSec", refillPerSec)));
    }

    /** A fixed window: {@code limit} units per epoch-aligned window. */
    public static Strategy fixedWindow(long limit, Duration window) {
        return spec("fixedWindow", opts("limit", limit, "windowMs", fractionalMs("window", window)));
    }

    /** A sliding window estimated from 10 sub-buckets. */
    public static Strategy slidingWindow(long limit, Duration window) {
        return spec("slidingWindow", opts("limit", limit, "windowMs", fractionalMs("window", window)));
    }

    /** A sliding window estimated from {@code buckets} sub-buckets. */
    public static Strategy slidingWindow(long limit, Duration window, long buckets) {
        return spec("slidingWindow", opts("limit", limit, "windowMs", fractionalMs("window", window), "buckets", buckets));
    }

    /** An exact sliding-window log: at most {@code limit} units in any trailing {@code window}. */
    public static Strategy slidingWindowLog(long limit, Duration window) {
        return spec("slidingWindowLog", opts("limit", limit, "windowMs", fractionalMs("window", window)));
    }

    /** A quota of {@code limit} units per calendar period (UTC, weeks from Monday); see {@link #quotaBuilder}. */
    public static Strategy quota(long limit, QuotaCadence cadence) {
        return quotaBuilder(limit, cadence).build();
    }

    /** A quota with options: a period for {@code FIXED}/{@code ROLLING}, an anchor, a UTC offset, a week start, buckets. */
    public static QuotaBuilder quotaBuilder(long limit, QuotaCadence cadence) {
        return new QuotaBuilder(limit, cadence);
    }

    /** From JSON text in the vectors' format: {@code {"kind": "gcra", "options": {"limit": 10, "periodMs": 1000}}}. */
    public static Strategy fromJson(String json) {
        if (json == null) throw new ConfigInvalidException("strategy must not be null", -1);
        byte[] info = Native.strategyInfo(json.getBytes(StandardCharsets.UTF_8));
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Json.parse(new String(info, StandardCharsets.UTF_8));
        return new Strategy((String) m.get("kind"), (long) ((Json.Num) m.get("limit")).value(), Json.write(m.get("spec")));
    }

    /** The spec's kind: {@code gcra}, {@code tokenBucket}, {@code fixedWindow}, {@code slidingWindow}, {@code slidingWindowLog} or {@code quota}. */
    public String kind() {
        return kind;
    }

    /** The {@code limit} its decisions report (GCRA: the burst; token bucket: the capacity). */
    public long limit() {
        return limit;
    }

    /** The spec as JSON (the format {@link #fromJson} reads). */
    public String toJson() {
        return json;
    }

    @Override
    public String toString() {
        return "Strategy" + json;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Strategy s && s.json.equals(json);
    }

    @Override
    public int hashCode() {
        return json.hashCode();
    }

    /** Options of a quota. */
    public static final class QuotaBuilder {
        private final Map<String, Object> o;

        private QuotaBuilder(long limit, QuotaCadence cadence) {
            if (cadence == null) throw new ConfigInvalidException("resetCadence must not be null", -1);
            o = opts("limit", limit, "resetCadence", cadence.wire());
        }

        /** The period of a {@code FIXED} or {@code ROLLING} quota (required for those). */
        public QuotaBuilder period(Duration period) {
            o.put("periodMs", fractionalMs("period", period));
            return this;
        }

        /** Where {@code FIXED} periods are aligned (default the epoch). */
        public QuotaBuilder anchor(Instant anchor) {
            if (anchor == null) throw new ConfigInvalidException("anchor must not be null", -1);
            o.put("anchor", anchor.toEpochMilli());
            return this;
        }

        /** The fixed UTC offset of calendar periods, minutes (±840). */
        public QuotaBuilder offsetMinutes(long minutes) {
            o.put("offsetMinutes", minutes);
            return this;
        }

        /** The first day of a calendar week (default Monday). */
        public QuotaBuilder weekStartsOn(DayOfWeek day) {
            if (day == null) throw new ConfigInvalidException("weekStartsOn must not be null", -1);
            o.put("weekStartsOn", (long) (day.getValue() % 7));
            return this;
        }

        /** The sub-buckets of a {@code ROLLING} quota (default 10). */
        public QuotaBuilder buckets(long buckets) {
            o.put("buckets", buckets);
            return this;
        }

        /** The validated strategy. */
        public Strategy build() {
            return spec("quota", o);
        }
    }

    /** How a quota resets. */
    public enum QuotaCadence {
        /** Calendar months. */
        CALENDAR_MONTH,
        /** Calendar weeks. */
        CALENDAR_WEEK,
        /** Calendar days. */
        CALENDAR_DAY,
        /** Fixed periods aligned to the anchor. */
        FIXED,
        /** A sliding window of the period. */
        ROLLING;

        String wire() {
            return name().toLowerCase().replace('_', '-');
        }
    }

    private static Map<String, Object> opts(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    private static Strategy spec(String kind, Map<String, Object> options) {
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("kind", kind);
        spec.put("options", options);
        return fromJson(Json.write(spec));
    }

    private static double finite(String name, double v) {
        if (!Double.isFinite(v)) throw new ConfigInvalidException(name + " must be a finite number", -1);
        return v;
    }

    /** A duration in ms, fractions kept (core decides whether a fraction is allowed). */
    static Object fractionalMs(String name, Duration d) {
        if (d == null) throw new ConfigInvalidException(name + " must not be null", -1);
        if (d.getNano() % 1_000_000 == 0) {
            try {
                return d.toMillis();
            } catch (ArithmeticException e) {
                throw new ConfigInvalidException(name + " is too long", -1);
            }
        }
        return d.getSeconds() * 1000.0 + d.getNano() / 1e6;
    }

    /** A duration in whole ms (a store option); a fraction of a ms is {@code config_invalid}. */
    static long wholeMs(String name, Duration d) {
        if (!(fractionalMs(name, d) instanceof Long ms)) throw new ConfigInvalidException(name + " must be a whole number of ms", -1);
        return ms;
    }
}
