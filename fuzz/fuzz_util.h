/* Shared by the fuzz targets: a contract check that crashes (so that
 * libFuzzer and the replay driver report it with the input), and a reader
 * that turns the fuzz input into small integers, returning 0 once the input
 * is used up so that every prefix of an input is itself a valid input. */
#ifndef MVRT_FUZZ_UTIL_H
#define MVRT_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mvrt/mvrt.h"

/* The library broke a documented promise: report and crash. */
#define FUZZ_CHECK(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: contract violated: %s\n  last error: %s\n", __FILE__,    \
                    __LINE__, #cond, mvrt_last_error());                                     \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

/* MVRT_FUZZ_VERBOSE=1 in the environment: targets say what each input did
 * (for checking that the seeds reach what they are meant to). */
static inline int fuzz_verbose(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("MVRT_FUZZ_VERBOSE");
        v = e && e[0] == '1';
    }
    return v;
}

typedef struct fuzz_reader {
    const uint8_t *p;
    size_t n;
} fuzz_reader_t;

static inline unsigned fuzz_u8(fuzz_reader_t *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static inline unsigned fuzz_u16(fuzz_reader_t *r)
{
    unsigned lo = fuzz_u8(r);
    return lo | fuzz_u8(r) << 8;
}

static inline uint64_t fuzz_u64(fuzz_reader_t *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)fuzz_u8(r) << (8 * i);
    return v;
}

/* Deterministic filler for tensor data (no libc rand: reproducible). */
static inline uint64_t fuzz_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif
