/*
 * The C tests' one way to count checks: CHECK(cond) counts a pass or prints the failing
 * condition under the test named by `current`; each test's main prints "N passed, M failed"
 * from `passed` and `failed`. Each test program is one translation unit that includes this once.
 */
#ifndef TK_TESTS_CHECK_H
#define TK_TESTS_CHECK_H

#include <stdio.h>

#include <throttlekit.h>

static int passed, failed;
static const char *current;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (cond) {                                                                    \
            passed++;                                                                  \
        } else {                                                                       \
            failed++;                                                                  \
            fprintf(stderr, "FAIL %s (%s:%d): %s\n", current, __FILE__, __LINE__, #cond); \
        }                                                                              \
    } while (0)

#define CHECK_OK(call) CHECK((call) == TK_RESULT_OK)

#endif
