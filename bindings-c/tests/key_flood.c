/*
 * Floods a default in-memory store with distinct keys and prints, from /proc/self/status,
 * "baseline settled end evictions": resident KiB before the store, after 2x its default bound
 * (settled), after the flood, and the store's eviction count. test.sh runs it natively (not
 * under valgrind: millions of calls) and checks that memory stayed flat at the bound.
 *
 *   key_flood KEYS
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
    }
    if (f) fclose(f);
    return kib;
}

int main(int argc, char **argv) {
    uint64_t keys = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    uint64_t settled_at = 2 * (uint64_t)TK_MEMORY_DEFAULT_MAX_KEYS;
    long baseline = rss_kib(), settled = 0;
    tk_store *store = NULL;
    tk_strategy *s = NULL;
    tk_limiter *l = NULL;
    if (tk_store_memory_new(&store) || tk_strategy_gcra(10, 60000, 5, &s)) return 2;
    tk_limiter_config cfg = {0};
    cfg.store = store;
    if (tk_limiter_new(s, &cfg, &l)) return 2;
    char key[32];
    tk_decision d;
    for (uint64_t i = 0; i < keys; i++) {
        snprintf(key, sizeof key, "user:%" PRIu64, i);
        if (tk_limiter_check_at(l, key, 1, 1000000, &d) != TK_RESULT_OK || !d.allowed) return 3;
        if (i + 1 == settled_at) settled = rss_kib();
    }
    uint64_t evictions = 0;
    if (tk_store_memory_evictions(store, &evictions)) return 2;
    printf("%ld %ld %ld %" PRIu64 "\n", baseline, settled, rss_kib(), evictions);
    tk_limiter_free(l);
    tk_strategy_free(s);
    tk_store_free(store);
    return 0;
}
