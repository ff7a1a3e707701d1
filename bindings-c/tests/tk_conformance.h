/* What tk_conformance.c shares with tk_conformance_adaptive.c: the strict JSON readers, the
 * totals, and the adaptive file's entry point. */
#ifndef TK_CONFORMANCE_H
#define TK_CONFORMANCE_H

#include <cjson/cJSON.h>

extern long tkc_passed, tkc_failed;

/* Prints "tk-conformance: <message>" and exits 2 (a malformed file, a bad flag). */
void tkc_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Fails unless every member of `obj` is one of the NULL-terminated `allowed` names. */
void tkc_strict(const cJSON *obj, const char *what, const char *const *allowed);
const char *tkc_opt_string(const cJSON *obj, const char *name, const char *fallback);
const cJSON *tkc_opt_number(const cJSON *obj, const char *name);

/* Replays an adaptive vectors file ("format": "throttlekit-adaptive/1"). */
void tkc_run_adaptive_file(const cJSON *root);

#endif
