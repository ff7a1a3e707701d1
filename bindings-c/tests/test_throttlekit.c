/*
 * Unit tests of the C ABI, built only against the installed header and library.
 * Run under valgrind (test.sh); with TK_REDIS_URL set, the Redis-store tests run as well.
 * Prints "N passed, M failed" and exits non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <throttlekit.h>

#include "check.h"

static tk_strategy *gcra(uint64_t limit, uint64_t period, uint64_t burst) {
    tk_strategy *s = NULL;
    if (tk_strategy_gcra(limit, period, burst, &s) != TK_RESULT_OK) abort();
    return s;
}

static void last_error(char *buf, size_t len) {
    if (tk_last_error_message(buf, len, NULL) != TK_RESULT_OK) abort();
}

/* The last error's message is exactly `null_parameter: <name> must not be NULL`. */
static int last_error_null(const char *name) {
    char msg[128], want[128];
    last_error(msg, sizeof msg);
    snprintf(want, sizeof want, "null_parameter: %s must not be NULL", name);
    return strcmp(msg, want) == 0;
}

static void test_version_and_results(void) {
    current = "version_and_results";
    CHECK(strcmp(tk_version(), TK_VERSION) == 0);
    const uint32_t known[] = {TK_RESULT_OK, TK_RESULT_CONFIG_INVALID, TK_RESULT_STORE_UNAVAILABLE,
                              TK_RESULT_RATE_LIMIT_EXCEEDED, TK_RESULT_QUEUE_FULL,
                              TK_RESULT_NOT_IMPLEMENTED, TK_RESULT_NULL_PARAMETER, TK_RESULT_PANIC,
                              TK_RESULT_INVALID_UTF8};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        CHECK(strcmp(tk_result_code(known[i]), "unknown result") != 0);
        CHECK(strlen(tk_result_message(known[i])) > 0);
    }
    /* Core's stable codes keep their numbers and strings. */
    CHECK(TK_RESULT_CONFIG_INVALID == 1 && strcmp(tk_result_code(1), "config_invalid") == 0);
    CHECK(TK_RESULT_STORE_UNAVAILABLE == 2 && strcmp(tk_result_code(2), "store_unavailable") == 0);
    CHECK(TK_RESULT_RATE_LIMIT_EXCEEDED == 3 && strcmp(tk_result_code(3), "rate_limit_exceeded") == 0);
    CHECK(TK_RESULT_QUEUE_FULL == 4 && strcmp(tk_result_code(4), "queue_full") == 0);
    CHECK(TK_RESULT_NOT_IMPLEMENTED == 5 && strcmp(tk_result_code(5), "not_implemented") == 0);
    CHECK(strcmp(tk_result_code(77), "unknown result") == 0);
    CHECK(strcmp(tk_result_message(0xffffffffu), "unknown result") == 0);
}

/* The worked example of core's Limiter docs, through the clock-reading calls. */
static void test_gcra_on_a_manual_clock(void) {
    current = "gcra_on_a_manual_clock";
    tk_clock *clock = NULL;
    CHECK_OK(tk_clock_new_manual(1000, &clock));
    tk_strategy *s = gcra(10, 1000, 2);
    tk_limiter_config cfg = {0};
    cfg.clock = clock;
    cfg.prefix = "api";
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, &cfg, &l));
    tk_strategy_free(s); /* the limiter keeps its own copy */
    tk_decision d;
    CHECK_OK(tk_limiter_check(l, "user:1", 1, &d));
    CHECK(d.allowed && d.limit == 2 && d.remaining == 1 && d.reset_at == 1100 && d.retry_after_ms == 0);
    CHECK_OK(tk_limiter_check(l, "user:1", 1, &d));
    CHECK(d.allowed && d.remaining == 0);
    CHECK_OK(tk_limiter_check(l, "user:1", 1, &d));
    CHECK(!d.allowed && d.retry_after_ms == 100 && !d.fallback);
    int64_t now = 0;
    CHECK_OK(tk_clock_advance(clock, 100, &now));
    CHECK(now == 1100);
    CHECK_OK(tk_limiter_check(l, "user:1", 1, &d));
    CHECK(d.allowed);
    /* The explicit-now variant ignores the clock: far in the future the key is idle again. */
    CHECK_OK(tk_limiter_check_at(l, "user:1", 1, 1000000, &d));
    CHECK(d.allowed && d.remaining == 1);
    CHECK(tk_clock_advance(clock, -1, NULL) == TK_RESULT_CONFIG_INVALID);
    CHECK_OK(tk_clock_set(clock, 5));
    CHECK_OK(tk_clock_now(clock, &now));
    CHECK(now == 5);
    tk_limiter_free(l);
    tk_clock_free(clock);
}

static void test_peek_forecast_reset(void) {
    current = "peek_forecast_reset";
    tk_strategy *s = NULL;
    CHECK_OK(tk_strategy_from_json("{\"kind\":\"fixedWindow\",\"options\":{\"limit\":3,\"windowMs\":1000}}", &s));
    int64_t limit = 0;
    CHECK_OK(tk_strategy_limit(s, &limit));
    CHECK(limit == 3);
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, NULL, &l));
    tk_decision d;
    CHECK_OK(tk_limiter_check_at(l, "k", 2, 10, &d));
    CHECK(d.allowed && d.remaining == 1 && d.reset_at == 1000);
    CHECK_OK(tk_limiter_forecast_at(l, "k", 2, 20, &d));
    CHECK(!d.allowed && d.remaining == 1 && d.retry_after_ms == 980);
    CHECK_OK(tk_limiter_peek_at(l, "k", 20, &d));
    CHECK(d.allowed && d.remaining == 1); /* neither consumed */
    CHECK_OK(tk_limiter_reset(l, "k"));
    CHECK_OK(tk_limiter_peek_at(l, "k", 20, &d));
    CHECK(d.remaining == 3);
    /* Clock-reading forms run on the system clock by default. */
    CHECK_OK(tk_limiter_peek(l, "other", &d));
    CHECK(d.allowed && d.remaining == 3);
    CHECK_OK(tk_limiter_forecast(l, "other", 1, &d));
    CHECK(d.allowed);
    tk_limiter_free(l);
    tk_strategy_free(s);
}

static void test_bad_input_is_a_result(void) {
    current = "bad_input_is_a_result";
    char msg[256];
    tk_strategy *s = NULL;
    CHECK(tk_strategy_from_json("{\"kind\":\"gcra\",\"options\":{\"limit\":10,\"periodMs\":1000,\"burst\":0}}", &s) ==
          TK_RESULT_CONFIG_INVALID);
    CHECK(s == NULL); /* out-parameters are untouched on failure */
    last_error(msg, sizeof msg);
    CHECK(strstr(msg, "burst") != NULL);
    CHECK(tk_strategy_from_json("not json", &s) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_strategy_from_json("{\"kind\":\"gcra\",\"options\":{\"limit\":1,\"periodMs\":1,\"typo\":1}}", &s) ==
          TK_RESULT_CONFIG_INVALID);
    CHECK(tk_strategy_token_bucket(10, -1.0, &s) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_strategy_fixed_window(0, 1000, &s) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_strategy_sliding_window(10, 0, 0, &s) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_strategy_sliding_window_log(10, 1000, &s) == TK_RESULT_OK);
    tk_limiter *l = NULL;
    tk_limiter_config bad_policy = {0};
    bad_policy.fail_policy = 99;
    CHECK(tk_limiter_new(s, &bad_policy, &l) == TK_RESULT_CONFIG_INVALID && l == NULL);
    CHECK_OK(tk_limiter_new(s, NULL, &l));
    tk_decision d = {0};
    CHECK(tk_limiter_check_at(l, "k", 0, 1, &d) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_limiter_check_at(l, "k", (1ull << 53) + 2, 1, &d) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_limiter_check_at(l, "\xff\xfe", 1, 1, &d) == TK_RESULT_INVALID_UTF8);
    CHECK(d.limit == 0); /* untouched */
    uint64_t cost = 0;
    int64_t now = 0;
    CHECK(tk_cost_from_double(1.5, &cost) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_cost_from_double(-1.0, &cost) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_cost_from_double(0.0 / 0.0, &cost) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_cost_from_double(3.0, &cost) == TK_RESULT_OK && cost == 3);
    CHECK(tk_now_from_double(1.25, &now) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_now_from_double(-5.0, &now) == TK_RESULT_OK && now == -5);
    /* A manual-only operation on the system clock. */
    tk_clock *sys = NULL;
    CHECK_OK(tk_clock_new_system(&sys));
    CHECK(tk_clock_set(sys, 1) == TK_RESULT_NOT_IMPLEMENTED);
    CHECK_OK(tk_clock_now(sys, &now));
    CHECK(now > 1600000000000LL);
    tk_clock_free(sys);
    tk_store *store = NULL;
    CHECK(tk_store_memory_new_bounded(0, &store) == TK_RESULT_CONFIG_INVALID && store == NULL);
    tk_limiter_free(l);
    tk_strategy_free(s);
}

static void test_null_pointers(void) {
    current = "null_pointers";
    tk_strategy *s = gcra(1, 1000, 0);
    tk_limiter *l = NULL;
    tk_decision d;
    CHECK(tk_strategy_from_json(NULL, &s) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_strategy_gcra(1, 1, 1, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_new(NULL, NULL, &l) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_new(s, NULL, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK_OK(tk_limiter_new(s, NULL, &l));
    CHECK(tk_limiter_check(NULL, "k", 1, &d) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_check(l, NULL, 1, &d) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_check(l, "k", 1, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_peek_at(l, NULL, 1, &d) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_forecast_at(l, "k", 1, 1, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_reset(NULL, "k") == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_store_memory_new(NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_store_redis_connect(NULL, 0, false, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_clock_now(NULL, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_shaper_reserve(NULL, "k", 1, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_multi_limiter_check(NULL, NULL, 0, 1, &d, NULL, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_cost_from_double(1.0, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_last_error_message(NULL, 8, NULL) == TK_RESULT_NULL_PARAMETER);
    char msg[64];
    last_error(msg, sizeof msg);
    CHECK(strstr(msg, "null_parameter") == msg);
    /* Freeing NULL is a no-op everywhere. */
    tk_limiter_free(NULL);
    tk_strategy_free(NULL);
    tk_store_free(NULL);
    tk_clock_free(NULL);
    tk_shaper_free(NULL);
    tk_multi_limiter_free(NULL);
    tk_limiter_free(l);
    tk_strategy_free(s);
}

static void test_last_error_truncates(void) {
    current = "last_error_truncates";
    tk_strategy *s = NULL;
    CHECK(tk_strategy_gcra(0, 1000, 0, &s) == TK_RESULT_CONFIG_INVALID);
    char small[8];
    size_t n = 0;
    CHECK_OK(tk_last_error_message(small, sizeof small, &n));
    CHECK(n > sizeof small && strlen(small) == sizeof small - 1);
    char *big = malloc(n + 1);
    CHECK_OK(tk_last_error_message(big, n + 1, NULL));
    CHECK(strlen(big) == n && strncmp(big, small, sizeof small - 1) == 0);
    CHECK(strncmp(big, "config_invalid", 14) == 0);
    free(big);
    CHECK_OK(tk_last_error_message(NULL, 0, &n)); /* just the length */
}

static void test_http(void) {
    current = "http";
    const char *req = "{\"nowMs\":0,\"limits\":[{\"strategy\":{\"kind\":\"gcra\",\"options\":"
                      "{\"limit\":5,\"periodMs\":60000}},\"decision\":{\"allowed\":false,\"limit\":5,"
                      "\"remaining\":0,\"resetAt\":60000,\"retryAfterMs\":12000}}]}";
    const char *want = "[[\"RateLimit-Policy\",\"\\\"default\\\";q=5;w=60\"],"
                       "[\"RateLimit\",\"\\\"default\\\";r=0;t=12\"],[\"Retry-After\",\"12\"]]";
    size_t n = 0;
    CHECK_OK(tk_http_headers(req, NULL, 0, &n)); /* just the length */
    CHECK(n == strlen(want));
    char small[10];
    CHECK_OK(tk_http_headers(req, small, sizeof small, &n));
    CHECK(n == strlen(want) && strlen(small) == sizeof small - 1 && strncmp(small, want, sizeof small - 1) == 0);
    char *buf = malloc(n + 1);
    CHECK_OK(tk_http_headers(req, buf, n + 1, &n));
    CHECK(strcmp(buf, want) == 0);
    free(buf);

    char key[64];
    CHECK_OK(tk_http_client_key("{\"peer\":\"10.0.0.1\",\"headers\":[[\"X-Forwarded-For\",\"6.6.6.6, 203.0.113.7\"]],"
                                "\"options\":{\"trustedProxies\":[\"10.0.0.0/8\"]}}",
                                key, sizeof key, &n));
    CHECK(strcmp(key, "203.0.113.7") == 0 && n == 11);

    char msg[128];
    CHECK(tk_http_headers("{\"nowMs\":0,\"limits\":[]}", key, sizeof key, &n) == TK_RESULT_CONFIG_INVALID);
    last_error(msg, sizeof msg);
    CHECK(strncmp(msg, "config_invalid", 14) == 0);
    CHECK(tk_http_client_key("not json", key, sizeof key, &n) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_http_client_key("{\"peer\":\"unix:/x\"}", key, sizeof key, &n) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_http_headers(NULL, key, sizeof key, &n) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_http_headers(req, NULL, 10, &n) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_http_headers(req, key, sizeof key, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_http_client_key("{\"peer\":\"\\u00ff\\ud800\"}", key, sizeof key, &n) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_http_client_key("\xff", key, sizeof key, &n) == TK_RESULT_INVALID_UTF8);
}

/* The JSON-free HTTP path: tk_http_edge_* give the same key and lines as the JSON exports,
 * the check happens once even when the lines do not fit, and the fail policy is the edge's. */
static void test_http_edge(void) {
    current = "http_edge";
    tk_http_edge *edge = NULL;
    CHECK_OK(tk_http_edge_new(NULL, "{\"trustedProxies\":[\"10.0.0.0/8\"]}", TK_FAIL_POLICY_DEFAULT, false, &edge));
    char key[64];
    size_t n = 0;
    const char *xff = "6.6.6.6\n203.0.113.7, 10.1.1.1"; /* two field lines, joined with \n */
    CHECK_OK(tk_http_edge_client_key(edge, "10.0.0.1:5000", 13, xff, strlen(xff), NULL, 0, key, sizeof key, &n));
    CHECK(strcmp(key, "203.0.113.7") == 0 && n == 11);
    CHECK(tk_http_edge_client_key(edge, "unix", 4, NULL, 0, NULL, 0, key, sizeof key, &n) == TK_RESULT_CONFIG_INVALID);

    tk_strategy *s = NULL;
    tk_clock *clock = NULL;
    tk_limiter *l = NULL;
    CHECK_OK(tk_strategy_gcra(5, 60000, 5, &s));
    CHECK_OK(tk_clock_new_manual(0, &clock));
    tk_limiter_config cfg = {.clock = clock};
    CHECK_OK(tk_limiter_new(s, &cfg, &l));
    tk_decision d;
    tk_http_outcome o;
    char lines[256], tiny[8];
    CHECK_OK(tk_http_edge_check(edge, l, "k", 1, 1, 0, &o, lines, sizeof lines, &n));
    CHECK(o.decision.allowed && o.decision.remaining == 4 && o.action == TK_HTTP_ACTION_FORWARD && o.status == 0);
    CHECK(strcmp(lines, "RateLimit-Policy: \"default\";q=5;w=60\nRateLimit: \"default\";r=4;t=12\n") == 0);
    /* Too small a buffer: the decision is still written (one check), the lines re-rendered. */
    CHECK_OK(tk_http_edge_check(edge, l, "k", 1, 1, 0, &o, tiny, sizeof tiny, &n));
    CHECK(o.decision.remaining == 3 && n >= sizeof tiny && strlen(tiny) == sizeof tiny - 1);
    CHECK_OK(tk_http_edge_lines(edge, l, "k", 1, &o.decision, 0, lines, sizeof lines, &n));
    CHECK(strcmp(lines, "RateLimit-Policy: \"default\";q=5;w=60\nRateLimit: \"default\";r=3;t=12\n") == 0);
    CHECK(tk_http_edge_check(edge, l, "\xff", 1, 1, 0, &o, lines, sizeof lines, &n) == TK_RESULT_INVALID_UTF8);
    CHECK(tk_http_edge_check(edge, l, "k", 1, 0, 0, &o, lines, sizeof lines, &n) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_http_edge_check(NULL, l, "k", 1, 1, 0, &o, lines, sizeof lines, &n) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_http_edge_check(edge, l, "k", 1, 1, 0, &o, NULL, 4, &n) == TK_RESULT_NULL_PARAMETER);
    /* The whole request in one call: the key, then its lines, in one buffer. */
    size_t key_n = 0;
    CHECK_OK(tk_http_edge_check_request(edge, l, "10.0.0.1:5000", 13, xff, strlen(xff), NULL, 0, 1, 0, &o, lines,
                                        sizeof lines, &key_n, &n));
    CHECK(o.decision.allowed && o.decision.remaining == 4 && key_n == 11 && n == strlen(lines));
    CHECK(strcmp(lines, "203.0.113.7RateLimit-Policy: \"default\";q=5;w=60\nRateLimit: \"default\";r=4;t=12\n") == 0);
    /* A peer that is not an address is config_invalid and consumes nothing. */
    CHECK(tk_http_edge_check_request(edge, l, "unix", 4, NULL, 0, NULL, 0, 1, 0, &o, lines, sizeof lines, &key_n,
                                     &n) == TK_RESULT_CONFIG_INVALID);
    CHECK_OK(tk_http_edge_check_request(edge, l, "203.0.113.7", 11, NULL, 0, NULL, 0, 1, 0, &o, tiny, sizeof tiny,
                                        &key_n, &n));
    CHECK(o.decision.remaining == 3 && key_n == 11 && n > sizeof tiny && strlen(tiny) == sizeof tiny - 1);
    CHECK(tk_http_edge_check_request(edge, l, "10.0.0.1", 8, NULL, 0, NULL, 0, 1, 0, &o, lines, sizeof lines, NULL,
                                     &n) == TK_RESULT_NULL_PARAMETER);
    /* A NULL output fails the call before anything is counted, each named in the error. */
    CHECK(tk_http_edge_check_request(edge, l, "203.0.113.7", 11, NULL, 0, NULL, 0, 1, 0, NULL, lines, sizeof lines,
                                     &key_n, &n) == TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_null("out_outcome"));
    CHECK(tk_http_edge_check_request(edge, l, "203.0.113.7", 11, NULL, 0, NULL, 0, 1, 0, &o, NULL, 4, &key_n, &n) ==
          TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_null("buf"));
    CHECK(tk_http_edge_check_request(edge, l, "203.0.113.7", 11, NULL, 0, NULL, 0, 1, 0, &o, lines, sizeof lines, NULL,
                                     NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_null("out_key_n"));
    CHECK(tk_http_edge_check_request(edge, l, "203.0.113.7", 11, NULL, 0, NULL, 0, 1, 0, &o, lines, sizeof lines,
                                     &key_n, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_null("out_n"));
    CHECK(tk_http_edge_check(edge, l, "k", 1, 1, 0, NULL, lines, sizeof lines, &n) == TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_null("out_outcome"));
    CHECK(tk_http_edge_check(edge, l, "k", 1, 1, 0, &o, lines, sizeof lines, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_null("out_n"));
    CHECK(tk_http_edge_lines(edge, l, "k", 1, &o.decision, 0, NULL, 4, &n) == TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_null("buf"));
    CHECK(tk_http_edge_lines(edge, l, "k", 1, &o.decision, 0, lines, sizeof lines, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_null("out_n"));
    CHECK_OK(tk_http_edge_check_request(edge, l, "203.0.113.7", 11, NULL, 0, NULL, 0, 1, 0, &o, lines, sizeof lines,
                                        &key_n, &n));
    CHECK(o.decision.remaining == 2);
    /* The counted-key check reads exactly key_len bytes. */
    CHECK_OK(tk_limiter_check_n(l, "kx", 1, 1, &d));
    CHECK(d.remaining == 2);
    CHECK(tk_limiter_check_n(l, NULL, 3, 1, &d) == TK_RESULT_NULL_PARAMETER);

    tk_http_edge *bad = NULL;
    CHECK(tk_http_edge_new("{\"family\":\"draft-99\"}", NULL, 0, false, &bad) == TK_RESULT_CONFIG_INVALID && bad == NULL);
    CHECK(tk_http_edge_new(NULL, NULL, 99, false, &bad) == TK_RESULT_CONFIG_INVALID && bad == NULL);

    /* A multi limiter: its lines (binding dimension first) and its outcome, then the denial's
     * body from core and the bodies of an undecided request. */
    tk_dimension dims[2] = {{"ip", s, 1}, {"all", s, 2}};
    tk_multi_limiter *m = NULL;
    CHECK_OK(tk_multi_limiter_new(TK_RULE_ALL, dims, 2, NULL, &m));
    const char *keys[2] = {"a", "b"};
    tk_decision each[2];
    char body[512];
    CHECK_OK(tk_http_edge_check_multi(edge, m, keys, 2, 1, 0, &o, each, lines, sizeof lines, &n));
    CHECK(o.action == TK_HTTP_ACTION_FORWARD && o.binding == 1 && each[1].remaining == 3 && each[0].remaining == 4);
    CHECK(strcmp(lines, "RateLimit-Policy: \"all\";q=5;w=60, \"ip\";q=5;w=60\n"
                        "RateLimit: \"all\";r=3;t=12, \"ip\";r=4;t=12\n") == 0);
    CHECK_OK(tk_http_edge_multi_lines(edge, m, keys, 2, &o, each, 0, tiny, sizeof tiny, &n));
    CHECK(n == strlen(lines) && strncmp(tiny, lines, sizeof tiny - 1) == 0);
    CHECK_OK(tk_http_edge_check_multi(edge, m, keys, 2, 4, 0, &o, NULL, lines, sizeof lines, &n));
    CHECK(o.action == TK_HTTP_ACTION_DENY && o.status == 429 && !o.decision.allowed && o.binding == 1);
    CHECK(strstr(lines, "Retry-After: ") != NULL);
    CHECK_OK(tk_http_outcome_body(&o, body, sizeof body, &n));
    CHECK(strstr(body, "quota-exceeded") != NULL && n == strlen(body));
    CHECK(tk_http_edge_check_multi(edge, m, keys, 1, 1, 0, &o, NULL, lines, sizeof lines, &n) ==
          TK_RESULT_CONFIG_INVALID);
    tk_http_outcome forward = {.action = TK_HTTP_ACTION_FORWARD}, unavailable = {.action = TK_HTTP_ACTION_UNAVAILABLE},
                    unknown = {.action = 7};
    CHECK_OK(tk_http_outcome_body(&forward, body, sizeof body, &n));
    CHECK(n == 0 && body[0] == '\0');
    CHECK_OK(tk_http_outcome_body(&unavailable, body, sizeof body, &n));
    CHECK(strstr(body, "temporary-reduced-capacity") != NULL);
    CHECK(tk_http_outcome_body(&unknown, body, sizeof body, &n) == TK_RESULT_CONFIG_INVALID);
    uint32_t status = 0;
    CHECK_OK(tk_http_error_response("config_invalid", &status, body, sizeof body, &n));
    CHECK(status == 500 && strcmp(body, "{\"type\":\"about:blank\",\"title\":\"Internal Server Error\",\"status\":500,"
                                        "\"detail\":\"rate limiter: config_invalid\"}") == 0);
    CHECK_OK(tk_http_error_response("store_unavailable", &status, body, sizeof body, &n));
    CHECK(status == 503 && strstr(body, "temporary-reduced-capacity") != NULL);
    CHECK(tk_http_error_response(NULL, &status, body, sizeof body, &n) == TK_RESULT_NULL_PARAMETER);
    tk_multi_limiter_free(m);
    tk_limiter_free(l);
    tk_clock_free(clock);
    tk_strategy_free(s);
    tk_http_edge_free(edge);
    tk_http_edge_free(NULL);
}

/* tk_strategy_to_json reads back to the same strategy; tk_http_problem_body is core's body. */
static void test_http_spec_and_problem(void) {
    current = "http_spec_and_problem";
    tk_strategy *s = NULL, *again = NULL;
    CHECK_OK(tk_strategy_gcra(5, 60000, 5, &s));
    char spec[256], spec2[256];
    size_t n = 0;
    CHECK_OK(tk_strategy_to_json(s, spec, sizeof spec, &n));
    CHECK(n == strlen(spec) && strstr(spec, "\"kind\":\"gcra\"") != NULL);
    CHECK_OK(tk_strategy_from_json(spec, &again));
    CHECK_OK(tk_strategy_to_json(again, spec2, sizeof spec2, &n));
    CHECK(strcmp(spec, spec2) == 0);
    CHECK(tk_strategy_to_json(NULL, spec, sizeof spec, &n) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_strategy_to_json(s, NULL, 4, &n) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_strategy_to_json(s, spec, sizeof spec, NULL) == TK_RESULT_NULL_PARAMETER);
    tk_strategy_free(again);
    tk_strategy_free(s);

    tk_decision denied = {false, 5, 0, 60000, 12000, false};
    char body[512];
    CHECK_OK(tk_http_problem_body(&denied, body, sizeof body, &n));
    CHECK(strcmp(body, "{\"detail\":\"Rate limit exceeded; retry in 12 seconds.\",\"status\":429,"
                       "\"title\":\"Too Many Requests\",\"type\":"
                       "\"https://iana.org/assignments/http-problem-types#quota-exceeded\"}") == 0);
    denied.retry_after_ms = 1; /* rounds up to one second, singular */
    CHECK_OK(tk_http_problem_body(&denied, body, sizeof body, &n));
    CHECK(strstr(body, "retry in 1 second.") != NULL);
    CHECK_OK(tk_http_problem_body(NULL, body, sizeof body, &n));
    CHECK(strstr(body, "\"status\":503") != NULL && strstr(body, "temporary-reduced-capacity") != NULL);
    CHECK_OK(tk_http_problem_body(NULL, NULL, 0, &n)); /* just the length */
    CHECK(n == strlen(body));
}

static void test_shared_store_and_prefixes(void) {
    current = "shared_store_and_prefixes";
    tk_store *store = NULL;
    CHECK_OK(tk_store_memory_new(&store));
    tk_strategy *s = gcra(1, 1000, 1);
    tk_limiter_config a = {0}, b = {0};
    a.store = store;
    a.prefix = "a";
    b.store = store;
    b.prefix = "b";
    tk_limiter *la = NULL, *la2 = NULL, *lb = NULL;
    CHECK_OK(tk_limiter_new(s, &a, &la));
    CHECK_OK(tk_limiter_new(s, &a, &la2));
    CHECK_OK(tk_limiter_new(s, &b, &lb));
    tk_store_free(store); /* the limiters hold their own references */
    tk_strategy_free(s);
    tk_decision d;
    CHECK_OK(tk_limiter_check_at(la, "k", 1, 0, &d));
    CHECK(d.allowed);
    CHECK_OK(tk_limiter_check_at(la2, "k", 1, 0, &d)); /* same prefix, same state */
    CHECK(!d.allowed);
    CHECK_OK(tk_limiter_check_at(lb, "k", 1, 0, &d)); /* another prefix */
    CHECK(d.allowed);
    tk_limiter_free(la);
    tk_limiter_free(la2);
    tk_limiter_free(lb);
}

static void test_multi(void) {
    current = "multi";
    tk_strategy *per_ip = NULL, *per_user = NULL;
    CHECK_OK(tk_strategy_fixed_window(2, 1000, &per_ip));
    CHECK_OK(tk_strategy_fixed_window(5, 1000, &per_user));
    tk_dimension dims[2] = {{"ip", per_ip, 1}, {"user", per_user, 2}};
    tk_multi_limiter *m = NULL;
    CHECK(tk_multi_limiter_new(0, dims, 2, NULL, &m) == TK_RESULT_CONFIG_INVALID);
    tk_dimension dup[2] = {{"ip", per_ip, 1}, {"ip", per_user, 1}};
    CHECK(tk_multi_limiter_new(TK_RULE_ALL, dup, 2, NULL, &m) == TK_RESULT_CONFIG_INVALID);
    tk_dimension zero[1] = {{"ip", per_ip, 0}};
    CHECK(tk_multi_limiter_new(TK_RULE_ALL, zero, 1, NULL, &m) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_multi_limiter_new(TK_RULE_ALL, NULL, 0, NULL, &m) == TK_RESULT_CONFIG_INVALID);
    CHECK(m == NULL);
    tk_multi_limiter_config cfg = {0};
    cfg.prefix = "svc";
    CHECK_OK(tk_multi_limiter_new(TK_RULE_ALL, dims, 2, &cfg, &m));
    tk_strategy_free(per_ip);
    tk_strategy_free(per_user);
    size_t n = 0;
    CHECK_OK(tk_multi_limiter_dimensions_len(m, &n));
    CHECK(n == 2);
    const char *keys[2] = {"10.0.0.1", "alice"};
    tk_decision d, each[2];
    size_t binding = 99;
    /* user costs 2 per request: after the first, ip has 1 left and user 3: ip binds. */
    CHECK_OK(tk_multi_limiter_check_at(m, keys, 2, 1, 100, &d, &binding, each));
    CHECK(d.allowed && binding == 0 && d.remaining == 1 && d.retry_after_ms == 0);
    CHECK(each[0].remaining == 1 && each[1].remaining == 3);
    CHECK_OK(tk_multi_limiter_check_at(m, keys, 2, 1, 200, &d, &binding, NULL));
    CHECK(d.allowed && d.remaining == 0);
    /* ip is exhausted: all denies, and nothing was charged to user. */
    CHECK_OK(tk_multi_limiter_check_at(m, keys, 2, 1, 300, &d, &binding, each));
    CHECK(!d.allowed && binding == 0 && each[1].remaining == 1 && d.retry_after_ms == 700);
    const char *name = NULL;
    CHECK_OK(tk_multi_limiter_dimension_name(m, binding, &name));
    CHECK(name && strcmp(name, "ip") == 0);
    CHECK(tk_multi_limiter_dimension_name(m, 2, &name) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_multi_limiter_check_at(m, keys, 1, 1, 300, &d, NULL, NULL) == TK_RESULT_CONFIG_INVALID);
    CHECK_OK(tk_multi_limiter_reset(m, keys, 2));
    CHECK_OK(tk_multi_limiter_check(m, keys, 2, 1, &d, NULL, NULL));
    CHECK(d.allowed);
    tk_multi_limiter_free(m);
}

static void test_shaper(void) {
    current = "shaper";
    tk_shaper *sh = NULL;
    CHECK(tk_shaper_new(0.0, 100, NULL, &sh) == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_shaper_new_json("{\"ratePerSec\":10,\"maxQueueMs\":150,\"x\":1}", NULL, &sh) == TK_RESULT_CONFIG_INVALID);
    CHECK(sh == NULL);
    CHECK_OK(tk_shaper_new_json("{\"ratePerSec\":10,\"maxQueueMs\":150}", NULL, &sh));
    tk_reservation r;
    CHECK_OK(tk_shaper_reserve_at(sh, "k", 1, 1000, &r));
    CHECK(r.accepted && r.delay_ms == 0);
    CHECK_OK(tk_shaper_reserve_at(sh, "k", 1, 1000, &r));
    CHECK(r.accepted && r.delay_ms == 100);
    CHECK_OK(tk_shaper_reserve_at(sh, "k", 1, 1000, &r));
    /* The third would wait 200 ms, 50 past max_queue_ms: refused, and by how much. */
    CHECK(!r.accepted && r.delay_ms == 50);
    tk_shaper_free(sh);

    /* A queue longer than max_queue_ms is refused by reserve (OK, accepted = false) and by
       schedule (TK_RESULT_QUEUE_FULL), on a manual clock that never moves. */
    tk_clock *clock = NULL;
    CHECK_OK(tk_clock_new_manual(0, &clock));
    tk_shaper_config cfg = {0};
    cfg.clock = clock;
    CHECK_OK(tk_shaper_new(10, 50, &cfg, &sh));
    CHECK_OK(tk_shaper_reserve(sh, "q", 1, &r));
    CHECK(r.accepted && r.delay_ms == 0);
    CHECK_OK(tk_shaper_reserve(sh, "q", 1, &r));
    CHECK(!r.accepted && r.delay_ms == 50);
    r.delay_ms = -7;
    CHECK(tk_shaper_schedule(sh, "q", 1, &r) == TK_RESULT_QUEUE_FULL);
    CHECK(r.delay_ms == -7);
    CHECK_OK(tk_shaper_reset(sh, "q"));
    CHECK_OK(tk_shaper_schedule(sh, "q", 1, &r)); /* empty queue: no wait */
    CHECK(r.accepted && r.delay_ms == 0);
    tk_shaper_free(sh);
    tk_clock_free(clock);
}

#define THREADS 4
#define PER_THREAD 200

static void *hammer(void *arg) {
    tk_limiter *l = arg;
    long allowed = 0;
    for (int i = 0; i < PER_THREAD; i++) {
        tk_decision d;
        if (tk_limiter_check_at(l, "shared", 1, 5000, &d) != TK_RESULT_OK) return (void *)-1L;
        allowed += d.allowed;
    }
    return (void *)allowed;
}

/* A handle is shared by threads and decisions on one key stay atomic: exactly `limit` pass. */
static void test_threads(void) {
    current = "threads";
    tk_strategy *s = NULL;
    CHECK_OK(tk_strategy_fixed_window(317, 60000, &s));
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, NULL, &l));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, hammer, l);
    long total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        CHECK((long)ret >= 0);
        total += (long)ret;
    }
    CHECK(total == 317);
    tk_limiter_free(l);
    tk_strategy_free(s);
}

static void test_redis_unreachable(void) {
    current = "redis_unreachable";
    tk_store *store = NULL;
    /* Port 1 is never a Redis server: connecting fails within the timeout. */
    CHECK(tk_store_redis_connect("redis://127.0.0.1:1", 300, false, &store) == TK_RESULT_STORE_UNAVAILABLE);
    CHECK(store == NULL);
    CHECK(tk_store_redis_connect("not a url", 300, false, &store) != TK_RESULT_OK);
}

/* The last error's text, for checks on what it names. */
static const char *last_error_text(void) {
    static char msg[512];
    tk_last_error_message(msg, sizeof msg, NULL);
    return msg;
}

/* A SQLite file shared by two stores; every bad path and option is a coded result. The code
 * between the markers is what docs/sqlite.md shows (go/sqlite_test.go checks it is verbatim). */
static void test_sqlite(void) {
    current = "sqlite";
    char dir[] = "/tmp/tk-c-sqlite-XXXXXX", path[64], side[64];
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/limits.db", dir);
    // docs/sqlite.md begins
    tk_sqlite_options options = {.busy_timeout_ms = 2000}; /* zero fields: the defaults */
    tk_store *store = NULL;
    if (tk_store_sqlite_open(path, &options, &store) != TK_RESULT_OK) {
        char msg[256];
        tk_last_error_message(msg, sizeof msg, NULL); /* "config_invalid: ..." */
        fprintf(stderr, "%s\n", msg);
        abort();
    }
    tk_strategy *strategy = NULL;
    tk_strategy_gcra(2, 60000, 0, &strategy); /* 2 a minute */
    tk_limiter_config config = {.store = store, .prefix = "api"};
    tk_limiter *limiter = NULL;
    tk_limiter_new(strategy, &config, &limiter);
    tk_decision d;
    tk_limiter_check(limiter, "user:42", 1, &d);
    // docs/sqlite.md ends
    CHECK(d.allowed);
    tk_store *other = NULL; /* another store on the file: the same limits */
    CHECK_OK(tk_store_sqlite_open(path, NULL, &other));
    tk_limiter *l2 = NULL;
    tk_limiter_config config2 = {.store = other, .prefix = "api"};
    CHECK_OK(tk_limiter_new(strategy, &config2, &l2));
    CHECK_OK(tk_limiter_check(l2, "user:42", 1, &d));
    CHECK(d.allowed && d.remaining == 0);
    CHECK_OK(tk_limiter_check(limiter, "user:42", 1, &d));
    CHECK(!d.allowed);
    tk_limiter_free(l2);
    tk_limiter_free(limiter);
    tk_strategy_free(strategy);
    tk_store_free(other);
    tk_store_free(store);

    tk_store *bad = NULL;
    CHECK(tk_store_sqlite_open(dir, NULL, &bad) == TK_RESULT_CONFIG_INVALID); /* a directory */
    CHECK(strstr(last_error_text(), dir) != NULL && bad == NULL);
    snprintf(side, sizeof side, "%s/missing/x.db", dir);
    CHECK(tk_store_sqlite_open(side, NULL, &bad) == TK_RESULT_CONFIG_INVALID);
    snprintf(side, sizeof side, "%s/text.db", dir);
    FILE *f = fopen(side, "w");
    if (!f) abort();
    for (int i = 0; i < 200; i++) fputs("not a database, just text. ", f);
    fclose(f);
    CHECK(tk_store_sqlite_open(side, NULL, &bad) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "text.db") != NULL);
    tk_sqlite_options o = {.synchronous = 7};
    CHECK(tk_store_sqlite_open(path, &o, &bad) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "synchronous") != NULL);
    tk_sqlite_options t = {.table = "Bad-Name"};
    CHECK(tk_store_sqlite_open(path, &t, &bad) == TK_RESULT_CONFIG_INVALID);
    tk_sqlite_options m = {.table = "absent", .no_migrate = true};
    CHECK(tk_store_sqlite_open(path, &m, &bad) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "absent") != NULL);
    CHECK(tk_store_sqlite_open(NULL, NULL, &bad) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_store_sqlite_open(path, NULL, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(bad == NULL);
    const char *files[] = {"limits.db", "limits.db-wal", "limits.db-shm", "text.db"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(side, sizeof side, "%s/%s", dir, files[i]);
        remove(side);
    }
    rmdir(dir);
}

/* Bad options are refused before any socket opens, naming the option. */
static void test_redis_options_invalid(void) {
    current = "redis_options_invalid";
    tk_store *store = NULL;
    tk_redis_options o = {0};
    CHECK(tk_store_redis_connect_with(NULL, &store) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_NULL_PARAMETER); /* urls is required */
    o.urls = "redis://127.0.0.1:1";
    CHECK(tk_store_redis_connect_with(&o, NULL) == TK_RESULT_NULL_PARAMETER);
    o.mode = 7;
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.mode") != NULL);
    o.mode = TK_REDIS_MODE_STANDALONE;
    o.scripting = 9;
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.scripting") != NULL);
    o.scripting = TK_REDIS_SCRIPTING_AUTO;
    o.tls_ca_file = "/etc/hostname"; /* TLS files on a plaintext URL would be ignored: refused */
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.tls_ca_file") != NULL);
    o.tls_ca_file = NULL;
    o.mode = TK_REDIS_MODE_SENTINEL; /* without service_name */
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.service_name") != NULL);
    o.mode = TK_REDIS_MODE_STANDALONE;
    o.urls = "redis://u:secret@127.0.0.1:1,redis://127.0.0.1:2"; /* two URLs, standalone */
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.urls") != NULL && strstr(last_error_text(), "secret") == NULL);
    CHECK(store == NULL);
    o.urls = "redis://127.0.0.1:1";
    o.durable_replicas = 65; /* at most 64 */
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.durable_replicas") != NULL);
    o.durable_replicas = 1;
    o.timeout_ms = 100;
    o.durable_timeout_ms = 100; /* must be less than timeout_ms */
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.durable_timeout_ms") != NULL);
    o.timeout_ms = 0;
    o.durable_timeout_ms = 0;
    o.deterministic_replay = true;
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.durable_replicas") != NULL);
    o.deterministic_replay = false;
    o.durable_replicas = 0;
    o.sentinel_password = "pw"; /* sentinel mode only */
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.sentinel_password") != NULL);
    o.sentinel_password = NULL;
    o.mode = TK_REDIS_MODE_SENTINEL;
    o.service_name = "m";
    o.sentinel_username = "u"; /* a user needs its password */
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "redis.sentinel_password") != NULL);
    CHECK(store == NULL);
}

/* A limiter with fail policy `policy` on `store`, prefix `prefix`. */
/* A fixed window of a day, 3 a window, on the system clock: the checks wait for a replica's
 * acknowledgement (seconds under valgrind on a loaded machine), and a window boundary between two
 * of them would start the count over: a run of a few seconds meets one with a probability of
 * about 1 in 20,000 (with a minute's window, its seconds in 60). */
static tk_limiter *redis_limiter(const tk_store *store, const char *prefix, uint32_t policy) {
    tk_strategy *s = NULL;
    CHECK_OK(tk_strategy_fixed_window(3, 86400000, &s));
    tk_limiter_config cfg = {0};
    cfg.store = store;
    cfg.prefix = prefix;
    cfg.fail_policy = policy;
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, &cfg, &l));
    tk_strategy_free(s);
    return l;
}

/* Durable charges on a server with no replica: store_unavailable naming the option (the
 * fail policy decides; fail_open admits as a fallback). Timing is Go's test (no valgrind). */
static void test_redis_durable_without_a_replica(const char *url) {
    current = "redis_durable_without_a_replica";
    tk_redis_options o = {0};
    o.urls = url;
    o.timeout_ms = 5000;
    o.durable_replicas = 1; /* durable_timeout_ms 0: core's 100 */
    tk_store *store = NULL;
    CHECK_OK(tk_store_redis_connect_with(&o, &store));
    if (!store) return;
    tk_limiter *l = redis_limiter(store, "c-durable", TK_FAIL_POLICY_RAISE);
    tk_decision d;
    CHECK(tk_limiter_check(l, "k", 1, &d) == TK_RESULT_STORE_UNAVAILABLE);
    CHECK(strstr(last_error_text(), "0 of 1 replicas") != NULL);
    CHECK(strstr(last_error_text(), "durable_replicas") != NULL);
    tk_limiter *open = redis_limiter(store, "c-durable", TK_FAIL_POLICY_FAIL_OPEN);
    CHECK_OK(tk_limiter_check(open, "k", 1, &d));
    CHECK(d.allowed && d.fallback);
    tk_limiter_free(l);
    tk_limiter_free(open);
    tk_store_free(store);
}

/* Sentinels that require a password: refused without sentinel_password; with it (and with
 * durable_replicas 1, the master having one replica) a limit of 3 admits exactly 3. */
static void test_redis_sentinel_password(const char *urls) {
    current = "redis_sentinel_password";
    tk_redis_options o = {0};
    o.urls = urls;
    o.mode = TK_REDIS_MODE_SENTINEL;
    o.service_name = "tkmain";
    o.timeout_ms = 5000;
    tk_store *store = NULL;
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_STORE_UNAVAILABLE);
    CHECK(strstr(last_error_text(), "NOAUTH") != NULL || strstr(last_error_text(), "uthentication") != NULL);
    CHECK(store == NULL);
    o.sentinel_password = "spw";
    o.durable_replicas = 1;
    o.durable_timeout_ms = 4000; /* generous: a loaded machine (and valgrind) */
    CHECK_OK(tk_store_redis_connect_with(&o, &store));
    if (!store) return;
    tk_limiter *l = redis_limiter(store, "c-sentinel-pw", TK_FAIL_POLICY_RAISE);
    CHECK_OK(tk_limiter_reset(l, "k")); /* the script runs this binary twice (valgrind, static) */
    int admitted = 0;
    for (int i = 0; i < 4; i++) {
        tk_decision d;
        CHECK_OK(tk_limiter_check(l, "k", 1, &d));
        admitted += d.allowed;
    }
    CHECK(admitted == 3);
    tk_limiter_free(l);
    tk_store_free(store);
}

/* One limit on a 3-master cluster, through the seed nodes: 2 admitted of 3 on each of many keys. */
static void test_redis_cluster(const char *seeds) {
    current = "redis_cluster";
    tk_redis_options o = {0};
    o.urls = seeds;
    o.mode = TK_REDIS_MODE_CLUSTER;
    o.timeout_ms = 5000;
    tk_store *store = NULL;
    CHECK_OK(tk_store_redis_connect_with(&o, &store));
    if (!store) return;
    tk_strategy *s = gcra(1, 60000, 2);
    tk_limiter_config cfg = {0};
    cfg.store = store;
    cfg.prefix = "c-cluster";
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, &cfg, &l));
    int admitted = 0;
    for (int k = 0; k < 20; k++) { /* 20 keys land on every master's slots */
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        CHECK_OK(tk_limiter_reset(l, key));
        for (int i = 0; i < 3; i++) {
            tk_decision d;
            CHECK_OK(tk_limiter_check(l, key, 1, &d));
            admitted += d.allowed;
        }
    }
    CHECK(admitted == 40);
    tk_limiter_free(l);
    tk_strategy_free(s);
    tk_store_free(store);
}

/* TLS: the throwaway CA verifies; another CA is store_unavailable naming the certificate. */
static void test_redis_tls(const char *url, const char *ca, const char *other_ca) {
    current = "redis_tls";
    tk_redis_options o = {0};
    o.urls = url;
    o.tls_ca_file = ca;
    o.timeout_ms = 5000;
    tk_store *store = NULL;
    CHECK_OK(tk_store_redis_connect_with(&o, &store));
    if (store) {
        tk_strategy *s = gcra(1, 60000, 1);
        tk_limiter_config cfg = {0};
        cfg.store = store;
        cfg.prefix = "c-tls";
        tk_limiter *l = NULL;
        CHECK_OK(tk_limiter_new(s, &cfg, &l));
        tk_decision d;
        CHECK_OK(tk_limiter_reset(l, "k"));
        CHECK_OK(tk_limiter_check(l, "k", 1, &d));
        CHECK(d.allowed);
        CHECK_OK(tk_limiter_check(l, "k", 1, &d));
        CHECK(!d.allowed);
        tk_limiter_free(l);
        tk_strategy_free(s);
        tk_store_free(store);
    }
    store = NULL;
    o.tls_ca_file = other_ca;
    CHECK(tk_store_redis_connect_with(&o, &store) == TK_RESULT_STORE_UNAVAILABLE);
    CHECK(strstr(last_error_text(), "certificate") != NULL);
    CHECK(store == NULL);
}

static void test_redis(const char *url) {
    current = "redis";
    tk_store *store = NULL;
    CHECK_OK(tk_store_redis_connect(url, 0, false, &store));
    if (!store) return;
    /* One a minute, bursts of 2: slow enough that valgrind's slowness cannot refill it. */
    tk_strategy *s = gcra(1, 60000, 2);
    tk_limiter_config cfg = {0};
    cfg.store = store;
    cfg.prefix = "c-unit";
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, &cfg, &l));
    CHECK_OK(tk_limiter_reset(l, "k"));
    tk_decision d;
    CHECK_OK(tk_limiter_check(l, "k", 1, &d));
    CHECK(d.allowed && d.limit == 2 && d.remaining == 1);
    CHECK_OK(tk_limiter_check(l, "k", 1, &d));
    CHECK_OK(tk_limiter_check(l, "k", 1, &d));
    CHECK(!d.allowed && d.retry_after_ms > 0 && d.retry_after_ms <= 60000);
    CHECK_OK(tk_limiter_reset(l, "k"));
    tk_limiter_free(l);
    tk_strategy_free(s);
    tk_store_free(store);
}

/* The memory store's bounds: evictions are counted, long keys refused, SIZE_MAX lifts a bound. */
static void test_memory_bounds(void) {
    current = "memory_bounds";
    tk_store *store = NULL;
    CHECK_OK(tk_store_memory_new_with_limits(64, 8, &store));
    tk_strategy *s = gcra(10, 60000, 10);
    tk_limiter_config cfg = {0};
    cfg.store = store;
    cfg.prefix = "p";
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, &cfg, &l));
    tk_decision d;
    char key[32];
    for (int i = 0; i < 164; i++) {
        snprintf(key, sizeof key, "%d", i); /* "p:" + at most 3 digits: within 8 bytes */
        CHECK_OK(tk_limiter_check_at(l, key, 1, 0, &d));
    }
    uint64_t evictions = 0;
    CHECK_OK(tk_store_memory_evictions(store, &evictions));
    CHECK(evictions == 100);
    CHECK(tk_limiter_check_at(l, "1234567", 1, 0, &d) == TK_RESULT_CONFIG_INVALID); /* 9 bytes */
    char msg[256];
    last_error(msg, sizeof msg);
    CHECK(strstr(msg, "maxKeyLength") != NULL);
    CHECK(tk_limiter_reset(l, "1234567") == TK_RESULT_CONFIG_INVALID);
    CHECK(tk_store_memory_evictions(NULL, &evictions) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_store_memory_evictions(store, NULL) == TK_RESULT_NULL_PARAMETER);
    tk_limiter_free(l);
    tk_store_free(store);

    tk_store *bad = NULL;
    CHECK(tk_store_memory_new_with_limits(0, 8, &bad) == TK_RESULT_CONFIG_INVALID && bad == NULL);
    CHECK(tk_store_memory_new_with_limits(8, 0, &bad) == TK_RESULT_CONFIG_INVALID && bad == NULL);
    /* The default store takes TK_MEMORY_DEFAULT_MAX_KEY_LENGTH bytes and refuses one more. */
    tk_limiter *def = NULL;
    CHECK_OK(tk_limiter_new(s, NULL, &def));
    char long_key[TK_MEMORY_DEFAULT_MAX_KEY_LENGTH + 2];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = 0;
    CHECK(tk_limiter_check_at(def, long_key, 1, 0, &d) == TK_RESULT_CONFIG_INVALID);
    long_key[sizeof long_key - 2] = 0;
    CHECK_OK(tk_limiter_check_at(def, long_key, 1, 0, &d));
    tk_limiter_free(def);
    tk_store *unbounded = NULL;
    CHECK_OK(tk_store_memory_new_with_limits(SIZE_MAX, SIZE_MAX, &unbounded));
    tk_store_free(unbounded);
    tk_strategy_free(s);
}

/* Metrics: off by default; checks counted by outcome and errors by code. */
static void test_metrics(void) {
    current = "metrics";
    tk_strategy *s = NULL;
    CHECK_OK(tk_strategy_fixed_window(2, 1000, &s));
    tk_limiter *off = NULL, *on = NULL;
    CHECK_OK(tk_limiter_new(s, NULL, &off));
    tk_limiter_config cfg = {0};
    cfg.metrics = true;
    CHECK_OK(tk_limiter_new(s, &cfg, &on));
    tk_decision d;
    tk_metrics m;
    CHECK_OK(tk_limiter_check_at(off, "k", 1, 0, &d));
    CHECK_OK(tk_limiter_metrics(off, &m));
    CHECK(!m.enabled && m.allowed == 0);
    for (int i = 0; i < 5; i++) CHECK_OK(tk_limiter_check_at(on, "k", 1, 0, &d));
    char long_key[300];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = 0;
    CHECK(tk_limiter_check_at(on, long_key, 1, 0, &d) == TK_RESULT_CONFIG_INVALID);
    CHECK_OK(tk_limiter_peek_at(on, "k", 0, &d)); /* not a check */
    CHECK_OK(tk_limiter_metrics(on, &m));
    CHECK(m.enabled && m.allowed == 2 && m.denied == 3 && m.fallback_allowed == 0 && m.fallback_denied == 0);
    CHECK(m.errors[TK_RESULT_CONFIG_INVALID] == 1 && m.errors[TK_RESULT_STORE_UNAVAILABLE] == 0);
    CHECK(m.latency_count == 0 && m.latency_bounds_us[0] == 50); /* memory: counted, not timed */
    CHECK(tk_limiter_metrics(NULL, &m) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_metrics(on, NULL) == TK_RESULT_NULL_PARAMETER);
    tk_limiter_free(off);
    tk_limiter_free(on);
    tk_strategy_free(s);
}

/* Peeks and forecasts are counted apart from checks; a multi limiter counts its combined
 * decisions, a shaper its reservations (accepted as allowed, rejected as denied). */
static void test_more_metrics(void) {
    current = "more_metrics";
    tk_strategy *s = NULL;
    CHECK_OK(tk_strategy_fixed_window(2, 1000, &s));
    tk_limiter_config lcfg = {0};
    lcfg.metrics = true;
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, &lcfg, &l));
    tk_decision d;
    tk_metrics m;
    CHECK_OK(tk_limiter_check_at(l, "k", 1, 0, &d));
    CHECK_OK(tk_limiter_peek_at(l, "k", 0, &d));
    CHECK_OK(tk_limiter_peek_at(l, "other", 0, &d));
    CHECK_OK(tk_limiter_forecast_at(l, "k", 2, 0, &d));
    CHECK_OK(tk_limiter_metrics(l, &m));
    CHECK(m.allowed == 1 && m.denied == 0 && m.peeks == 2 && m.forecasts == 1);
    tk_limiter_free(l);

    tk_dimension dims[1] = {{"ip", s, 1}};
    tk_multi_limiter *multi = NULL;
    CHECK_OK(tk_multi_limiter_new(TK_RULE_ALL, dims, 1, NULL, &multi));
    CHECK_OK(tk_multi_limiter_metrics(multi, &m));
    CHECK(!m.enabled && m.allowed == 0);
    tk_multi_limiter_free(multi);
    tk_multi_limiter_config mcfg = {0};
    mcfg.metrics = true;
    CHECK_OK(tk_multi_limiter_new(TK_RULE_ALL, dims, 1, &mcfg, &multi));
    const char *keys[1] = {"10.0.0.1"};
    for (int i = 0; i < 3; i++) CHECK_OK(tk_multi_limiter_check_at(multi, keys, 1, 1, 100, &d, NULL, NULL));
    const char *two[2] = {"a", "b"}; /* two keys for one dimension: core's config_invalid, counted */
    CHECK(tk_multi_limiter_check_at(multi, two, 2, 1, 100, &d, NULL, NULL) == TK_RESULT_CONFIG_INVALID);
    CHECK_OK(tk_multi_limiter_metrics(multi, &m));
    CHECK(m.enabled && m.allowed == 2 && m.denied == 1 && m.errors[TK_RESULT_CONFIG_INVALID] == 1);
    CHECK(tk_multi_limiter_metrics(NULL, &m) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_multi_limiter_metrics(multi, NULL) == TK_RESULT_NULL_PARAMETER);
    tk_multi_limiter_free(multi);
    tk_strategy_free(s);

    tk_shaper *sh = NULL;
    tk_shaper_config scfg = {0};
    scfg.metrics = true;
    CHECK_OK(tk_shaper_new(10, 150, &scfg, &sh));
    tk_reservation r;
    for (int i = 0; i < 3; i++) CHECK_OK(tk_shaper_reserve_at(sh, "k", 1, 1000, &r)); /* 0, 100: accepted; 200: refused */
    CHECK_OK(tk_shaper_metrics(sh, &m));
    CHECK(m.enabled && m.allowed == 2 && m.denied == 1 && m.latency_count == 0);
    CHECK(tk_shaper_metrics(NULL, &m) == TK_RESULT_NULL_PARAMETER);
    tk_shaper_free(sh);
}

/* Every call counted once: N calls of fresh limiters, a multi limiter and a shaper on `store`
 * (NULL: memory) down each entry point (check, check_at, check_n; peek and forecast, with and
 * without a time; check in the leased mode; the multi limiter's check and check_at; reserve, reserve_at
 * and schedule) move the counters by exactly N, and on Redis each call is timed. Keys are reset
 * first: test.sh runs this binary twice against one Redis. */
#define METRICS_N 7
static void limiter_paths_count_once(const tk_store *store, const char *tag) {
    char prefix[64];
    tk_decision d;
    tk_metrics m;
    const uint64_t timed = store ? METRICS_N : 0;
    /* Four an hour, bursts of 4: nothing refills while the test runs. */
    tk_strategy *s = gcra(4, 3600000, 4);
    for (int path = 0; path < 5; path++) {
        tk_limiter_config cfg = {0};
        snprintf(prefix, sizeof prefix, "c-metrics-%s-%d", tag, path);
        cfg.store = store;
        cfg.prefix = prefix;
        cfg.metrics = true;
        cfg.mode = path == 4 ? TK_MODE_LEASED : TK_MODE_STRICT;
        tk_limiter *l = NULL;
        CHECK_OK(tk_limiter_new(s, &cfg, &l));
        if (!l) continue;
        CHECK_OK(tk_limiter_reset(l, "k"));
        for (int i = 0; i < METRICS_N; i++) {
            switch (path) {
            case 0: CHECK_OK(tk_limiter_check(l, "k", 1, &d)); break;
            case 1: CHECK_OK(tk_limiter_check_at(l, "k", 1, 1000, &d)); break;
            case 2: CHECK_OK(tk_limiter_check_n(l, "k", 1, 1, &d)); break;
            case 4: CHECK_OK(tk_limiter_check(l, "k", 1, &d)); break; /* leased */
            default:
                CHECK_OK(tk_limiter_peek(l, "k", &d));
                CHECK_OK(tk_limiter_peek_at(l, "k", 1000, &d));
                CHECK_OK(tk_limiter_forecast(l, "k", 1, &d));
                CHECK_OK(tk_limiter_forecast_at(l, "k", 1, 1000, &d));
            }
        }
        CHECK_OK(tk_limiter_metrics(l, &m));
        if (path == 4) {
            CHECK(m.allowed + m.denied == METRICS_N && m.allowed <= 4 && m.peeks + m.forecasts == 0);
        } else if (path < 3) {
            CHECK(m.allowed == 4 && m.denied == 3 && m.peeks == 0 && m.forecasts == 0);
            CHECK(m.latency_count == timed);
        } else {
            CHECK(m.allowed + m.denied == 0 && m.peeks == 2 * METRICS_N && m.forecasts == 2 * METRICS_N);
            CHECK(m.latency_count == 4 * timed);
        }
        CHECK(m.fallback_allowed + m.fallback_denied == 0 && m.errors[TK_RESULT_CONFIG_INVALID] == 0);
        tk_limiter_free(l);
    }
    tk_dimension dims[2] = {{"a", s, 1}, {"b", s, 1}};
    tk_multi_limiter_config mcfg = {0};
    snprintf(prefix, sizeof prefix, "c-metrics-%s-multi", tag);
    mcfg.store = store;
    mcfg.prefix = prefix;
    mcfg.metrics = true;
    tk_multi_limiter *multi = NULL;
    CHECK_OK(tk_multi_limiter_new(TK_RULE_ALL, dims, 2, &mcfg, &multi));
    if (multi) {
        const char *keys[2] = {"x", "y"};
        CHECK_OK(tk_multi_limiter_reset(multi, keys, 2));
        for (int i = 0; i < METRICS_N; i++) {
            CHECK_OK(tk_multi_limiter_check(multi, keys, 2, 1, &d, NULL, NULL));
            CHECK_OK(tk_multi_limiter_check_at(multi, keys, 2, 1, 1000, &d, NULL, NULL));
        }
        CHECK_OK(tk_multi_limiter_metrics(multi, &m));
        CHECK(m.allowed == 4 && m.denied == 2 * METRICS_N - 4 && m.latency_count == 2 * timed);
        tk_multi_limiter_free(multi);
    }
    tk_strategy_free(s);

    tk_shaper_config scfg = {0};
    snprintf(prefix, sizeof prefix, "c-metrics-%s-shaper", tag);
    scfg.store = store;
    scfg.prefix = prefix;
    scfg.metrics = true;
    tk_shaper *sh = NULL;
    CHECK_OK(tk_shaper_new(1000, 60000, &scfg, &sh));
    if (sh) {
        tk_reservation r;
        CHECK_OK(tk_shaper_reset(sh, "x"));
        CHECK_OK(tk_shaper_reset(sh, "y"));
        for (int i = 0; i < METRICS_N; i++) {
            CHECK_OK(tk_shaper_reserve(sh, "x", 1, &r));
            CHECK_OK(tk_shaper_reserve_at(sh, "y", 1, 1000, &r));
            CHECK_OK(tk_shaper_schedule(sh, "x", 1, &r));
        }
        CHECK_OK(tk_shaper_metrics(sh, &m));
        CHECK(m.allowed + m.denied == 3 * METRICS_N && m.latency_count == 3 * timed);
        tk_shaper_free(sh);
    }
}

static void test_metrics_on_every_path(const char *url, const char *seeds, const char *sentinels) {
    current = "metrics_on_every_path";
    limiter_paths_count_once(NULL, "memory");
    tk_store *store = NULL;
    if (url && *url) {
        CHECK_OK(tk_store_redis_connect(url, 5000, false, &store));
        if (store) limiter_paths_count_once(store, "node");
        tk_store_free(store);
    }
    tk_redis_options o = {0};
    o.timeout_ms = 5000;
    if (seeds && *seeds) {
        o.urls = seeds;
        o.mode = TK_REDIS_MODE_CLUSTER;
        store = NULL;
        CHECK_OK(tk_store_redis_connect_with(&o, &store));
        if (store) limiter_paths_count_once(store, "cluster");
        tk_store_free(store);
    }
    if (sentinels && *sentinels) {
        o.urls = sentinels;
        o.mode = TK_REDIS_MODE_SENTINEL;
        o.service_name = "tkmain";
        o.sentinel_password = "spw";
        store = NULL;
        CHECK_OK(tk_store_redis_connect_with(&o, &store));
        if (store) limiter_paths_count_once(store, "sentinel");
        tk_store_free(store);
    }
}

int main(void) {
    test_version_and_results();
    test_gcra_on_a_manual_clock();
    test_peek_forecast_reset();
    test_bad_input_is_a_result();
    test_null_pointers();
    test_last_error_truncates();
    test_http();
    test_http_edge();
    test_http_spec_and_problem();
    test_shared_store_and_prefixes();
    test_memory_bounds();
    test_metrics();
    test_more_metrics();
    test_multi();
    test_shaper();
    test_threads();
    test_redis_unreachable();
    test_sqlite();
    const char *url = getenv("TK_REDIS_URL");
    if (url && *url) {
        test_redis(url);
        test_redis_durable_without_a_replica(url);
    } else {
        printf("note: TK_REDIS_URL is not set; the Redis-store unit test did not run\n");
    }
    test_redis_options_invalid();
    const char *seeds = getenv("TK_REDIS_CLUSTER_URLS");
    if (seeds && *seeds) {
        test_redis_cluster(seeds);
    } else {
        printf("note: TK_REDIS_CLUSTER_URLS is not set; the cluster unit test did not run\n");
    }
    const char *tls_url = getenv("TK_REDIS_TLS_URL"), *tls_dir = getenv("TK_REDIS_TLS_DIR");
    if (tls_url && *tls_url && tls_dir && *tls_dir) {
        char ca[1024], other[1024];
        snprintf(ca, sizeof ca, "%s/ca.crt", tls_dir);
        snprintf(other, sizeof other, "%s/other-ca.crt", tls_dir);
        test_redis_tls(tls_url, ca, other);
    } else {
        printf("note: TK_REDIS_TLS_URL/TK_REDIS_TLS_DIR are not set; the TLS unit test did not run\n");
    }
    const char *sentinel_pw = getenv("TK_REDIS_SENTINEL_PW_URLS");
    if (sentinel_pw && *sentinel_pw) {
        test_redis_sentinel_password(sentinel_pw);
    } else {
        printf("note: TK_REDIS_SENTINEL_PW_URLS is not set; the passworded-sentinel unit test did not run\n");
    }
    /* Each store the environment names (memory always). */
    test_metrics_on_every_path(url, seeds, sentinel_pw);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
