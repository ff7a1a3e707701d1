/*
 * tk_redis_options.server_clock against the Redis at TK_REDIS_URL (test.sh starts one): with it
 * on, limiters, multi limiters and shapers built on the store decide at Redis's clock, whatever
 * their own clock reads; a zero-initialised options struct leaves it off. Every object here runs
 * on a manual clock stuck at epoch 0, so a decision at Redis's clock is told apart from one at the
 * caller's by its times: near the wall clock, or near 0.
 * Run under valgrind (test.sh). Prints "N passed, M failed" and exits non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "check.h"

static const char *url;
static tk_clock *epoch; /* a manual clock at 0, never advanced */

static int64_t wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Redis runs on this machine, so its clock is ours: a window of a minute that Redis opened
 * between `before` and now ends within a minute after them (a second of slack each side). */
static int ends_a_window_opened_since(int64_t reset_at, int64_t before) {
    return reset_at > before - 1000 && reset_at <= wall_ms() + 60000 + 1000;
}

/* A store on TK_REDIS_URL: zero-initialised options with `urls` and, if `server_clock`, that. */
static tk_store *connect(int server_clock) {
    tk_redis_options o = {0};
    o.urls = url;
    o.timeout_ms = 5000; /* valgrind on a loaded machine */
    if (server_clock) o.server_clock = true;
    tk_store *store = NULL;
    CHECK_OK(tk_store_redis_connect_with(&o, &store));
    return store;
}

/* A key of this run's own: the tests leave state behind, and a rerun against the same server
 * must not meet it. */
static const char *fresh(const char *name) {
    static char key[96];
    snprintf(key, sizeof key, "%s-%ld-%d", name, (long)time(NULL), (int)getpid());
    return key;
}

/* A limiter of 5 a minute (fixed window) on `store`, on the manual clock at 0. */
static tk_limiter *window_limiter(const tk_store *store) {
    tk_strategy *s = NULL;
    CHECK_OK(tk_strategy_fixed_window(5, 60000, &s));
    tk_limiter_config cfg = {0};
    cfg.store = store;
    cfg.clock = epoch;
    cfg.prefix = "c-clock";
    tk_limiter *l = NULL;
    CHECK_OK(tk_limiter_new(s, &cfg, &l));
    tk_strategy_free(s);
    return l;
}

/* Zero-initialised options keep today's behaviour: the limiter decides at its clock's 0, so the
 * window it opens ends at 60000. */
static void test_zeroed_options_decide_at_the_callers_clock(void) {
    current = "zeroed_options_decide_at_the_callers_clock";
    tk_store *store = connect(0);
    if (!store) return;
    tk_limiter *l = window_limiter(store);
    tk_decision d;
    CHECK_OK(tk_limiter_check(l, fresh("zeroed"), 1, &d));
    CHECK(d.allowed && d.remaining == 4 && d.reset_at == 60000);
    tk_limiter_free(l);
    tk_store_free(store);
}

/* With server_clock the same limiter decides at Redis's clock: the window ends a minute or less
 * after the wall clock, for the clock-reading call and for an explicit now of 0 alike. */
static void test_server_clock_decides_at_redis_time(void) {
    current = "server_clock_decides_at_redis_time";
    tk_store *store = connect(1);
    if (!store) return;
    tk_limiter *l = window_limiter(store);
    const char *key = fresh("server");
    int64_t before = wall_ms();
    tk_decision d;
    CHECK_OK(tk_limiter_check(l, key, 1, &d));
    CHECK(d.allowed && d.remaining == 4 && ends_a_window_opened_since(d.reset_at, before));
    CHECK_OK(tk_limiter_check_at(l, key, 1, 0, &d));
    CHECK(d.allowed && d.remaining == 3 && ends_a_window_opened_since(d.reset_at, before));
    tk_limiter_free(l);
    tk_store_free(store);
}

/* A multi limiter on a server-clock store picks the switch up too. */
static void test_multi_limiter_picks_it_up(void) {
    current = "multi_limiter_picks_it_up";
    tk_store *store = connect(1);
    if (!store) return;
    tk_strategy *per_ip = NULL, *per_user = NULL;
    CHECK_OK(tk_strategy_fixed_window(2, 60000, &per_ip));
    CHECK_OK(tk_strategy_fixed_window(5, 60000, &per_user));
    tk_dimension dims[2] = {{"ip", per_ip, 1}, {"user", per_user, 1}};
    tk_multi_limiter_config cfg = {0};
    cfg.store = store;
    cfg.clock = epoch;
    cfg.prefix = "c-clock-multi";
    tk_multi_limiter *m = NULL;
    CHECK_OK(tk_multi_limiter_new(TK_RULE_ALL, dims, 2, &cfg, &m));
    tk_strategy_free(per_ip);
    tk_strategy_free(per_user);
    if (!m) {
        tk_store_free(store);
        return;
    }
    char ip[96];
    snprintf(ip, sizeof ip, "%s", fresh("ip"));
    const char *keys[2] = {ip, fresh("user")};
    int64_t before = wall_ms();
    tk_decision d, each[2];
    CHECK_OK(tk_multi_limiter_check_at(m, keys, 2, 1, 0, &d, NULL, each));
    CHECK(d.allowed && ends_a_window_opened_since(d.reset_at, before));
    CHECK(ends_a_window_opened_since(each[0].reset_at, before) && ends_a_window_opened_since(each[1].reset_at, before));
    tk_multi_limiter_free(m);
    tk_store_free(store);
}

/* A shaper (10 a second, waits of at most 1 s) on a server-clock store books its departure at
 * Redis's clock. A shaper on a store without the switch, same prefix and key, reserving at 0
 * then finds a queue that ends about now (some 56 years away): refused, by about that much. On
 * one clock the second reservation would be accepted 100 ms after the first. */
static void test_shaper_picks_it_up(void) {
    current = "shaper_picks_it_up";
    tk_store *server = connect(1), *caller = connect(0);
    if (!server || !caller) {
        tk_store_free(server);
        tk_store_free(caller);
        return;
    }
    tk_shaper_config cfg = {0};
    cfg.clock = epoch;
    cfg.prefix = "c-clock-shaper";
    tk_shaper *on_server = NULL, *on_caller = NULL;
    cfg.store = server;
    CHECK_OK(tk_shaper_new(10, 1000, &cfg, &on_server));
    cfg.store = caller;
    CHECK_OK(tk_shaper_new(10, 1000, &cfg, &on_caller));
    const char *key = fresh("shaper");
    int64_t before = wall_ms();
    tk_reservation r;
    CHECK_OK(tk_shaper_reserve_at(on_server, key, 1, 0, &r));
    CHECK(r.accepted && r.delay_ms == 0);
    CHECK_OK(tk_shaper_reserve_at(on_caller, key, 1, 0, &r));
    /* The queue ends 100 ms after Redis's now; refused by that less the 1000 ms allowed. */
    CHECK(!r.accepted && r.delay_ms > before - 1000 - 1000 && r.delay_ms <= wall_ms() + 100 - 1000 + 1000);
    tk_shaper_free(on_server);
    tk_shaper_free(on_caller);
    tk_store_free(server);
    tk_store_free(caller);
}

int main(void) {
    url = getenv("TK_REDIS_URL");
    if (!url || !*url) {
        fprintf(stderr, "TK_REDIS_URL is not set: this test needs a Redis (bindings-c/test.sh starts one)\n");
        return 2;
    }
    if (tk_clock_new_manual(0, &epoch) != TK_RESULT_OK) abort();
    test_zeroed_options_decide_at_the_callers_clock();
    test_server_clock_decides_at_redis_time();
    test_multi_limiter_picks_it_up();
    test_shaper_picks_it_up();
    tk_clock_free(epoch);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
