/*
 * The two-tier modes through the C ABI (tk_limiter_config.mode / .lease, tk_limiter_tier_stats,
 * tk_limiter_release_leases; the multi limiter's tk_multi_limiter_config.mode / .lease and
 * tk_multi_limiter_* twins; docs/leasing.md). Run under valgrind by test.sh; with TK_REDIS_URL
 * set, the fleet and cached-denial tests run on Redis as well as on a memory store.
 *
 * Time is a manual clock (the sync path sends the limiter's `now` to Redis), so every window
 * boundary is exact and no assertion depends on how fast the machine is: windows are 60 s of
 * that clock, and Redis expires a window's key 60 s of *real* time after it was written,
 * far longer than a run takes.
 * Prints "N passed, M failed" and exits non-zero on any failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "check.h"

/* A start aligned to a minute (fixed windows are aligned to the epoch). */
#define T0 1700000040000LL
#define WINDOW 60000LL

static char last[512];
static const char *last_error_text(void) {
    if (tk_last_error_message(last, sizeof last, NULL) != TK_RESULT_OK) abort();
    return last;
}

static tk_strategy *fixed_window(uint64_t limit, uint64_t window) {
    tk_strategy *s = NULL;
    if (tk_strategy_fixed_window(limit, window, &s) != TK_RESULT_OK) abort();
    return s;
}

/* Builds a limiter; returns the result and writes *out on success. */
static tk_result limiter(const tk_strategy *s, tk_store *store, tk_clock *clock, const char *prefix,
                         uint32_t mode, const tk_lease_options *lease, tk_limiter **out) {
    tk_limiter_config cfg = {0};
    cfg.store = store;
    cfg.clock = clock;
    cfg.prefix = prefix;
    cfg.mode = mode;
    cfg.lease = lease;
    return tk_limiter_new(s, &cfg, out);
}

/* Each bad value is config_invalid naming its field; nothing is written on failure. */
static void test_bad_options(void) {
    current = "bad_options";
    tk_strategy *fw = fixed_window(10, 1000);
    tk_strategy *g = NULL;
    CHECK_OK(tk_strategy_gcra(10, 1000, 0, &g));
    tk_lease_options d = tk_lease_options_default();
    CHECK(d.batch == 100 && d.low_water == 0 && !d.window_coupled && d.max_keys == 10000);

    tk_limiter *l = (tk_limiter *)0x1;
    tk_lease_options o = d;
    o.batch = 0;
    CHECK(limiter(fw, NULL, NULL, NULL, TK_MODE_LEASED, &o, &l) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "lease.batch") != NULL);
    CHECK(l == (tk_limiter *)0x1);
    o.batch = (1ULL << 53) + 1;
    CHECK(limiter(fw, NULL, NULL, NULL, TK_MODE_LEASED, &o, &l) == TK_RESULT_CONFIG_INVALID);
    o = d;
    o.low_water = o.batch;
    CHECK(limiter(fw, NULL, NULL, NULL, TK_MODE_LEASED, &o, &l) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "lease.lowWater") != NULL);
    o = d;
    o.max_keys = 0;
    CHECK(limiter(fw, NULL, NULL, NULL, TK_MODE_LEASED, &o, &l) == TK_RESULT_CONFIG_INVALID);
    CHECK(limiter(fw, NULL, NULL, NULL, TK_MODE_CACHED_DENY, &o, &l) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "lease.maxKeys") != NULL);
    o = d;
    o.window_coupled = true; /* GCRA has no window to couple to */
    CHECK(limiter(g, NULL, NULL, NULL, TK_MODE_LEASED, &o, &l) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "lease.windowCoupled") != NULL);
    CHECK(limiter(fw, NULL, NULL, NULL, 3, NULL, &l) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "mode 3") != NULL);
    /* Options with strict mode are a mistake, not silently ignored. */
    CHECK(limiter(fw, NULL, NULL, NULL, TK_MODE_STRICT, &d, &l) == TK_RESULT_CONFIG_INVALID);
    CHECK(l == (tk_limiter *)0x1);

    /* NULL out-parameters are results too. */
    CHECK_OK(limiter(fw, NULL, NULL, NULL, TK_MODE_LEASED, NULL, &l));
    CHECK(tk_limiter_tier_stats(l, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_tier_stats(NULL, &(tk_tier_stats){0}) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_mode(l, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_limiter_release_leases(NULL, -1, NULL) == TK_RESULT_NULL_PARAMETER);
    uint32_t mode = 99;
    CHECK_OK(tk_limiter_mode(l, &mode));
    CHECK(mode == TK_MODE_LEASED);
    tk_limiter_free(l);
    tk_strategy_free(fw);
    tk_strategy_free(g);
}

/* One process on a memory store: a lease of `batch`, the rest spent locally, given back. */
static void test_leased_memory(void) {
    current = "leased_memory";
    tk_strategy *fw = fixed_window(10, WINDOW);
    tk_clock *clock = NULL;
    CHECK_OK(tk_clock_new_manual(T0, &clock));
    tk_lease_options o = tk_lease_options_default();
    o.batch = 4;
    o.window_coupled = true;
    tk_limiter *l = NULL, *strict = NULL;
    tk_store *store = NULL;
    CHECK_OK(tk_store_memory_new(&store));
    CHECK_OK(limiter(fw, store, clock, "m", TK_MODE_LEASED, &o, &l));
    CHECK_OK(limiter(fw, store, clock, "m", TK_MODE_STRICT, NULL, &strict));
    tk_decision d;
    CHECK_OK(tk_limiter_check(l, "k", 1, &d));
    CHECK(d.allowed && d.limit == 10 && d.reset_at == T0 + WINDOW);
    CHECK_OK(tk_limiter_check(l, "k", 1, &d));
    CHECK(d.allowed);
    tk_tier_stats t;
    CHECK_OK(tk_limiter_tier_stats(l, &t));
    CHECK(t.leases == 1 && t.local_admits == 1);
    /* The store counted the whole batch: 10 - 4 left for others. */
    CHECK_OK(tk_limiter_peek(strict, "k", &d));
    CHECK(d.remaining == 6);
    uint64_t back = 99;
    CHECK_OK(tk_limiter_release_leases(l, TK_RELEASE_ALL_KEYS, &back));
    CHECK(back == 2);
    CHECK_OK(tk_limiter_peek(strict, "k", &d));
    CHECK(d.remaining == 8);
    CHECK_OK(tk_limiter_tier_stats(l, &t));
    CHECK(t.credits_returned == 2);
    /* A strict limiter's tier is empty. */
    CHECK_OK(tk_limiter_tier_stats(strict, &t));
    CHECK(t.leases == 0 && t.local_admits == 0 && t.local_denials == 0);
    CHECK_OK(tk_limiter_release_leases(strict, 0, &back));
    CHECK(back == 0);
    tk_limiter_free(l);
    tk_limiter_free(strict);
    tk_store_free(store);
    tk_clock_free(clock);
    tk_strategy_free(fw);
}

/*
 * N = 3 limiters (on Redis: 3 connections) share one key of a fixed window (limit 20 per 60 s)
 * and take turns, 3 checks per 0.6 s of the manual clock, for 5 windows: 1500 decisions. Counts
 * the admissions in each window by the time they were made and checks the documented bound:
 * exactly `limit` with window_coupled, at most `limit + N·(batch − 1)` without; and that the
 * leased fleet sent far fewer store calls (leases) than strict's one per decision.
 */
#define N 3
#define LIMIT 20
#define BATCH 5
#define WINDOWS 5
#define STEPS 100 /* per window */

/* carry: in even windows every limiter checks only once, at the last step (it leases a batch and
 * keeps batch - 1 credits); odd windows are flooded as usual. Uncoupled credits are then spent
 * in the next window on top of the store's limit: the bound, reached. */
static tk_store *redis_stores[N]; /* one connection per limiter, shared by every fleet run */

static uint64_t fleet(const char *url, const char *prefix, uint32_t mode, bool coupled, bool carry,
                      int64_t worst[WINDOWS]) {
    tk_strategy *fw = fixed_window(LIMIT, WINDOW);
    tk_clock *clock = NULL;
    CHECK_OK(tk_clock_new_manual(T0, &clock));
    tk_store *shared = NULL;
    if (!url) CHECK_OK(tk_store_memory_new(&shared));
    tk_lease_options o = tk_lease_options_default();
    o.batch = BATCH;
    o.window_coupled = coupled;
    tk_limiter *ls[N] = {0};
    for (int i = 0; i < N; i++) {
        CHECK_OK(limiter(fw, url ? redis_stores[i] : shared, clock, prefix, mode, mode == TK_MODE_STRICT ? NULL : &o,
                         &ls[i]));
    }
    if (ls[0]) CHECK_OK(tk_limiter_reset(ls[0], "hot"));
    for (int w = 0; w < WINDOWS; w++) worst[w] = 0;
    for (int w = 0; w < WINDOWS; w++) {
        for (int step = 0; step < STEPS; step++) {
            if (carry && w % 2 == 0 && step != STEPS - 1) continue;
            CHECK_OK(tk_clock_set(clock, T0 + w * WINDOW + step * (WINDOW / STEPS)));
            for (int i = 0; i < N; i++) {
                tk_decision d;
                if (!ls[i] || tk_limiter_check(ls[i], "hot", 1, &d) != TK_RESULT_OK) {
                    failed++;
                    fprintf(stderr, "FAIL %s: check failed: %s\n", current, last_error_text());
                    continue;
                }
                if (d.allowed) worst[w]++;
            }
        }
    }
    uint64_t calls = 0;
    for (int i = 0; i < N; i++) {
        tk_tier_stats t = {0};
        CHECK_OK(tk_limiter_tier_stats(ls[i], &t));
        calls += mode == TK_MODE_STRICT ? (uint64_t)(WINDOWS * STEPS) : t.leases;
        if (i == 0) CHECK_OK(tk_limiter_reset(ls[i], "hot"));
        tk_limiter_free(ls[i]);
    }
    tk_store_free(shared);
    tk_clock_free(clock);
    tk_strategy_free(fw);
    return calls;
}

static void test_fleet(const char *url, const char *tag) {
    char prefix[64];
    int64_t per[WINDOWS];
    snprintf(prefix, sizeof prefix, "c-lease-%s-%ld", tag, (long)getpid());
    for (int i = 0; url && i < N; i++) {
        if (tk_store_redis_connect(url, 10000, false, &redis_stores[i]) != TK_RESULT_OK) {
            failed++;
            fprintf(stderr, "FAIL fleet_redis: connect: %s\n", last_error_text());
            return;
        }
    }

    current = url ? "fleet_redis_strict" : "fleet_memory_strict";
    uint64_t strict_calls = fleet(url, prefix, TK_MODE_STRICT, false, false, per);
    for (int w = 0; w < WINDOWS; w++) CHECK(per[w] == LIMIT);

    current = url ? "fleet_redis_coupled" : "fleet_memory_coupled";
    uint64_t coupled_calls = fleet(url, prefix, TK_MODE_LEASED, true, false, per);
    for (int w = 0; w < WINDOWS; w++) CHECK(per[w] == LIMIT); /* exactly the limit */
    CHECK(coupled_calls * 20 < strict_calls);

    current = url ? "fleet_redis_uncoupled" : "fleet_memory_uncoupled";
    uint64_t leased_calls = fleet(url, prefix, TK_MODE_LEASED, false, false, per);
    int64_t worst = 0;
    for (int w = 0; w < WINDOWS; w++) {
        CHECK(per[w] >= LIMIT && per[w] <= LIMIT + N * (BATCH - 1));
        if (per[w] > worst) worst = per[w];
    }
    CHECK(leased_calls * 20 < strict_calls);

    /* Credits carried over: coupled still admits exactly the limit in every flooded window;
     * uncoupled admits limit + N·(batch − 1), the bound itself. */
    current = url ? "fleet_redis_carry" : "fleet_memory_carry";
    int64_t coupled_carry[WINDOWS], leased_carry[WINDOWS];
    fleet(url, prefix, TK_MODE_LEASED, true, true, coupled_carry);
    fleet(url, prefix, TK_MODE_LEASED, false, true, leased_carry);
    for (int w = 0; w < WINDOWS; w++) {
        CHECK(coupled_carry[w] == (w % 2 ? LIMIT : N));
        CHECK(leased_carry[w] == (w % 2 ? LIMIT + N * (BATCH - 1) : N));
    }
    printf("%s, credits carried over: flooded windows admit %lld coupled, %lld uncoupled (bound %d)\n",
           url ? "redis" : "memory", (long long)coupled_carry[1], (long long)leased_carry[1], LIMIT + N * (BATCH - 1));
    printf("%s: %d decisions; store calls: strict %llu, leased coupled %llu, leased %llu; "
           "worst window %lld (coupled: %d each; bound %d)\n",
           url ? "redis" : "memory", N * WINDOWS * STEPS, (unsigned long long)strict_calls,
           (unsigned long long)coupled_calls, (unsigned long long)leased_calls, (long long)worst, LIMIT,
           LIMIT + N * (BATCH - 1));
    for (int i = 0; i < N; i++) {
        tk_store_free(redis_stores[i]);
        redis_stores[i] = NULL;
    }
}

/*
 * cached_deny answers a denial without the store: after a strict limiter on the same store
 * resets the key, the cached denial still holds until its retry time (the store would admit),
 * and the next check after it asks the store again.
 */
static void test_cached_deny(const char *url) {
    current = url ? "cached_deny_redis" : "cached_deny_memory";
    tk_strategy *fw = fixed_window(3, WINDOW);
    tk_clock *clock = NULL;
    CHECK_OK(tk_clock_new_manual(T0 + 1000, &clock));
    tk_store *store = NULL;
    if (url) {
        CHECK_OK(tk_store_redis_connect(url, 10000, false, &store));
    } else {
        CHECK_OK(tk_store_memory_new(&store));
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "c-deny-%ld", (long)getpid());
    tk_limiter *cached = NULL, *strict = NULL;
    CHECK_OK(limiter(fw, store, clock, prefix, TK_MODE_CACHED_DENY, NULL, &cached));
    CHECK_OK(limiter(fw, store, clock, prefix, TK_MODE_STRICT, NULL, &strict));
    if (!cached || !strict) return;
    uint32_t mode = 0;
    CHECK_OK(tk_limiter_mode(cached, &mode));
    CHECK(mode == TK_MODE_CACHED_DENY);
    CHECK_OK(tk_limiter_reset(strict, "k"));
    tk_decision d;
    for (int i = 0; i < 3; i++) {
        CHECK_OK(tk_limiter_check(cached, "k", 1, &d));
        CHECK(d.allowed);
    }
    CHECK_OK(tk_limiter_check(cached, "k", 1, &d));
    CHECK(!d.allowed && d.retry_after_ms == WINDOW - 1000);
    CHECK_OK(tk_limiter_reset(strict, "k")); /* the store would now admit */
    CHECK_OK(tk_clock_advance(clock, 500, NULL));
    for (int i = 0; i < 100; i++) {
        CHECK_OK(tk_limiter_check(cached, "k", 1, &d));
        CHECK(!d.allowed && d.retry_after_ms == WINDOW - 1500);
    }
    tk_tier_stats t;
    CHECK_OK(tk_limiter_tier_stats(cached, &t));
    CHECK(t.local_denials == 100 && t.leases == 0);
    CHECK_OK(tk_limiter_peek(strict, "k", &d));
    CHECK(d.allowed && d.remaining == 3); /* the store never saw those 100 */
    CHECK_OK(tk_clock_set(clock, T0 + WINDOW));
    CHECK_OK(tk_limiter_check(cached, "k", 1, &d));
    CHECK(d.allowed && d.reset_at == T0 + 2 * WINDOW);
    CHECK_OK(tk_limiter_reset(strict, "k"));
    tk_limiter_free(cached);
    tk_limiter_free(strict);
    tk_store_free(store);
    tk_clock_free(clock);
    tk_strategy_free(fw);
}

/* A multi limiter (rule all) over a tenant (20 per minute) and an IP (1000 per minute). */
static tk_result multi(tk_strategy *tenant, tk_strategy *ip, tk_store *store, tk_clock *clock, const char *prefix,
                       uint32_t mode, const tk_lease_options *lease, tk_multi_limiter **out) {
    tk_dimension dims[2] = {{"tenant", tenant, 1}, {"ip", ip, 1}};
    tk_multi_limiter_config cfg = {0};
    cfg.store = store;
    cfg.clock = clock;
    cfg.prefix = prefix;
    cfg.mode = mode;
    cfg.lease = lease;
    return tk_multi_limiter_new(TK_RULE_ALL, dims, 2, &cfg, out);
}

/* The multi limiter's modes (tk_multi_limiter_config.mode / .lease) on a memory store: bad
 * options are config_invalid; a leased multi limiter admits what a strict one does in one
 * window with a quarter of the store calls; a fleet of 3 stays within 20 + 3·(5 − 1). */
static void test_multi_modes(void) {
    current = "multi_modes";
    tk_strategy *tenant = fixed_window(20, WINDOW), *ip = fixed_window(1000, WINDOW);
    tk_store *store = NULL;
    tk_clock *clock = NULL;
    CHECK_OK(tk_store_memory_new(&store));
    CHECK_OK(tk_clock_new_manual(T0, &clock));
    tk_lease_options o = tk_lease_options_default();
    tk_multi_limiter *m = (tk_multi_limiter *)0x1;
    o.batch = 0;
    CHECK(multi(tenant, ip, store, clock, "bad", TK_MODE_LEASED, &o, &m) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "lease.batch") != NULL);
    o.batch = 5;
    o.low_water = 1;
    CHECK(multi(tenant, ip, store, clock, "bad", TK_MODE_LEASED, &o, &m) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "lowWater") != NULL);
    o.low_water = 0;
    CHECK(multi(tenant, ip, store, clock, "bad", TK_MODE_STRICT, &o, &m) == TK_RESULT_CONFIG_INVALID);
    CHECK(multi(tenant, ip, store, clock, "bad", 7, NULL, &m) == TK_RESULT_CONFIG_INVALID);
    CHECK(m == (tk_multi_limiter *)0x1);

    /* One node: 18 requests in a window, strict vs leased (batch 5), on separate prefixes. */
    tk_multi_limiter *strict = NULL, *leased = NULL;
    CHECK_OK(multi(tenant, ip, store, clock, "s", TK_MODE_STRICT, NULL, &strict));
    CHECK_OK(multi(tenant, ip, store, clock, "l", TK_MODE_LEASED, &o, &leased));
    uint32_t mode = 99;
    CHECK_OK(tk_multi_limiter_mode(strict, &mode));
    CHECK(mode == TK_MODE_STRICT);
    CHECK_OK(tk_multi_limiter_mode(leased, &mode));
    CHECK(mode == TK_MODE_LEASED);
    const char *keys[2] = {"acme", "10.0.0.1"};
    tk_decision d;
    int strict_admitted = 0, leased_admitted = 0;
    for (int i = 0; i < 18; i++) {
        CHECK_OK(tk_multi_limiter_check(strict, keys, 2, 1, &d, NULL, NULL));
        strict_admitted += d.allowed;
        CHECK_OK(tk_multi_limiter_check(leased, keys, 2, 1, &d, NULL, NULL));
        leased_admitted += d.allowed;
    }
    CHECK(strict_admitted == 18 && leased_admitted == 18);
    tk_tier_stats t;
    CHECK_OK(tk_multi_limiter_tier_stats(strict, &t));
    CHECK(t.leases == 0 && t.local_admits == 0);
    CHECK_OK(tk_multi_limiter_tier_stats(leased, &t));
    /* 4 fused leases of 5 (one store call each) where strict made 18 calls. */
    CHECK(t.leases == 4 && t.local_admits == 14);
    /* 2 credits per dimension key held: both given back, so the tenant admits 2 more. */
    uint64_t back = 0;
    CHECK_OK(tk_multi_limiter_release_leases(leased, TK_RELEASE_ALL_KEYS, &back));
    CHECK(back == 4);
    CHECK_OK(tk_multi_limiter_tier_stats(leased, &t));
    CHECK(t.credits_returned == 4);
    uint64_t none = 7;
    CHECK_OK(tk_multi_limiter_release_leases(strict, TK_RELEASE_ALL_KEYS, &none));
    CHECK(none == 0);
    CHECK_OK(tk_multi_limiter_release_leases(leased, TK_RELEASE_ALL_KEYS, NULL));
    tk_multi_limiter_free(strict);
    CHECK_OK(multi(tenant, ip, store, clock, "l", TK_MODE_STRICT, NULL, &strict)); /* the leased one's keys */
    CHECK_OK(tk_multi_limiter_check(strict, keys, 2, 2, &d, NULL, NULL));
    CHECK(d.allowed && d.remaining == 0);
    tk_multi_limiter_free(strict);
    tk_multi_limiter_free(leased);

    /* A fleet of 3 leased nodes flooding one tenant: within 20 + 3·4 per window. */
    tk_multi_limiter *fleet[3] = {NULL, NULL, NULL};
    for (int n = 0; n < 3; n++) CHECK_OK(multi(tenant, ip, store, clock, "f", TK_MODE_LEASED, &o, &fleet[n]));
    for (int w = 0; w < 3; w++) {
        int admitted = 0;
        CHECK_OK(tk_clock_set(clock, T0 + (w + 1) * WINDOW));
        for (int i = 0; i < 30; i++) {
            for (int n = 0; n < 3; n++) {
                if (tk_multi_limiter_check(fleet[n], keys, 2, 1, &d, NULL, NULL) != TK_RESULT_OK) abort();
                admitted += d.allowed;
            }
        }
        CHECK(admitted >= 20 && admitted <= 20 + 3 * 4);
    }
    for (int n = 0; n < 3; n++) tk_multi_limiter_free(fleet[n]);
    tk_store_free(store);
    tk_clock_free(clock);
    tk_strategy_free(tenant);
    tk_strategy_free(ip);
}

int main(void) {
    test_bad_options();
    test_leased_memory();
    test_fleet(NULL, "memory");
    test_cached_deny(NULL);
    test_multi_modes();
    const char *url = getenv("TK_REDIS_URL");
    if (url && *url) {
        test_fleet(url, "redis");
        test_cached_deny(url);
    } else {
        printf("note: TK_REDIS_URL is not set; the Redis lease tests did not run\n");
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
