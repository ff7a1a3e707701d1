// Replays conformance-vector files through the public Java API:
//
//   tk-conformance [--store memory|redis|redis-cluster|redis-sentinel|postgres|sqlite]
//                  [--redis-url URL[,URL...]] [--redis-service-name NAME] [--redis-tls-ca FILE]
//                  [--redis-tls-cert FILE] [--redis-tls-key FILE] [--redis-scripting auto|functions|eval]
//                  [--postgres-url URL] [--sqlite-path FILE] [--api blocking|async] FILE...
//
// The store flags are the Rust CLI's. The format is conformance-vectors/FORMAT.md. Each suite
// gets a fresh limiter (or multi limiter, or shaper) on a fresh store, driven by a ManualClock set
// to every op's `now`. Every call goes through the classes an application uses (`check`, or
// `checkAsync(...).join()` with --api async), so a pass proves what a Java caller gets, including
// how bad costs are refused (Numbers.costFromDouble, core's rule). On Redis the store runs in
// deterministic-replay mode and each suite gets its own key prefix, which stands in for a fresh
// store. On Postgres (`--postgres-url`, default $THROTTLEKIT_POSTGRES_URL; the sweeper off)
// and SQLite (`--sqlite-path`, created if missing; the sweep off, so expiry follows only
// `now`) each suite gets its own key prefix too, and its keys are reset after it.
//
// Prints one line per mismatch (suite id, op index, expected, got) and ends with
// `N passed, M failed`; exits 0 only when M is 0 (2 when a file or the flags are malformed).
package dev.throttlekit.conformance;

import dev.throttlekit.*;
import dev.throttlekit.internal.Json;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

public final class Conformance {
    private static final Set<String> FILE_FIELDS = Set.of("contractVersion", "generatedFrom", "frozen", "decisionFields", "note", "description", "suites");
    private static final Set<String> SUITE_FIELDS = Set.of("id", "name", "comment", "primitive", "strategy", "shaper", "rule", "dimensions",
            "key", "keys", "prefix", "expectError", "ops");
    private static final Set<String> DIMENSION_FIELDS = Set.of("name", "strategy", "costMultiplier");
    private static final Set<String> SHAPER_FIELDS = Set.of("ratePerSec", "maxQueueMs");
    private static final Set<String> OP_FIELDS = Set.of("now", "op", "cost", "key", "keys", "expect", "expectError", "comment");
    private static final Set<String> DECISION_FIELDS = Set.of("allowed", "limit", "remaining", "resetAt", "retryAfterMs");
    private static final Set<String> MULTI_FIELDS = Set.of("allowed", "limit", "remaining", "resetAt", "retryAfterMs", "binding");
    private static final Set<String> SHAPER_EXPECT = Set.of("accepted", "delayMs");
    private static final String USAGE = "usage: tk-conformance [--store memory|redis|redis-cluster|redis-sentinel|postgres|sqlite]\n"
            + "       [--redis-url URL[,URL...]] [--redis-service-name NAME] [--redis-tls-ca FILE] [--redis-tls-cert FILE]\n"
            + "       [--redis-tls-key FILE] [--redis-scripting auto|functions|eval] [--postgres-url URL] [--sqlite-path FILE]\n"
            + "       [--api blocking|async] FILE...";

    /** A vectors file does not follow FORMAT.md. */
    static final class FormatError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        FormatError(String m) {
            super(m);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> fields(Object o, Set<String> allowed, String where) {
        if (!(o instanceof Map)) throw new FormatError(where + ": expected an object");
        Map<String, Object> m = (Map<String, Object>) o;
        List<String> unknown = m.keySet().stream().filter(k -> !allowed.contains(k)).toList();
        if (!unknown.isEmpty()) throw new FormatError(where + ": unknown field(s) " + unknown);
        return m;
    }

    static double number(Object v, String where) {
        if (v instanceof Json.Num n) return n.value();
        throw new FormatError(where + ": expected a number");
    }

    static List<String> strings(Object v, String where) {
        if (v instanceof List<?> l && l.stream().allMatch(x -> x instanceof String)) {
            List<String> out = new ArrayList<>();
            for (Object x : l) out.add((String) x);
            return out;
        }
        throw new FormatError(where + ": expected a list of strings");
    }

    static String string(Object v, String where) {
        if (v instanceof String s) return s;
        throw new FormatError(where + ": expected a string");
    }

    /** Pass and fail counts and the mismatch lines. */
    static final class Report {
        int passed;
        int failed;
        final List<String> failures = new ArrayList<>();

        void ok() {
            passed++;
        }

        void fail(String line) {
            failed++;
            failures.add(line);
        }
    }

    /** Fresh stores for suites: a new MemoryStore each, or one shared store (Redis, Postgres, SQLite) under fresh prefixes. */
    static final class Stores {
        final Store shared;
        final String run = UUID.randomUUID().toString().substring(0, 12);
        int suites;

        Stores(Store shared) {
            this.shared = shared;
        }

        Object[] next(String prefix) {
            if (shared == null) return new Object[] {MemoryStore.create(), prefix};
            suites++;
            String isolated = "tkconf:" + run + ":" + suites;
            return new Object[] {shared, prefix.isEmpty() ? isolated : isolated + ":" + prefix};
        }
    }

    interface Target {
        Map<String, Object> call(String op, Object key, long cost);

        void reset(Object key);

        void close();
    }

    static boolean async;

    static <T> T run(Supplier<T> blocking, Supplier<CompletableFuture<T>> nonBlocking) {
        if (!async) return blocking.get();
        try {
            return nonBlocking.get().join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw e;
        }
    }

    static Map<String, Object> fields(Decision d) {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("allowed", d.allowed());
        m.put("limit", d.limit());
        m.put("remaining", d.remaining());
        m.put("resetAt", d.resetAtMs());
        m.put("retryAfterMs", d.retryAfterMs());
        return m;
    }

    static Target limiter(Limiter l) {
        return new Target() {
            public Map<String, Object> call(String op, Object key, long cost) {
                String k = string(key, "key");
                switch (op) {
                    case "check":
                        return fields(run(() -> l.check(k, cost), () -> l.checkAsync(k, cost)));
                    case "forecast":
                        return fields(run(() -> l.forecast(k, cost), () -> l.forecastAsync(k, cost)));
                    case "peek":
                        return fields(run(() -> l.peek(k), () -> l.peekAsync(k)));
                    default:
                        run(() -> {
                            l.reset(k);
                            return null;
                        }, () -> l.resetAsync(k));
                        return Map.of();
                }
            }

            public void reset(Object key) {
                l.reset((String) key);
            }

            public void close() {
                l.close();
            }
        };
    }

    static Target multi(MultiLimiter m) {
        return new Target() {
            public Map<String, Object> call(String op, Object key, long cost) {
                List<String> keys = strings(key, "keys");
                if (op.equals("check")) {
                    MultiDecision d = run(() -> m.check(keys, cost), () -> m.checkAsync(keys, cost));
                    Map<String, Object> f = fields(d.decision());
                    f.put("binding", d.binding());
                    return f;
                }
                run(() -> {
                    m.reset(keys);
                    return null;
                }, () -> m.resetAsync(keys));
                return Map.of();
            }

            public void reset(Object key) {
                m.reset(strings(key, "keys"));
            }

            public void close() {
                m.close();
            }
        };
    }

    static Target shaper(Shaper s) {
        return new Target() {
            public Map<String, Object> call(String op, Object key, long cost) {
                String k = string(key, "key");
                if (op.equals("reserve")) {
                    Reservation r = run(() -> s.reserve(k, cost), () -> s.reserveAsync(k, cost));
                    return Map.of("accepted", r.accepted(), "delayMs", r.delayMs());
                }
                run(() -> {
                    s.reset(k);
                    return null;
                }, () -> s.resetAsync(k));
                return Map.of();
            }

            public void reset(Object key) {
                s.reset((String) key);
            }

            public void close() {
                s.close();
            }
        };
    }

    static Target build(Map<String, Object> suite, String primitive, Store store, String prefix, ManualClock clock) {
        switch (primitive) {
            case "rateLimit":
                return limiter(Limiter.builder(Strategy.fromJson(Json.write(suite.get("strategy")))).store(store).clock(clock).prefix(prefix).build());
            case "shaper": {
                Map<String, Object> o = fields(suite.get("shaper"), SHAPER_FIELDS, "shaper");
                return shaper(Shaper.builder(number(o.get("ratePerSec"), "shaper.ratePerSec"), number(o.get("maxQueueMs"), "shaper.maxQueueMs"))
                        .store(store).clock(clock).prefix(prefix).build());
            }
            default: {
                Object rule = suite.get("rule");
                MultiLimiter.Builder b = MultiLimiter.builder("all".equals(rule) ? Rule.ALL : "any".equals(rule) ? Rule.ANY : null);
                List<?> dims = suite.get("dimensions") instanceof List<?> l ? l : List.of();
                for (int i = 0; i < dims.size(); i++) {
                    Map<String, Object> d = fields(dims.get(i), DIMENSION_FIELDS, "dimensions[" + i + "]");
                    long mult = d.containsKey("costMultiplier") ? Numbers.costFromDouble(number(d.get("costMultiplier"), "costMultiplier")) : 1;
                    b.dimension(string(d.get("name"), "name"), Strategy.fromJson(Json.write(d.get("strategy"))), mult);
                }
                if (!"all".equals(rule) && !"any".equals(rule)) throw new FormatError("rule must be all or any");
                return multi(b.store(store).clock(clock).prefix(prefix).build());
            }
        }
    }

    static String defaultOp(String primitive) {
        return primitive.equals("shaper") ? "reserve" : "check";
    }

    static Set<String> ops(String primitive) {
        return switch (primitive) {
            case "rateLimit" -> Set.of("check", "peek", "forecast", "reset");
            case "multi" -> Set.of("check", "reset");
            case "shaper" -> Set.of("reserve", "reset");
            default -> null;
        };
    }

    static void replaySuite(Object raw, int index, Stores stores, Report report) {
        Map<String, Object> suite = fields(raw, SUITE_FIELDS, "suites[" + index + "]");
        String sid = (String) (suite.get("id") != null ? suite.get("id") : suite.get("name") != null ? suite.get("name") : "suites[" + index + "]");
        String primitive = suite.get("primitive") instanceof String p ? p : "rateLimit";
        Set<String> allowedOps = ops(primitive);
        if (allowedOps == null) throw new FormatError(sid + ": unknown primitive " + primitive);
        if (!(suite.get("ops") instanceof List<?> opsList)) throw new FormatError(sid + ": ops must be a list");
        List<Map<String, Object>> parsed = new ArrayList<>();
        for (int i = 0; i < opsList.size(); i++) {
            Map<String, Object> op = fields(opsList.get(i), OP_FIELDS, sid + " op " + i);
            String name = op.get("op") instanceof String n ? n : defaultOp(primitive);
            if (!allowedOps.contains(name)) throw new FormatError(sid + " op " + i + ": op " + name + " does not apply to " + primitive);
            if (!op.containsKey("now")) throw new FormatError(sid + " op " + i + ": now is required");
            if (op.get("expect") != null) {
                fields(op.get("expect"), primitive.equals("multi") ? MULTI_FIELDS : primitive.equals("shaper") ? SHAPER_EXPECT : DECISION_FIELDS,
                        sid + " op " + i + " expect");
            }
            parsed.add(op);
        }

        ManualClock clock = new ManualClock(0);
        Object[] next = stores.next(suite.get("prefix") instanceof String p ? p : "");
        Target target;
        try {
            target = build(suite, primitive, (Store) next[0], (String) next[1], clock);
        } catch (ThrottleKitException e) {
            if (e.code().equals(suite.get("expectError"))) {
                report.ok();
            } else {
                for (int i = 0; i < Math.max(1, opsList.size()); i++) report.fail(sid + " op " + i + ": building failed: " + e.code() + ": " + e.getMessage());
            }
            return;
        }
        if (suite.containsKey("expectError")) {
            report.fail(sid + ": building should fail with " + suite.get("expectError") + ", but succeeded");
            target.close();
            return;
        }

        String keyField = primitive.equals("multi") ? "keys" : "key";
        Set<Object> usedKeys = new LinkedHashSet<>();
        for (int i = 0; i < parsed.size(); i++) {
            Map<String, Object> op = parsed.get(i);
            String name = op.get("op") instanceof String n ? n : defaultOp(primitive);
            Object key = op.containsKey(keyField) ? op.get(keyField) : suite.get(keyField);
            usedKeys.add(key);
            double cost = op.containsKey("cost") ? number(op.get("cost"), sid + " op " + i + " cost") : 1.0;
            Map<String, Object> got;
            try {
                clock.set(Numbers.nowFromDouble(number(op.get("now"), sid + " op " + i + " now")));
                long c = name.equals("peek") || name.equals("reset") ? 1 : Numbers.costFromDouble(cost);
                got = target.call(name, key, c);
            } catch (ThrottleKitException e) {
                if (e.code().equals(op.get("expectError"))) report.ok();
                else report.fail(sid + " op " + i + ": expected " + Json.write(op.get("expect")) + ", got " + e.code() + ": " + e.getMessage());
                continue;
            }
            if (op.containsKey("expectError")) {
                report.fail(sid + " op " + i + ": expected error " + op.get("expectError") + ", got " + got);
                continue;
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> expect = op.get("expect") instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
            boolean same = expect.entrySet().stream().allMatch(e -> same(e.getValue(), got.get(e.getKey())));
            if (same) report.ok();
            else report.fail(sid + " op " + i + " (" + name + " at " + Json.write(op.get("now")) + "): expected " + Json.write(expect) + ", got " + got);
        }
        if (stores.shared != null) {
            for (Object k : usedKeys) target.reset(k); // leave nothing behind
        }
        target.close();
    }

    static boolean same(Object expected, Object got) {
        if (expected instanceof Json.Num n) return got instanceof Long l && n.value() == l.doubleValue();
        return expected == null ? got == null : expected.equals(got);
    }

    static Report replayFiles(List<String> paths, Stores stores) throws IOException {
        Report report = new Report();
        for (String path : paths) {
            Map<String, Object> data;
            try {
                Object parsed = Json.parse(Files.readString(Path.of(path)));
                if (parsed instanceof Map<?, ?> m && AdaptiveVectors.FORMAT.equals(m.get("format"))) {
                    try {
                        AdaptiveVectors.replay(parsed, report);
                    } catch (FormatError e) {
                        throw new FormatError(path + ": " + e.getMessage());
                    }
                    continue;
                }
                data = fields(parsed, FILE_FIELDS, "file");
            } catch (Json.JsonException e) {
                throw new FormatError(path + ": " + e.getMessage());
            }
            if (!(data.get("suites") instanceof List<?> suites)) throw new FormatError(path + ": suites must be a list");
            try {
                for (int i = 0; i < suites.size(); i++) replaySuite(suites.get(i), i, stores, report);
            } catch (FormatError e) {
                throw new FormatError(path + ": " + e.getMessage());
            }
        }
        return report;
    }

    public static void main(String[] args) {
        String store = "memory";
        String api = "blocking";
        String url = null;
        String service = null;
        String ca = null;
        String cert = null;
        String key = null;
        String scripting = null;
        String postgresUrl = null;
        String sqlitePath = null;
        List<String> files = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (a) {
                case "--store" -> { store = v; i++; }
                case "--api" -> { api = v; i++; }
                case "--redis-url" -> { url = v; i++; }
                case "--redis-service-name" -> { service = v; i++; }
                case "--redis-tls-ca" -> { ca = v; i++; }
                case "--redis-tls-cert" -> { cert = v; i++; }
                case "--redis-tls-key" -> { key = v; i++; }
                case "--redis-scripting" -> { scripting = v; i++; }
                case "--postgres-url" -> { postgresUrl = v; i++; }
                case "--sqlite-path" -> { sqlitePath = v; i++; }
                case "-h", "--help" -> {
                    System.out.println(USAGE);
                    return;
                }
                default -> {
                    if (a.startsWith("--")) {
                        System.err.println("unknown option " + a + "\n" + USAGE);
                        System.exit(2);
                    }
                    files.add(a);
                }
            }
        }
        if (store == null || api == null || !Set.of("memory", "redis", "redis-cluster", "redis-sentinel", "postgres", "sqlite").contains(store)
                || !Set.of("blocking", "async").contains(api) || files.isEmpty()) {
            System.err.println(USAGE);
            System.exit(2);
        }
        if (store.equals("sqlite") && sqlitePath == null) {
            System.err.println("--store sqlite needs --sqlite-path FILE\n" + USAGE);
            System.exit(2);
        }
        if (postgresUrl == null) postgresUrl = System.getenv("THROTTLEKIT_POSTGRES_URL");
        if (store.equals("postgres") && postgresUrl == null) {
            System.err.println("--store postgres needs --postgres-url URL (or $THROTTLEKIT_POSTGRES_URL)\n" + USAGE);
            System.exit(2);
        }
        async = api.equals("async");
        Report report;
        try {
            Store shared = null;
            if (store.equals("postgres")) {
                shared = PostgresStore.builder(postgresUrl).sweepInterval(java.time.Duration.ZERO).build();
            } else if (store.equals("sqlite")) {
                shared = SqliteStore.builder(Path.of(sqlitePath)).sweep(false).build();
            } else if (!store.equals("memory")) {
                String urls = url != null ? url : System.getenv().getOrDefault("THROTTLEKIT_REDIS_URL", "redis://127.0.0.1:6379");
                RedisStore.Builder b = RedisStore.builder(urls).deterministicReplay(true)
                        .mode(store.equals("redis-cluster") ? RedisStore.Mode.CLUSTER : store.equals("redis-sentinel") ? RedisStore.Mode.SENTINEL : RedisStore.Mode.STANDALONE);
                if (service != null) b.serviceName(service);
                if (ca != null) b.tlsCaFile(Path.of(ca));
                if (cert != null || key != null) b.tlsClientCertificate(Path.of(cert == null ? "" : cert), Path.of(key == null ? "" : key));
                if (scripting != null) b.scripting(RedisStore.Scripting.valueOf(scripting.toUpperCase()));
                shared = b.connect();
            }
            report = replayFiles(files, new Stores(shared));
            if (shared != null) shared.close();
        } catch (FormatError e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        } catch (ThrottleKitException e) {
            System.err.println("error: " + e.code() + ": " + e.getMessage());
            System.exit(2);
            return;
        } catch (IOException | IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
            return;
        }
        report.failures.forEach(System.out::println);
        System.out.println(report.passed + " passed, " + report.failed + " failed");
        System.exit(report.failed == 0 ? 0 : 1);
    }
}
