/* Tiny assertion helpers shared by the runtime tests. A test counts its
 * checks and failures; TEST_END() returns 1 if anything failed or nothing
 * was checked, 0 otherwise. Not thread-safe across threads that CHECK at the
 * same time: threads hand results back to main, which checks them. */
#ifndef MVRT_TESTS_RUNTIME_TEST_UTIL_H
#define MVRT_TESTS_RUNTIME_TEST_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt/mvrt.h"

#define MVRT_TEST_SKIP 77

static int tu_checks;
static int tu_failures;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        tu_checks++;                                                                    \
        if (!(cond)) {                                                                  \
            tu_failures++;                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                               \
    } while (0)

#define CHECK_OK(call)                                                                  \
    do {                                                                                \
        mvrt_status_t tu_st_ = (call);                                                  \
        tu_checks++;                                                                    \
        if (tu_st_ != MVRT_OK) {                                                        \
            tu_failures++;                                                              \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,   \
                    mvrt_status_string(tu_st_), mvrt_last_error());                     \
        }                                                                               \
    } while (0)

/* Checks that `got` equals `expected` and that the thread's last error
 * contains every string of the NULL-terminated list. Returns 1 on success. */
static inline int tu_check_err(const char *file, int line, const char *what, mvrt_status_t got,
                        mvrt_status_t expected, ...)
{
    int ok = 1;
    tu_checks++;
    const char *msg = mvrt_last_error();
    if (got != expected) {
        fprintf(stderr, "%s:%d: %s returned %s, expected %s (message: \"%s\")\n", file, line,
                what, mvrt_status_string(got), mvrt_status_string(expected), msg);
        ok = 0;
    }
    va_list ap;
    va_start(ap, expected);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *)) {
        if (!strstr(msg, s)) {
            fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\"\n", file, line, what, msg, s);
            ok = 0;
        }
    }
    va_end(ap);
    if (!ok)
        tu_failures++;
    return ok;
}

/* CHECK_ERR(call, MVRT_ERR_..., "substring", ...) */
#define CHECK_ERR(call, expected, ...) \
    tu_check_err(__FILE__, __LINE__, #call, (call), (expected), __VA_ARGS__, (const char *)NULL)

#define TEST_END()                                                                      \
    do {                                                                                \
        if (tu_checks == 0) {                                                           \
            fprintf(stderr, "no checks ran\n");                                         \
            return 1;                                                                   \
        }                                                                               \
        fprintf(stderr, "%d checks, %d failed\n", tu_checks, tu_failures);              \
        return tu_failures ? 1 : 0;                                                     \
    } while (0)

/* Opens a backend or ends the test with SKIP when it is unavailable. */
static inline mvrt_backend_t *tu_open_or_skip(const char *spec)
{
    mvrt_backend_t *be = NULL;
    mvrt_status_t st = mvrt_backend_open(spec, &be);
    if (st == MVRT_ERR_UNAVAILABLE) {
        fprintf(stderr, "SKIP: backend %s unavailable: %s\n", spec, mvrt_last_error());
        exit(MVRT_TEST_SKIP);
    }
    if (st != MVRT_OK) {
        fprintf(stderr, "FAIL: mvrt_backend_open(%s): %s: %s\n", spec, mvrt_status_string(st),
                mvrt_last_error());
        exit(1);
    }
    return be;
}

#endif
