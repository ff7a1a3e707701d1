/*
 * The adaptive concurrency limiter through the C ABI (tk_adaptive_*, docs/adaptive.md): bad
 * options name their field, a full limit is a rejection with the limit and in-flight count,
 * releasing twice is harmless, a freed unreleased permit is a leak, acquire waits and times out,
 * a waiter on another thread gets a released slot, a cancellable wait fired from another thread
 * leaves the queue at once, and partitions are enforced. Run under
 * valgrind by test.sh. Prints "N passed, M failed" and exits non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <throttlekit.h>

#include "check.h"

static char last[512];
static const char *last_error_text(void) {
    if (tk_last_error_message(last, sizeof last, NULL) != TK_RESULT_OK) abort();
    return last;
}

static tk_adaptive *adaptive(const char *json) {
    tk_adaptive *l = NULL;
    if (tk_adaptive_new(json, &l) != TK_RESULT_OK) {
        fprintf(stderr, "tk_adaptive_new(%s): %s\n", json, last_error_text());
        abort();
    }
    return l;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void test_bad_options(void) {
    current = "bad options";
    static const struct {
        const char *json, *field;
    } cases[] = {
        {"{\"initialLimit\":0}", "initialLimit"},
        {"{\"algorithm\":\"fixed\",\"initialLimit\":-3}", "initialLimit"},
        {"{\"partitions\":[{\"name\":\"live\",\"percent\":90},{\"name\":\"batch\",\"percent\":20}]}",
         "partitions"},
        {"{\"algorithm\":\"vegas\",\"backoff\":0.5}", "backoff"},
        {"{\"limit\":3}", "limit"},
        {"not json", "adaptive"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tk_adaptive *l = (tk_adaptive *)0x1;
        CHECK(tk_adaptive_new(cases[i].json, &l) == TK_RESULT_CONFIG_INVALID);
        CHECK(l == (tk_adaptive *)0x1); /* untouched on failure */
        CHECK(strstr(last_error_text(), cases[i].field) != NULL);
    }
    tk_adaptive *l = NULL;
    CHECK(tk_adaptive_new(NULL, &l) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_adaptive_new("{}", NULL) == TK_RESULT_NULL_PARAMETER);
}

static void test_try_acquire_and_release(void) {
    current = "try_acquire and release";
    tk_adaptive *l = adaptive("{\"algorithm\":\"fixed\",\"initialLimit\":2}");
    tk_adaptive_permit *a = NULL, *b = NULL, *c = (tk_adaptive_permit *)0x1;
    tk_adaptive_rejection rej = {0};
    CHECK_OK(tk_adaptive_try_acquire(l, NULL, &a, NULL));
    CHECK_OK(tk_adaptive_try_acquire(l, NULL, &b, &rej));
    CHECK(a && b);
    CHECK_OK(tk_adaptive_try_acquire(l, NULL, &c, &rej));
    CHECK(c == NULL);
    CHECK(rej.limit == 2 && rej.inflight == 2);
    CHECK(rej.retry_after_ms == 1000 && rej.retry_after_secs == 1); /* before any window */

    bool released = false;
    CHECK_OK(tk_adaptive_permit_release(a, TK_OUTCOME_SUCCESS, &released));
    CHECK(released);
    CHECK_OK(tk_adaptive_permit_release(a, TK_OUTCOME_DROPPED, &released));
    CHECK(!released); /* twice is harmless */
    uint32_t n = 99;
    CHECK_OK(tk_adaptive_inflight(l, &n));
    CHECK(n == 1);

    /* A negative round trip and an unknown outcome are config_invalid; b stays held. */
    CHECK(tk_adaptive_permit_release_rtt(b, TK_OUTCOME_SUCCESS, -1, &released) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "rtt") != NULL);
    CHECK(tk_adaptive_permit_release(b, 7, &released) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "outcome") != NULL);
    CHECK_OK(tk_adaptive_inflight(l, &n));
    CHECK(n == 1);
    uint32_t o = 99;
    CHECK(tk_outcome_from_name("timeout", &o) == TK_RESULT_CONFIG_INVALID && o == 99);
    CHECK_OK(tk_outcome_from_name("dropped", &o));
    CHECK(o == TK_OUTCOME_DROPPED);

    /* A permit freed without a release is an ignore and a leak. */
    tk_adaptive_permit_free(b);
    tk_adaptive_permit_free(a);
    tk_adaptive_snapshot m;
    CHECK_OK(tk_adaptive_metrics(l, &m));
    CHECK(m.inflight == 0 && m.limit == 2);
    CHECK(m.acquired == 2 && m.rejected == 1 && m.succeeded == 1 && m.ignored == 1 && m.leaked == 1);
    CHECK(!m.slow_start); /* fixed */

    /* Unknown partition; the virtual clock is only on tk_adaptive_new_virtual. */
    CHECK(tk_adaptive_try_acquire(l, "batch", &a, NULL) == TK_RESULT_CONFIG_INVALID);
    CHECK(strstr(last_error_text(), "partition") != NULL);
    CHECK(tk_adaptive_advance_virtual(l, 1000) == TK_RESULT_NOT_IMPLEMENTED);
    tk_adaptive_free(l);
    tk_adaptive_permit_free(NULL);
    tk_adaptive_free(NULL);
}

static void test_virtual_clock_measures_rtt(void) {
    current = "virtual clock";
    tk_adaptive *l = NULL;
    CHECK_OK(tk_adaptive_new_virtual("{\"algorithm\":\"fixed\",\"initialLimit\":1,\"windowMinSamples\":1}", &l));
    tk_adaptive_permit *p = NULL;
    CHECK_OK(tk_adaptive_try_acquire(l, NULL, &p, NULL));
    CHECK_OK(tk_adaptive_advance_virtual(l, 7000000)); /* 7 ms */
    CHECK_OK(tk_adaptive_permit_release(p, TK_OUTCOME_SUCCESS, NULL));
    tk_adaptive_snapshot m;
    CHECK_OK(tk_adaptive_metrics(l, &m));
    CHECK(m.windows == 1 && m.latency_us == 7000); /* measured on the virtual clock */
    tk_adaptive_permit_free(p);
    tk_adaptive_free(l);
}

struct holder {
    tk_adaptive_permit *permit;
    int delay_ms;
};

static void *release_later(void *arg) {
    struct holder *h = arg;
    struct timespec t = {0, h->delay_ms * 1000000L};
    nanosleep(&t, NULL);
    tk_adaptive_permit_release(h->permit, TK_OUTCOME_IGNORE, NULL);
    return NULL;
}

static void test_acquire_waits(void) {
    current = "acquire waits";
    tk_adaptive *l = adaptive("{\"algorithm\":\"fixed\",\"initialLimit\":1}");
    tk_adaptive_permit *held = NULL, *p = NULL;
    tk_adaptive_rejection rej = {0};
    CHECK_OK(tk_adaptive_acquire(l, NULL, 0, &held, NULL));
    CHECK(held != NULL);
    /* Full: a 50 ms wait times out as a rejection, after at least 50 ms. */
    double t0 = now_ms();
    CHECK_OK(tk_adaptive_acquire(l, NULL, 50, &p, &rej));
    CHECK(p == NULL && rej.limit == 1 && rej.inflight == 1);
    CHECK(now_ms() - t0 >= 49.0);
    /* Released from another thread after 30 ms: the waiter gets the slot. */
    struct holder h = {held, 30};
    pthread_t th;
    pthread_create(&th, NULL, release_later, &h);
    CHECK_OK(tk_adaptive_acquire(l, NULL, 10000, &p, &rej));
    pthread_join(th, NULL);
    CHECK(p != NULL);
    uint32_t n = 0;
    CHECK_OK(tk_adaptive_inflight(l, &n));
    CHECK(n == 1);
    tk_adaptive_permit_free(held);
    CHECK_OK(tk_adaptive_permit_release(p, TK_OUTCOME_SUCCESS, NULL));
    tk_adaptive_permit_free(p);
    tk_adaptive_free(l);
}

struct waiter {
    tk_adaptive *limiter;
    tk_cancel *cancel;
    tk_adaptive_permit *permit;
    tk_adaptive_rejection rejection;
    tk_result result;
};

static void *wait_cancellable(void *arg) {
    struct waiter *w = arg;
    w->result = tk_adaptive_acquire_cancellable(w->limiter, NULL, 600000, w->cancel, &w->permit, &w->rejection);
    return NULL;
}

static void test_cancellable_wait(void) {
    current = "cancellable wait";
    tk_adaptive *l = adaptive("{\"algorithm\":\"fixed\",\"initialLimit\":1}");
    tk_adaptive_permit *held = NULL, *p = NULL;
    CHECK_OK(tk_adaptive_try_acquire(l, NULL, &held, NULL));
    struct waiter w = {l, NULL, NULL, {0}, TK_RESULT_OK};
    CHECK_OK(tk_cancel_new(&w.cancel));
    pthread_t th;
    pthread_create(&th, NULL, wait_cancellable, &w);
    /* Fired once the waiter is queued: its 10-minute wait returns now, with no permit. */
    tk_adaptive_snapshot m = {0};
    do {
        CHECK_OK(tk_adaptive_metrics(l, &m));
    } while (m.waiting == 0);
    CHECK_OK(tk_cancel_fire(w.cancel));
    pthread_join(th, NULL);
    CHECK(w.result == TK_RESULT_OK && w.permit == NULL && w.rejection.limit == 1);
    CHECK_OK(tk_adaptive_metrics(l, &m));
    CHECK(m.waiting == 0 && m.rejected == 0);
    /* The freed slot goes to no one; a fired cancel takes no permit even with room. */
    CHECK_OK(tk_adaptive_permit_release(held, TK_OUTCOME_SUCCESS, NULL));
    tk_adaptive_permit_free(held);
    CHECK_OK(tk_adaptive_acquire_cancellable(l, NULL, 1000, w.cancel, &p, NULL));
    CHECK(p == NULL);
    uint32_t n = 1;
    CHECK_OK(tk_adaptive_inflight(l, &n));
    CHECK(n == 0);
    CHECK(tk_adaptive_acquire_cancellable(l, NULL, 1000, NULL, &p, NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_cancel_fire(NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_cancel_new(NULL) == TK_RESULT_NULL_PARAMETER);
    tk_cancel_free(w.cancel);
    tk_cancel_free(NULL);
    tk_adaptive_free(l);
}

static void test_partitions(void) {
    current = "partitions";
    tk_adaptive *l = adaptive("{\"algorithm\":\"fixed\",\"initialLimit\":10,"
                              "\"partitions\":[{\"name\":\"live\",\"percent\":80},{\"name\":\"batch\",\"percent\":20}]}");
    tk_adaptive_permit *p[10] = {0}, *extra = NULL;
    tk_adaptive_rejection rej = {0};
    /* Live is active (one in flight): batch gets its 2, and a third is refused with 7 slots
     * free, because those are live's unused guarantee. */
    CHECK_OK(tk_adaptive_try_acquire(l, "live", &p[0], NULL));
    CHECK_OK(tk_adaptive_try_acquire(l, "batch", &p[1], NULL));
    CHECK_OK(tk_adaptive_try_acquire(l, "batch", &p[2], NULL));
    CHECK_OK(tk_adaptive_try_acquire(l, "batch", &extra, &rej));
    CHECK(extra == NULL && rej.limit == 10 && rej.inflight == 3);
    for (int i = 3; i < 10; i++) CHECK_OK(tk_adaptive_try_acquire(l, "live", &p[i], NULL));
    for (int i = 0; i < 10; i++) CHECK(p[i] != NULL);
    CHECK_OK(tk_adaptive_try_acquire(l, "live", &extra, &rej));
    CHECK(extra == NULL && rej.inflight == 10);
    for (int i = 0; i < 10; i++) tk_adaptive_permit_free(p[i]);
    tk_adaptive_free(l);
}

/* docs/adaptive.md's C example: shed when full, report how the request ended. */
static int service_ok = 1;
static int call_the_service(void) { return service_ok; }

static int handle_request(tk_adaptive *limiter) {
    tk_adaptive_permit *permit = NULL;
    tk_adaptive_rejection rej;
    if (tk_adaptive_try_acquire(limiter, NULL, &permit, &rej) != TK_RESULT_OK) return 500;
    if (!permit) return 503; /* with Retry-After: rej.retry_after_secs */
    int ok = call_the_service();
    tk_adaptive_permit_release(permit, ok ? TK_OUTCOME_SUCCESS : TK_OUTCOME_DROPPED, NULL);
    tk_adaptive_permit_free(permit);
    return ok ? 200 : 504;
}

static void test_doc_example(void) {
    current = "docs example";
    tk_adaptive *l = adaptive("{\"algorithm\":\"fixed\",\"initialLimit\":1}");
    CHECK(handle_request(l) == 200);
    service_ok = 0;
    CHECK(handle_request(l) == 504);
    tk_adaptive_permit *held = NULL;
    CHECK_OK(tk_adaptive_try_acquire(l, NULL, &held, NULL));
    CHECK(handle_request(l) == 503);
    tk_adaptive_permit_free(held);
    tk_adaptive_snapshot m;
    CHECK_OK(tk_adaptive_metrics(l, &m));
    CHECK(m.succeeded == 1 && m.dropped == 1 && m.rejected == 1 && m.leaked == 1 && m.inflight == 0);
    tk_adaptive_free(l);
}

int main(void) {
    test_doc_example();
    test_bad_options();
    test_try_acquire_and_release();
    test_virtual_clock_measures_rtt();
    test_acquire_waits();
    test_cancellable_wait();
    test_partitions();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
