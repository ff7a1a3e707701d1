/*
 * tk-conformance's half for adaptive concurrency vectors ("format": "throttlekit-adaptive/1",
 * conformance-vectors/FORMAT.md): each case builds a tk_adaptive on a virtual clock from its
 * config, replays acquire / release / drop / advance through the public C API, and compares the
 * limit and in-flight count (and granted / released, or the error code) after every event.
 * Outcome names go through tk_outcome_from_name, so an unknown one is refused by the library.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

#include "tk_conformance.h"

#define MAX_PERMITS 4096

/* The permits a case holds, by name. */
struct permits {
    const char *names[MAX_PERMITS];
    tk_adaptive_permit *handles[MAX_PERMITS];
    int n;
};

static tk_adaptive_permit **slot(struct permits *p, const char *name, int create) {
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->names[i], name) == 0) return &p->handles[i];
    if (!create) return NULL;
    if (p->n == MAX_PERMITS) tkc_die("more than %d permits in one case", MAX_PERMITS);
    p->names[p->n] = name;
    p->handles[p->n] = NULL;
    return &p->handles[p->n++];
}

/* What an event produced, printed as the Rust runner prints an Expect. */
struct state {
    int error; /* then `code` */
    const char *code;
    int granted, released; /* -1: absent */
    unsigned limit, inflight;
};

static int expect_int(const cJSON *expect, const char *name, int absent) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(expect, name);
    if (!v) return absent;
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    if (!cJSON_IsNumber(v)) tkc_die("expect.%s must be a number or a boolean", name);
    return v->valueint;
}

static void describe(char *buf, size_t len, const struct state *s) {
    if (s->error) {
        snprintf(buf, len, "error %s", s->code);
        return;
    }
    snprintf(buf, len, "granted=%d released=%d limit=%u inflight=%u", s->granted, s->released, s->limit,
             s->inflight);
}

static struct state read_state(const tk_adaptive *l, tk_result r, int granted, int released) {
    struct state s = {0, NULL, granted, released, 0, 0};
    if (r != TK_RESULT_OK) {
        s.error = 1;
        s.code = tk_result_code(r);
        return s;
    }
    if (tk_adaptive_limit(l, &s.limit) != TK_RESULT_OK || tk_adaptive_inflight(l, &s.inflight) != TK_RESULT_OK)
        tkc_die("tk_adaptive_limit / tk_adaptive_inflight failed");
    return s;
}

static struct state run_event(const cJSON *e, tk_adaptive *l, struct permits *held) {
    static const char *const event_fields[] = {"op",    "permit", "partition", "outcome", "rttUs",
                                               "us",    "expect", "expectError", NULL};
    tkc_strict(e, "an adaptive event", event_fields);
    const char *op = tkc_opt_string(e, "op", "");
    const char *name = tkc_opt_string(e, "permit", "");
    if (strcmp(op, "advance") == 0) {
        const cJSON *us = tkc_opt_number(e, "us");
        tk_result r = tk_adaptive_advance_virtual(l, us ? (uint64_t)us->valuedouble * 1000u : 0);
        return read_state(l, r, -1, -1);
    }
    if (strcmp(op, "acquire") == 0) {
        tk_adaptive_permit *permit = NULL;
        tk_result r = tk_adaptive_try_acquire(l, tkc_opt_string(e, "partition", NULL), &permit, NULL);
        if (permit) {
            tk_adaptive_permit **s = slot(held, name, 1);
            tk_adaptive_permit_free(*s); /* a name reused: the old permit leaks, as in Rust */
            *s = permit;
        }
        return read_state(l, r, r == TK_RESULT_OK ? permit != NULL : -1, -1);
    }
    if (strcmp(op, "drop") == 0) {
        tk_adaptive_permit **s = slot(held, name, 0);
        if (s) {
            tk_adaptive_permit_free(*s);
            *s = NULL;
        }
        return read_state(l, TK_RESULT_OK, -1, -1);
    }
    if (strcmp(op, "release") == 0) {
        tk_adaptive_permit **s = slot(held, name, 0);
        if (!s || !*s) return read_state(l, TK_RESULT_CONFIG_INVALID, -1, -1);
        uint32_t outcome = 0;
        tk_result r = tk_outcome_from_name(tkc_opt_string(e, "outcome", ""), &outcome);
        bool released = false;
        const cJSON *rtt = tkc_opt_number(e, "rttUs");
        if (r == TK_RESULT_OK && rtt)
            r = tk_adaptive_permit_release_rtt(*s, outcome, (int64_t)rtt->valuedouble * 1000, &released);
        else if (r == TK_RESULT_OK)
            r = tk_adaptive_permit_release(*s, outcome, &released);
        return read_state(l, r, -1, r == TK_RESULT_OK ? released : -1);
    }
    tkc_die("unknown adaptive op \"%s\"", op);
    return read_state(l, TK_RESULT_OK, -1, -1);
}

static void run_case(const cJSON *c) {
    static const char *const case_fields[] = {"id", "comment", "config", "expectError", "events", NULL};
    tkc_strict(c, "an adaptive case", case_fields);
    const char *id = tkc_opt_string(c, "id", "?");
    const char *want_error = tkc_opt_string(c, "expectError", NULL);
    char *config = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "config"));
    tk_adaptive *l = NULL;
    tk_result r = tk_adaptive_new_virtual(config, &l);
    cJSON_free(config);
    if (r != TK_RESULT_OK || want_error) {
        const char *got = r == TK_RESULT_OK ? "a limiter" : tk_result_code(r);
        if (want_error && strcmp(got, want_error) == 0) {
            tkc_passed++;
        } else {
            tkc_failed++;
            printf("FAIL adaptive %s: expected %s, got %s\n", id, want_error ? want_error : "a limiter", got);
        }
        tk_adaptive_free(l);
        return;
    }
    struct permits *held = calloc(1, sizeof *held);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(c, "events");
    int i = 0;
    for (const cJSON *e = events ? events->child : NULL; e; e = e->next, i++) {
        struct state got = run_event(e, l, held);
        const cJSON *expect = cJSON_GetObjectItemCaseSensitive(e, "expect");
        struct state want = {0, NULL, -1, -1, 0, 0};
        want.code = tkc_opt_string(e, "expectError", NULL);
        want.error = want.code != NULL;
        if (expect) {
            static const char *const expect_fields[] = {"granted", "released", "limit", "inflight", NULL};
            tkc_strict(expect, "an adaptive expect", expect_fields);
            want.granted = expect_int(expect, "granted", -1);
            want.released = expect_int(expect, "released", -1);
            want.limit = (unsigned)expect_int(expect, "limit", 0);
            want.inflight = (unsigned)expect_int(expect, "inflight", 0);
        }
        int ok = want.error ? got.error && strcmp(want.code, got.code) == 0
                            : !got.error && want.granted == got.granted && want.released == got.released &&
                                  want.limit == got.limit && want.inflight == got.inflight;
        if (ok) {
            tkc_passed++;
        } else {
            char w[128], g[128];
            describe(w, sizeof w, &want);
            describe(g, sizeof g, &got);
            tkc_failed++;
            printf("FAIL adaptive %s event %d (%s): expected %s, got %s\n", id, i,
                   tkc_opt_string(e, "op", "?"), w, g);
        }
    }
    for (int k = 0; k < held->n; k++) tk_adaptive_permit_free(held->handles[k]);
    free(held);
    tk_adaptive_free(l);
}

void tkc_run_adaptive_file(const cJSON *root) {
    static const char *const top_fields[] = {"format", "comment", "cases", NULL};
    tkc_strict(root, "the adaptive file", top_fields);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    if (!cJSON_IsArray(cases)) tkc_die("the adaptive file has no \"cases\" array");
    for (const cJSON *c = cases->child; c; c = c->next) run_case(c);
}
