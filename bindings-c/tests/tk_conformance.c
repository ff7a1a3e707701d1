/*
 * tk-conformance: replays conformance-vector files (conformance-vectors/FORMAT.md) through the
 * public C API of libthrottlekit, and prints one line per mismatch and then "N passed, M failed".
 *
 *   tk-conformance [--store memory|redis|redis-cluster|redis-sentinel|postgres|sqlite]
 *                  [--redis-url URL[,URL...]] [--redis-service-name NAME] [--redis-tls-ca FILE]
 *                  [--redis-tls-cert FILE] [--redis-tls-key FILE] [--redis-scripting auto|functions|eval]
 *                  [--postgres-url URL] [--sqlite-path FILE] FILE...
 *
 * The flags are the Rust CLI's: --redis-url takes one URL (redis), seed nodes (redis-cluster)
 * or sentinels (redis-sentinel, with --redis-service-name); rediss:// for TLS, with
 * --redis-tls-ca naming the CA to trust instead of the system's. Each fills one field of
 * tk_redis_options; the library checks them (a bad combination exits 2 with its message).
 *
 * Parsing is strict, like every runner's: an unknown field is an error (exit 2), so a typo
 * cannot turn an assertion off. Each suite runs on a fresh limiter with a manual clock set to
 * each op's `now`. Memory: a fresh store per suite. Redis: one deterministic-replay connection
 * per file, and every key a suite touches is reset before the suite, which is what a fresh
 * store means there; Postgres and SQLite (--sqlite-path, created if missing, opened with no
 * sweep so expiry follows only the ops' `now`) likewise. Numbers from JSON go through tk_cost_from_double / tk_now_from_double, so
 * bad costs are refused by the library, not by this program. HTTP vectors files
 * ("format": "throttlekit-http/1") go through tk_http_headers / tk_http_client_key, adaptive
 * concurrency files ("format": "throttlekit-adaptive/1") through tk_adaptive_* (tk_conformance_adaptive.c).
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

#include "tk_conformance.h"

long tkc_passed, tkc_failed;

void tkc_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tk-conformance: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* Fails unless every member of `obj` is one of the NULL-terminated `allowed` names. */
void tkc_strict(const cJSON *obj, const char *what, const char *const *allowed) {
    if (!cJSON_IsObject(obj)) tkc_die("%s must be an object", what);
    for (const cJSON *m = obj->child; m; m = m->next) {
        const char *const *a = allowed;
        while (*a && strcmp(*a, m->string) != 0) a++;
        if (!*a) tkc_die("unknown field \"%s\" in %s", m->string, what);
    }
}

const char *tkc_opt_string(const cJSON *obj, const char *name, const char *fallback) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!v) return fallback;
    if (!cJSON_IsString(v)) tkc_die("\"%s\" must be a string", name);
    return v->valuestring;
}

const cJSON *tkc_opt_number(const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (v && !cJSON_IsNumber(v)) tkc_die("\"%s\" must be a number", name);
    return v;
}

/* A JSON array of strings as a malloc'd array of borrowed pointers. */
static const char **string_array(const cJSON *arr, size_t *len) {
    if (!cJSON_IsArray(arr)) tkc_die("keys must be an array of strings");
    *len = (size_t)cJSON_GetArraySize(arr);
    const char **out = calloc(*len ? *len : 1, sizeof *out);
    size_t i = 0;
    for (const cJSON *k = arr->child; k; k = k->next, i++) {
        if (!cJSON_IsString(k)) tkc_die("keys must be an array of strings");
        out[i] = k->valuestring;
    }
    return out;
}

enum primitive { RATE_LIMIT, MULTI, SHAPER };

/* What a suite runs against: one of three handles, plus the default key(s). */
struct subject {
    enum primitive kind;
    tk_limiter *limiter;
    tk_multi_limiter *multi;
    tk_shaper *shaper;
    const char *key;
    const cJSON *keys;
};

/* What an op produced. */
struct got {
    enum { GOT_DECISION, GOT_RESERVATION, GOT_DONE, GOT_ERROR } kind;
    tk_decision decision;
    const char *binding; /* multi only; borrowed from the multi limiter */
    tk_reservation reservation;
    tk_result error;
    char message[256];
};

static void got_error(struct got *g, tk_result r) {
    g->kind = GOT_ERROR;
    g->error = r;
    tk_last_error_message(g->message, sizeof g->message, NULL);
}

static tk_result json_strategy(const cJSON *spec, tk_strategy **out) {
    char *text = cJSON_PrintUnformatted(spec);
    tk_result r = tk_strategy_from_json(text, out);
    cJSON_free(text);
    return r;
}

static void free_subject(struct subject *s) {
    tk_limiter_free(s->limiter);
    tk_multi_limiter_free(s->multi);
    tk_shaper_free(s->shaper);
    memset(s, 0, sizeof *s);
}

/* Builds the suite's subject; any library failure is returned (an expectError suite wants it). */
static tk_result build(const cJSON *suite, enum primitive kind, tk_store *store, tk_clock *clock, struct subject *s) {
    const char *prefix = tkc_opt_string(suite, "prefix", NULL);
    s->kind = kind;
    s->key = tkc_opt_string(suite, "key", "");
    s->keys = cJSON_GetObjectItemCaseSensitive(suite, "keys");
    tk_result r;
    if (kind == RATE_LIMIT) {
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(suite, "strategy");
        if (!spec) tkc_die("a rateLimit suite needs \"strategy\"");
        tk_strategy *strategy = NULL;
        if ((r = json_strategy(spec, &strategy)) != TK_RESULT_OK) return r;
        tk_limiter_config cfg = {.store = store, .clock = clock, .prefix = prefix, .fail_policy = TK_FAIL_POLICY_DEFAULT};
        r = tk_limiter_new(strategy, &cfg, &s->limiter);
        tk_strategy_free(strategy);
        return r;
    }
    if (kind == SHAPER) {
        const cJSON *options = cJSON_GetObjectItemCaseSensitive(suite, "shaper");
        if (!options) tkc_die("a shaper suite needs \"shaper\"");
        char *text = cJSON_PrintUnformatted(options);
        tk_shaper_config cfg = {.store = store, .clock = clock, .prefix = prefix};
        r = tk_shaper_new_json(text, &cfg, &s->shaper);
        cJSON_free(text);
        return r;
    }
    const char *rule_name = tkc_opt_string(suite, "rule", NULL);
    uint32_t rule;
    if (!rule_name) tkc_die("a multi suite needs \"rule\"");
    if (strcmp(rule_name, "all") == 0) rule = TK_RULE_ALL;
    else if (strcmp(rule_name, "any") == 0) rule = TK_RULE_ANY;
    else tkc_die("unknown rule \"%s\"", rule_name);
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(suite, "dimensions");
    if (!cJSON_IsArray(dims)) tkc_die("a multi suite needs a \"dimensions\" array");
    size_t n = (size_t)cJSON_GetArraySize(dims), i = 0;
    tk_dimension *d = calloc(n ? n : 1, sizeof *d);
    static const char *const dim_fields[] = {"name", "strategy", "costMultiplier", NULL};
    r = TK_RESULT_OK;
    for (const cJSON *dim = dims->child; dim; dim = dim->next, i++) {
        tkc_strict(dim, "a dimension", dim_fields);
        d[i].name = tkc_opt_string(dim, "name", NULL);
        if (!d[i].name) tkc_die("a dimension needs \"name\"");
        const cJSON *mult = tkc_opt_number(dim, "costMultiplier");
        d[i].cost_multiplier = 1;
        if (r == TK_RESULT_OK && mult) r = tk_cost_from_double(mult->valuedouble, &d[i].cost_multiplier);
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(dim, "strategy");
        if (!spec) tkc_die("a dimension needs \"strategy\"");
        tk_strategy *strategy = NULL;
        if (r == TK_RESULT_OK) r = json_strategy(spec, &strategy);
        d[i].strategy = strategy;
    }
    if (r == TK_RESULT_OK) {
        tk_multi_limiter_config cfg = {.store = store, .clock = clock, .prefix = prefix, .fail_policy = TK_FAIL_POLICY_DEFAULT};
        r = tk_multi_limiter_new(rule, d, n, &cfg, &s->multi);
    }
    for (i = 0; i < n; i++) tk_strategy_free((tk_strategy *)d[i].strategy);
    free(d);
    return r;
}

/* Resets every key the suite touches, so a shared Redis starts the suite as a fresh store. */
static void reset_keys(const cJSON *suite, const struct subject *s) {
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(suite, "ops");
    if (s->kind == MULTI) {
        const cJSON *lists[2] = {s->keys, NULL};
        size_t len;
        if (lists[0]) {
            const char **k = string_array(lists[0], &len);
            tk_multi_limiter_reset(s->multi, k, len);
            free(k);
        }
        for (const cJSON *op = ops ? ops->child : NULL; op; op = op->next) {
            const cJSON *keys = cJSON_GetObjectItemCaseSensitive(op, "keys");
            if (!keys) continue;
            const char **k = string_array(keys, &len);
            tk_multi_limiter_reset(s->multi, k, len); /* a wrong count fails here and in the op */
            free(k);
        }
        return;
    }
    const char *keys[1] = {s->key};
    for (const cJSON *op = ops ? ops->child : NULL;; op = op->next) {
        if (s->kind == RATE_LIMIT) tk_limiter_reset(s->limiter, keys[0]);
        else tk_shaper_reset(s->shaper, keys[0]);
        if (!op) break;
        keys[0] = tkc_opt_string(op, "key", s->key);
    }
}

static void run_op(const struct subject *s, const cJSON *op, tk_clock *clock, struct got *g) {
    static const char *const op_fields[] = {"now", "op", "cost", "key", "keys", "expect", "expectError", "comment", NULL};
    tkc_strict(op, "an op", op_fields);
    memset(g, 0, sizeof *g);
    const cJSON *now_v = tkc_opt_number(op, "now");
    if (!now_v) tkc_die("every op needs \"now\"");
    int64_t now;
    tk_result r = tk_now_from_double(now_v->valuedouble, &now);
    if (r != TK_RESULT_OK) return got_error(g, r);
    if ((r = tk_clock_set(clock, now)) != TK_RESULT_OK) return got_error(g, r);
    const char *kind = tkc_opt_string(op, "op", s->kind == SHAPER ? "reserve" : "check");
    const cJSON *cost_v = tkc_opt_number(op, "cost");
    uint64_t cost = 1;
    int needs_cost = strcmp(kind, "check") == 0 || strcmp(kind, "forecast") == 0 || strcmp(kind, "reserve") == 0;
    if (needs_cost && cost_v && (r = tk_cost_from_double(cost_v->valuedouble, &cost)) != TK_RESULT_OK)
        return got_error(g, r);
    int is_reset = strcmp(kind, "reset") == 0;
    if (s->kind == MULTI) {
        const cJSON *keys_v = cJSON_GetObjectItemCaseSensitive(op, "keys");
        if (!keys_v) keys_v = s->keys;
        size_t len = 0;
        const char **keys = keys_v ? string_array(keys_v, &len) : calloc(1, sizeof *keys);
        size_t binding = 0;
        if (strcmp(kind, "check") == 0) {
            r = tk_multi_limiter_check(s->multi, keys, len, cost, &g->decision, &binding, NULL);
            if (r == TK_RESULT_OK) {
                g->kind = GOT_DECISION;
                r = tk_multi_limiter_dimension_name(s->multi, binding, &g->binding);
            }
        } else if (is_reset) {
            r = tk_multi_limiter_reset(s->multi, keys, len);
            g->kind = GOT_DONE;
        } else {
            r = TK_RESULT_NOT_IMPLEMENTED; /* peek/forecast/reserve do not exist on a multi limiter */
        }
        free(keys);
    } else {
        const char *key = tkc_opt_string(op, "key", s->key);
        if (s->kind == RATE_LIMIT) {
            g->kind = GOT_DECISION;
            if (strcmp(kind, "check") == 0) r = tk_limiter_check(s->limiter, key, cost, &g->decision);
            else if (strcmp(kind, "peek") == 0) r = tk_limiter_peek(s->limiter, key, &g->decision);
            else if (strcmp(kind, "forecast") == 0) r = tk_limiter_forecast(s->limiter, key, cost, &g->decision);
            else if (is_reset) r = tk_limiter_reset(s->limiter, key), g->kind = GOT_DONE;
            else if (strcmp(kind, "reserve") == 0) r = TK_RESULT_NOT_IMPLEMENTED;
            else tkc_die("unknown op \"%s\"", kind);
        } else {
            g->kind = GOT_RESERVATION;
            if (strcmp(kind, "reserve") == 0) r = tk_shaper_reserve(s->shaper, key, cost, &g->reservation);
            else if (is_reset) r = tk_shaper_reset(s->shaper, key), g->kind = GOT_DONE;
            else if (strcmp(kind, "check") == 0 || strcmp(kind, "peek") == 0 || strcmp(kind, "forecast") == 0)
                r = TK_RESULT_NOT_IMPLEMENTED;
            else tkc_die("unknown op \"%s\"", kind);
        }
    }
    if (r != TK_RESULT_OK) got_error(g, r);
}

/* Compares one expected integer/bool field if present. */
static int field_ok(const cJSON *expect, const char *name, long long got) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(expect, name);
    if (!v) return 1;
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v) == (got != 0);
    if (cJSON_IsNumber(v)) return v->valuedouble == (double)got;
    tkc_die("expect.%s has the wrong type", name);
    return 0;
}

static int expect_matches(const cJSON *expect, const struct got *g) {
    static const char *const fields[] = {"allowed", "limit", "remaining", "resetAt", "retryAfterMs",
                                         "binding", "accepted", "delayMs", NULL};
    tkc_strict(expect, "expect", fields);
    const tk_decision *d = &g->decision;
    switch (g->kind) {
    case GOT_DECISION: {
        const char *binding = tkc_opt_string(expect, "binding", NULL);
        return !cJSON_GetObjectItemCaseSensitive(expect, "accepted") &&
               !cJSON_GetObjectItemCaseSensitive(expect, "delayMs") && field_ok(expect, "allowed", d->allowed) &&
               field_ok(expect, "limit", d->limit) && field_ok(expect, "remaining", d->remaining) &&
               field_ok(expect, "resetAt", d->reset_at) && field_ok(expect, "retryAfterMs", d->retry_after_ms) &&
               (!binding || (g->binding && strcmp(binding, g->binding) == 0));
    }
    case GOT_RESERVATION:
        for (const cJSON *m = expect->child; m; m = m->next)
            if (strcmp(m->string, "accepted") != 0 && strcmp(m->string, "delayMs") != 0) return 0;
        return field_ok(expect, "accepted", g->reservation.accepted) &&
               field_ok(expect, "delayMs", g->reservation.delay_ms);
    default:
        return 0;
    }
}

static void describe(const struct got *g, char *buf, size_t len) {
    const tk_decision *d = &g->decision;
    switch (g->kind) {
    case GOT_DECISION:
        snprintf(buf, len, "{allowed: %s, limit: %lld, remaining: %lld, resetAt: %lld, retryAfterMs: %lld%s%s%s}",
                 d->allowed ? "true" : "false", (long long)d->limit, (long long)d->remaining,
                 (long long)d->reset_at, (long long)d->retry_after_ms, g->binding ? ", binding: \"" : "",
                 g->binding ? g->binding : "", g->binding ? "\"" : "");
        break;
    case GOT_RESERVATION:
        snprintf(buf, len, "{accepted: %s, delayMs: %lld}", g->reservation.accepted ? "true" : "false",
                 (long long)g->reservation.delay_ms);
        break;
    case GOT_DONE:
        snprintf(buf, len, "done");
        break;
    case GOT_ERROR:
        snprintf(buf, len, "error %s (%s)", tk_result_code(g->error), g->message);
        break;
    }
}

static void run_suite(const cJSON *suite, int index, tk_store *shared_store) {
    static const char *const suite_fields[] = {"id", "name", "comment", "primitive", "strategy", "shaper", "rule",
                                               "dimensions", "key", "keys", "prefix", "expectError", "ops", NULL};
    tkc_strict(suite, "a suite", suite_fields);
    char label[512];
    const char *id = tkc_opt_string(suite, "id", tkc_opt_string(suite, "name", NULL));
    if (id) snprintf(label, sizeof label, "%s", id);
    else snprintf(label, sizeof label, "#%d", index);
    const char *prim = tkc_opt_string(suite, "primitive", "rateLimit");
    enum primitive kind;
    if (strcmp(prim, "rateLimit") == 0) kind = RATE_LIMIT;
    else if (strcmp(prim, "multi") == 0) kind = MULTI;
    else if (strcmp(prim, "shaper") == 0) kind = SHAPER;
    else tkc_die("unknown primitive \"%s\"", prim);
    const char *expect_error = tkc_opt_string(suite, "expectError", NULL);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(suite, "ops");
    if (ops && !cJSON_IsArray(ops)) tkc_die("\"ops\" must be an array");
    int n_ops = ops ? cJSON_GetArraySize(ops) : 0;

    tk_store *store = shared_store;
    if (!store && tk_store_memory_new(&store) != TK_RESULT_OK) tkc_die("cannot create a memory store");
    tk_clock *clock = NULL;
    if (tk_clock_new_manual(0, &clock) != TK_RESULT_OK) tkc_die("cannot create a clock");
    struct subject s = {0};
    tk_result r = build(suite, kind, store, clock, &s);
    char msg[256] = "";
    if (r != TK_RESULT_OK) tk_last_error_message(msg, sizeof msg, NULL);
    if (r != TK_RESULT_OK && expect_error && strcmp(tk_result_code(r), expect_error) == 0) {
        tkc_passed++;
    } else if (r != TK_RESULT_OK) {
        tkc_failed += n_ops > 1 ? n_ops : 1;
        printf("%s: setup: expected %s, got error %s (%s)\n", label, expect_error ? expect_error : "a limiter",
               tk_result_code(r), msg);
    } else if (expect_error) {
        tkc_failed++;
        printf("%s: setup: expected error %s, got a limiter\n", label, expect_error);
    } else {
        if (shared_store) reset_keys(suite, &s);
        int i = 0;
        for (const cJSON *op = ops ? ops->child : NULL; op; op = op->next, i++) {
            struct got g;
            run_op(&s, op, clock, &g);
            const char *want_error = tkc_opt_string(op, "expectError", NULL);
            const cJSON *expect = cJSON_GetObjectItemCaseSensitive(op, "expect");
            int ok;
            if (want_error) ok = g.kind == GOT_ERROR && strcmp(tk_result_code(g.error), want_error) == 0;
            else if (expect) ok = expect_matches(expect, &g);
            else ok = g.kind != GOT_ERROR;
            if (ok) {
                tkc_passed++;
                continue;
            }
            tkc_failed++;
            char want[512], got[512];
            if (want_error) snprintf(want, sizeof want, "error %s", want_error);
            else if (expect) {
                char *text = cJSON_PrintUnformatted(expect);
                snprintf(want, sizeof want, "%s", text);
                cJSON_free(text);
            } else snprintf(want, sizeof want, "no error");
            describe(&g, got, sizeof got);
            printf("%s: op %d (now %.17g): expected %s, got %s\n", label, i,
                   cJSON_GetObjectItemCaseSensitive(op, "now")->valuedouble, want, got);
        }
    }
    free_subject(&s);
    tk_clock_free(clock);
    if (!shared_store) tk_store_free(store);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) tkc_die("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) tkc_die("cannot read %s", path);
    buf[len] = 0;
    fclose(f);
    return buf;
}

/* Calls tk_http_headers / tk_http_client_key with a buffer that grows until the answer fits.
 * Returns the result; on success *out is a malloc'd NUL-terminated string. */
static tk_result http_call(tk_result (*f)(const char *, char *, size_t, size_t *), const char *request, char **out) {
    size_t len = 256, need = 0;
    for (;;) {
        char *buf = malloc(len);
        tk_result r = f(request, buf, len, &need);
        if (r != TK_RESULT_OK) {
            free(buf);
            return r;
        }
        if (need < len) {
            *out = buf;
            return r;
        }
        free(buf);
        len = need + 1;
    }
}

/* One HTTP case: the request goes to the library as JSON text, the answer is compared exactly. */
static void run_http_case(const cJSON *c, int headers) {
    static const char *const case_fields[] = {"id", "comment", "request", "expect", "expectError", NULL};
    tkc_strict(c, "an http case", case_fields);
    const char *id = tkc_opt_string(c, "id", "?");
    const cJSON *expect = cJSON_GetObjectItemCaseSensitive(c, "expect");
    const char *want_error = tkc_opt_string(c, "expectError", NULL);
    if (!expect == !want_error) tkc_die("http case %s needs exactly one of expect, expectError", id);
    char *request = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "request"));
    char *answer = NULL;
    tk_result r = http_call(headers ? tk_http_headers : tk_http_client_key, request, &answer);
    int ok;
    char got[1024];
    if (r != TK_RESULT_OK) {
        char msg[512];
        tk_last_error_message(msg, sizeof msg, NULL);
        snprintf(got, sizeof got, "error %s (%s)", tk_result_code(r), msg);
        ok = want_error && strcmp(tk_result_code(r), want_error) == 0;
    } else if (headers) {
        cJSON *lines = cJSON_Parse(answer);
        ok = expect && lines && cJSON_Compare(expect, lines, 1);
        snprintf(got, sizeof got, "%s", answer);
        cJSON_Delete(lines);
    } else {
        ok = expect && cJSON_IsString(expect) && strcmp(expect->valuestring, answer) == 0;
        snprintf(got, sizeof got, "\"%s\"", answer);
    }
    if (ok) {
        tkc_passed++;
    } else {
        tkc_failed++;
        char *want = expect ? cJSON_PrintUnformatted(expect) : NULL;
        printf("FAIL %s case %s: expected %s, got %s\n", headers ? "header" : "client key", id,
               want ? want : want_error, got);
        free(want);
    }
    free(answer);
    free(request);
}

/* An HTTP vectors file ("format": "throttlekit-http/1"): header lines and client keys. */
static void run_http_file(const cJSON *root) {
    static const char *const top_fields[] = {"format", "description", "headerCases", "clientKeyCases", NULL};
    tkc_strict(root, "the http file", top_fields);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "headerCases");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "clientKeyCases");
    for (const cJSON *c = h ? h->child : NULL; c; c = c->next) run_http_case(c, 1);
    for (const cJSON *c = k ? k->child : NULL; c; c = c->next) run_http_case(c, 0);
}

/* --store postgres: the one PostgresStore of a file's suites (tk_store_postgres_connect_with). */
static const char *postgres_url = NULL;
/* --store sqlite: the file of the one SqliteStore of a file's suites (tk_store_sqlite_open). */
static const char *sqlite_path = NULL;

static void run_file(const char *path, const tk_redis_options *redis) {
    char *text = read_file(path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) tkc_die("%s is not valid JSON", path);
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (cJSON_IsString(format) && strcmp(format->valuestring, "throttlekit-http/1") == 0) {
        run_http_file(root); /* needs no store */
        cJSON_Delete(root);
        return;
    }
    if (cJSON_IsString(format) && strcmp(format->valuestring, "throttlekit-adaptive/1") == 0) {
        tkc_run_adaptive_file(root); /* needs no store */
        cJSON_Delete(root);
        return;
    }
    static const char *const top_fields[] = {"contractVersion", "generatedFrom", "frozen", "decisionFields",
                                             "note", "description", "suites", NULL};
    tkc_strict(root, "the file", top_fields);
    const cJSON *suites = cJSON_GetObjectItemCaseSensitive(root, "suites");
    if (!cJSON_IsArray(suites)) tkc_die("%s has no \"suites\" array", path);
    tk_store *store = NULL;
    if (redis) {
        tk_result r = tk_store_redis_connect_with(redis, &store);
        if (r != TK_RESULT_OK) {
            char msg[512];
            tk_last_error_message(msg, sizeof msg, NULL);
            tkc_die("cannot connect to %s: %s", redis->urls, msg);
        }
    } else if (postgres_url) {
        /* 30 s timeouts, as the Node and Python runners: a replay checks decisions, not
         * latency, and a call's timeout covers a new connection's login, which a loaded machine
         * held past the 1 s default. No sweeper: it judges expiry by the server's clock, and the
         * vectors' rows live on their own clock. */
        tk_postgres_options o = {
            .url = postgres_url, .timeout_ms = 30000, .connect_timeout_ms = 30000, .no_sweep = true};
        tk_result r = tk_store_postgres_connect_with(&o, &store);
        if (r != TK_RESULT_OK) {
            char msg[512];
            tk_last_error_message(msg, sizeof msg, NULL);
            tkc_die("cannot connect to Postgres (%s): %s", tk_result_code(r), msg);
        }
    } else if (sqlite_path) {
        tk_sqlite_options o = {.no_sweep = true};
        tk_result r = tk_store_sqlite_open(sqlite_path, &o, &store);
        if (r != TK_RESULT_OK) {
            char msg[512];
            tk_last_error_message(msg, sizeof msg, NULL);
            tkc_die("cannot open %s (%s): %s", sqlite_path, tk_result_code(r), msg);
        }
    }
    int i = 0;
    for (const cJSON *suite = suites->child; suite; suite = suite->next, i++) run_suite(suite, i, store);
    tk_store_free(store);
    cJSON_Delete(root);
}

#define USAGE                                                                                                  \
    "usage: tk-conformance [--store memory|redis|redis-cluster|redis-sentinel|postgres|sqlite]\n"                \
    "       [--redis-url URL[,URL...]] [--redis-service-name NAME] [--redis-tls-ca FILE] [--redis-tls-cert FILE]\n" \
    "       [--redis-tls-key FILE] [--redis-scripting auto|functions|eval] [--postgres-url URL]\n"                  \
    "       [--sqlite-path FILE] FILE..."

/* The value of the flag at argv[*i] (advancing *i), or NULL when argv[*i] is not `name`. */
static const char *flag(int argc, char **argv, int *i, const char *name) {
    if (strcmp(argv[*i], name) != 0) return NULL;
    if (*i + 1 >= argc) tkc_die("%s needs a value\n%s", name, USAGE);
    return argv[++*i];
}

int main(int argc, char **argv) {
    int redis = 0, postgres = 0, sqlite = 0;
    const char *pg_url = NULL, *sqlite_file = NULL;
    tk_redis_options options = {0};
    options.urls = "redis://127.0.0.1:6379";
    options.deterministic_replay = true;
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = flag(argc, argv, &i, "--store"))) {
            redis = postgres = sqlite = 0;
            if (strcmp(v, "memory") == 0) redis = 0;
            else if (strcmp(v, "postgres") == 0) postgres = 1;
            else if (strcmp(v, "sqlite") == 0) sqlite = 1;
            else if (strcmp(v, "redis") == 0) redis = 1, options.mode = TK_REDIS_MODE_STANDALONE;
            else if (strcmp(v, "redis-cluster") == 0) redis = 1, options.mode = TK_REDIS_MODE_CLUSTER;
            else if (strcmp(v, "redis-sentinel") == 0) redis = 1, options.mode = TK_REDIS_MODE_SENTINEL;
            else tkc_die("unknown store \"%s\" (memory, redis, redis-cluster, redis-sentinel, postgres or sqlite)", v);
        } else if ((v = flag(argc, argv, &i, "--redis-url"))) {
            options.urls = v;
        } else if ((v = flag(argc, argv, &i, "--postgres-url"))) {
            pg_url = v;
        } else if ((v = flag(argc, argv, &i, "--sqlite-path"))) {
            sqlite_file = v;
        } else if ((v = flag(argc, argv, &i, "--redis-service-name"))) {
            options.service_name = v;
        } else if ((v = flag(argc, argv, &i, "--redis-tls-ca"))) {
            options.tls_ca_file = v;
        } else if ((v = flag(argc, argv, &i, "--redis-tls-cert"))) {
            options.tls_cert_file = v;
        } else if ((v = flag(argc, argv, &i, "--redis-tls-key"))) {
            options.tls_key_file = v;
        } else if ((v = flag(argc, argv, &i, "--redis-scripting"))) {
            if (strcmp(v, "auto") == 0) options.scripting = TK_REDIS_SCRIPTING_AUTO;
            else if (strcmp(v, "functions") == 0) options.scripting = TK_REDIS_SCRIPTING_FUNCTIONS;
            else if (strcmp(v, "eval") == 0) options.scripting = TK_REDIS_SCRIPTING_EVAL;
            else tkc_die("unknown scripting \"%s\" (auto, functions or eval)", v);
        } else if (argv[i][0] == '-') {
            tkc_die("unknown flag %s\n%s", argv[i], USAGE);
        } else {
            files[nfiles++] = argv[i];
        }
    }
    if (!nfiles) tkc_die(USAGE);
    if (postgres) {
        if (!pg_url) tkc_die("--store postgres needs --postgres-url URL\n%s", USAGE);
        postgres_url = pg_url;
    }
    if (sqlite) {
        if (!sqlite_file) tkc_die("--store sqlite needs --sqlite-path FILE\n%s", USAGE);
        sqlite_path = sqlite_file;
    }
    for (int i = 0; i < nfiles; i++) run_file(files[i], redis ? &options : NULL);
    free(files);
    printf("%ld passed, %ld failed\n", tkc_passed, tkc_failed);
    return tkc_failed ? 1 : 0;
}
