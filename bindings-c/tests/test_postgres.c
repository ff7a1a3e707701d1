/*
 * The Postgres store's options through the C ABI (tk_postgres_options,
 * tk_store_postgres_connect_with, tk_postgres_migrate), against the disposable Postgres that
 * test.sh starts (TK_POSTGRES_URL; psql reads what the store created). Built only against the
 * installed header and library, run under valgrind. Prints "N passed, M failed" and exits
 * non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <throttlekit.h>

#include "check.h"

static const char *url;

/* The last error's message contains `part`. */
static int last_error_has(const char *part) {
    char msg[512];
    if (tk_last_error_message(msg, sizeof msg, NULL) != TK_RESULT_OK) abort();
    if (strstr(msg, part)) return 1;
    fprintf(stderr, "  last error: %s (wanted \"%s\" in it)\n", msg, part);
    return 0;
}

/* psql's one-line answer to `sql` on the test server, into `out` ("" when it failed). */
static void psql(const char *sql, char *out, size_t len) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "psql '%s' -Atqc \"%s\" 2>/dev/null", url, sql);
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(out, (int)len, p)) out[0] = '\0';
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
}

/* `table`'s relpersistence: "u" for UNLOGGED, "p" for a logged table, "" for no table. */
static void persistence(const char *table, char *out, size_t len) {
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT relpersistence FROM pg_class WHERE relname = '%s'", table);
    psql(sql, out, len);
}

/* A table name of this run (tests share the server with earlier runs of the suite). */
static void fresh_table(const char *what, char *out, size_t len) {
    snprintf(out, len, "tk_c_%s_%ld_%d", what, (long)time(NULL), (int)getpid());
}

static tk_postgres_options quiet(const char *table) {
    tk_postgres_options o;
    memset(&o, 0, sizeof o);
    o.url = url;
    o.table = table;
    o.pool_size = 1;
    o.no_sweep = true;
    return o;
}

/* One check of a 1-per-minute fixed window at `now`: 1 allowed, 0 denied, -1 an error. */
static int check_at(tk_store *store, const char *key, int64_t now, tk_decision *d) {
    tk_strategy *s = NULL;
    if (tk_strategy_fixed_window(1, 60000, &s) != TK_RESULT_OK) abort();
    tk_limiter_config c;
    memset(&c, 0, sizeof c);
    c.store = store;
    tk_limiter *l = NULL;
    int got = -1;
    if (tk_limiter_new(s, &c, &l) == TK_RESULT_OK && tk_limiter_check_at(l, key, 1, now, d) == TK_RESULT_OK)
        got = d->allowed ? 1 : 0;
    tk_limiter_free(l);
    tk_strategy_free(s);
    return got;
}

static void test_every_option_is_accepted_and_decides(void) {
    current = "every_option_is_accepted_and_decides";
    char table[64];
    fresh_table("all", table, sizeof table);
    tk_postgres_options o = quiet(table);
    o.unlogged = true;
    o.synchronous_commit_off = true;
    o.pool_size = 2;
    o.timeout_ms = 5000;
    o.connect_timeout_ms = 5000;
    o.sweep_interval_ms = 60000;
    o.sweep_batch = 10;
    o.sweep_grace_ms = 1000;
    o.no_sweep = false;
    tk_store *store = NULL;
    CHECK_OK(tk_store_postgres_connect_with(&o, &store));
    tk_decision d;
    CHECK(check_at(store, "k", 1000, &d) == 1);
    CHECK(check_at(store, "k", 1001, &d) == 0);
    /* The table was created UNLOGGED (relpersistence 'u'; a logged table is 'p'). */
    char got[64];
    persistence(table, got, sizeof got);
    CHECK(strcmp(got, "u") == 0);
    tk_store_free(store);

    /* The short form still connects (a logged table of its own). */
    fresh_table("short", table, sizeof table);
    store = NULL;
    CHECK_OK(tk_store_postgres_connect(url, table, 0, 1, &store));
    CHECK(check_at(store, "k", 1000, &d) == 1);
    persistence(table, got, sizeof got);
    CHECK(strcmp(got, "p") == 0);
    tk_store_free(store);
}

static void test_no_migrate_fails_until_the_migrate_step(void) {
    current = "no_migrate_fails_until_the_migrate_step";
    char table[64];
    fresh_table("mig", table, sizeof table);
    tk_postgres_options o = quiet(table);
    o.no_migrate = true;
    tk_store *store = NULL;
    CHECK(tk_store_postgres_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(store == NULL);
    CHECK(last_error_has(table));
    /* The deploy step creates it (unlogged, as asked), and the store connects. */
    o.unlogged = true;
    CHECK_OK(tk_postgres_migrate(&o));
    char got[64];
    persistence(table, got, sizeof got);
    CHECK(strcmp(got, "u") == 0);
    CHECK_OK(tk_store_postgres_connect_with(&o, &store));
    tk_decision d;
    CHECK(check_at(store, "k", 1000, &d) == 1);
    tk_store_free(store);
}

/* The code between the markers is what docs/postgres.md shows (go/sqlite_test.go checks it is
 * verbatim): the migrate step, then a store on the table it created. */
static void test_the_docs_example(void) {
    current = "the_docs_example";
    char table[64];
    fresh_table("docs", table, sizeof table);
    // docs/postgres.md begins
    tk_postgres_options o = {.url = url, .table = table, .no_migrate = true, .timeout_ms = 5000, .server_clock = true};
    tk_store *store = NULL;
    if (tk_postgres_migrate(&o) != TK_RESULT_OK || tk_store_postgres_connect_with(&o, &store) != TK_RESULT_OK)
        return; /* tk_last_error_message says why; a bad option is TK_RESULT_CONFIG_INVALID naming it */
    // docs/postgres.md ends
    CHECK(store != NULL);
    tk_decision d;
    CHECK(check_at(store, "k", 1000, &d) == 1);
    CHECK(check_at(store, "k", 1000, &d) == 0);
    tk_store_free(store);
}

static void test_server_clock_is_the_limiters_default(void) {
    current = "server_clock_is_the_limiters_default";
    tk_postgres_options o = quiet(NULL);
    o.server_clock = true;
    tk_store *store = NULL;
    CHECK_OK(tk_store_postgres_connect_with(&o, &store));
    char key[64];
    snprintf(key, sizeof key, "c-server-clock-%ld-%d", (long)time(NULL), (int)getpid());
    /* `now` 1970 is ignored: the window ends a minute after the server's clock, not at 60000. */
    tk_decision d;
    CHECK(check_at(store, key, 1000, &d) == 1);
    CHECK(d.reset_at > (int64_t)time(NULL) * 1000 - 60000);
    tk_store_free(store);
    /* On the caller's clock (the default) it is 60000. */
    o.server_clock = false;
    CHECK_OK(tk_store_postgres_connect_with(&o, &store));
    CHECK(check_at(store, key, 1000, &d) == 1 && d.reset_at == 60000);
    tk_store_free(store);
}

static void test_bad_values_are_config_invalid_naming_the_option(void) {
    current = "bad_values_are_config_invalid_naming_the_option";
    tk_store *store = NULL;
    tk_postgres_options o = quiet("Bad-Name");
    CHECK(tk_store_postgres_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(last_error_has("table"));
    CHECK(tk_postgres_migrate(&o) == TK_RESULT_CONFIG_INVALID);
    o = quiet(NULL);
    o.pool_size = 5000;
    CHECK(tk_store_postgres_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(last_error_has("poolSize"));
    o = quiet(NULL);
    o.url = "postgres://u:p@127.0.0.1:1/db?sslmode=sometimes";
    CHECK(tk_store_postgres_connect_with(&o, &store) == TK_RESULT_CONFIG_INVALID);
    CHECK(last_error_has("postgres.url"));
    o.url = NULL;
    CHECK(tk_store_postgres_connect_with(&o, &store) == TK_RESULT_NULL_PARAMETER);
    CHECK(last_error_has("options.url"));
    CHECK(tk_store_postgres_connect_with(NULL, &store) == TK_RESULT_NULL_PARAMETER);
    CHECK(tk_postgres_migrate(NULL) == TK_RESULT_NULL_PARAMETER);
    CHECK(store == NULL);
}

static void test_connect_timeout_bounds_a_server_that_never_answers(void) {
    current = "connect_timeout_bounds_a_server_that_never_answers";
    /* A listening socket nobody accepts on: the kernel completes the TCP handshake, then the
     * startup message is never answered, so only connect_timeout_ms ends the wait. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 8) == 0 &&
          getsockname(fd, (struct sockaddr *)&a, &n) == 0);
    char silent[128];
    snprintf(silent, sizeof silent, "postgres://u:p@127.0.0.1:%d/db?sslmode=disable", ntohs(a.sin_port));
    tk_postgres_options o = quiet(NULL);
    o.url = silent;
    o.connect_timeout_ms = 200;
    tk_store *store = NULL;
    CHECK(tk_store_postgres_connect_with(&o, &store) == TK_RESULT_STORE_UNAVAILABLE);
    /* The connection's own bound ended it (the default is 3 s). */
    CHECK(last_error_has("timed out after 200ms"));
    CHECK(tk_postgres_migrate(&o) == TK_RESULT_STORE_UNAVAILABLE);
    close(fd);
}

int main(void) {
    url = getenv("TK_POSTGRES_URL");
    if (!url || !*url) {
        fprintf(stderr, "TK_POSTGRES_URL is not set (bindings-c/test.sh starts a Postgres and sets it)\n");
        return 2;
    }
    test_every_option_is_accepted_and_decides();
    test_no_migrate_fails_until_the_migrate_step();
    test_the_docs_example();
    test_server_clock_is_the_limiters_default();
    test_bad_values_are_config_invalid_naming_the_option();
    test_connect_timeout_bounds_a_server_that_never_answers();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
