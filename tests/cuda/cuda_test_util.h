/* Helpers shared by the CUDA backend's own tests and benchmark: load the
 * plugin module directly (these tests exercise the plugin ABI, below the
 * runtime), a host API that keeps the last message, fp16/bf16 conversions
 * and a small deterministic RNG. Header-only; test code, may print/exit. */
#ifndef MVRT_TESTS_CUDA_UTIL_H
#define MVRT_TESTS_CUDA_UTIL_H

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt_plugin.h"

#define SKIP_CODE 77

static char tu_last_error[4096];

static inline mvrt_status_t tu_set_error(mvrt_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tu_last_error, sizeof tu_last_error, fmt, ap);
    va_end(ap);
    return st;
}

static const mvrt_host_api_t tu_host = {MVRT_PLUGIN_ABI_VERSION, tu_set_error};

/* Loads the plugin, probes it; exits 77 (skip) when no GPU/driver. */
static inline const mvrt_plugin_vtable_t *tu_open_plugin(const char *path, void **out_dev)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: cannot load %s: %s\n", path, dlerror());
        exit(1);
    }
    mvrt_plugin_entry_fn entry = (mvrt_plugin_entry_fn)dlsym(h, MVRT_PLUGIN_ENTRY_SYMBOL);
    if (!entry) {
        fprintf(stderr, "FAIL: %s has no %s\n", path, MVRT_PLUGIN_ENTRY_SYMBOL);
        exit(1);
    }
    const mvrt_plugin_vtable_t *vt = entry(&tu_host, MVRT_PLUGIN_ABI_VERSION);
    if (!vt) {
        fprintf(stderr, "FAIL: plugin entry returned NULL\n");
        exit(1);
    }
    int count = 0;
    mvrt_status_t st = vt->probe(&count);
    if (st != MVRT_OK) {
        if (st != MVRT_ERR_UNAVAILABLE || tu_last_error[0] == 0) {
            fprintf(stderr, "FAIL: probe returned %d without the UNAVAILABLE reason: '%s'\n", (int)st,
                    tu_last_error);
            exit(1);
        }
        printf("SKIP: cuda unavailable: %s\n", tu_last_error);
        exit(SKIP_CODE);
    }
    if (vt->device_open(0, out_dev) != MVRT_OK) {
        fprintf(stderr, "FAIL: device_open(0): %s\n", tu_last_error);
        exit(1);
    }
    return vt;
}

#define TU_CHECK(call)                                                                   \
    do {                                                                                 \
        mvrt_status_t tu_st_ = (call);                                                   \
        if (tu_st_ != MVRT_OK) {                                                         \
            fprintf(stderr, "FAIL %s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call,    \
                    (int)tu_st_, tu_last_error);                                         \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* ---- fp16 / bf16 (round to nearest even) ---- */
static inline uint16_t tu_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static inline float tu_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static inline uint16_t tu_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow -> inf */
    if (ax < 0x38800000u) {                                     /* subnormal half */
        float a;
        memcpy(&a, &ax, 4);
        /* value / 2^-24, rounded to nearest even */
        float q = a * 16777216.0f;
        float r = nearbyintf(q);
        return (uint16_t)(sign | (uint32_t)r);
    }
    uint32_t e = ((ax >> 23) - 112) << 10;
    uint32_t m = (ax >> 13) & 0x3ffu;
    uint32_t h = e | m;
    uint32_t rest = ax & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}
static inline float tu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float f;
    if (e == 0) {
        f = ldexpf((float)m, -24);
        uint32_t x;
        memcpy(&x, &f, 4);
        x |= sign;
        memcpy(&f, &x, 4);
        return f;
    }
    uint32_t x;
    if (e == 31) x = sign | 0x7f800000u | (m << 13);
    else x = sign | ((e + 112) << 23) | (m << 13);
    memcpy(&f, &x, 4);
    return f;
}

static inline size_t tu_dtype_size(int dt) { return dt == MVRT_SCAN_F32 ? 4 : 2; }
static inline const char *tu_dtype_name(int dt) { return dt == MVRT_SCAN_F32 ? "f32" : dt == MVRT_SCAN_F16 ? "f16" : "bf16"; }

/* Stores v at element i of a buffer of dtype dt; returns the value as stored. */
static inline double tu_store(void *buf, int dt, int64_t i, double v)
{
    if (dt == MVRT_SCAN_F32) { ((float *)buf)[i] = (float)v; return (double)(float)v; }
    if (dt == MVRT_SCAN_F16) { uint16_t h = tu_f32_to_f16((float)v); ((uint16_t *)buf)[i] = h; return tu_f16_to_f32(h); }
    uint16_t h = tu_f32_to_bf16((float)v);
    ((uint16_t *)buf)[i] = h;
    return tu_bf16_to_f32(h);
}
static inline double tu_load(const void *buf, int dt, int64_t i)
{
    if (dt == MVRT_SCAN_F32) return ((const float *)buf)[i];
    if (dt == MVRT_SCAN_F16) return tu_f16_to_f32(((const uint16_t *)buf)[i]);
    return tu_bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* ---- RNG (splitmix64) ---- */
static uint64_t tu_rng_state = 0x9e3779b97f4a7c15ull;
static inline uint64_t tu_next(void)
{
    uint64_t z = (tu_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double tu_uniform(double lo, double hi) { return lo + (hi - lo) * ((double)(tu_next() >> 11) * 0x1.0p-53); }
static inline double tu_normal(void)
{
    double a = tu_uniform(1e-12, 1.0), b = tu_uniform(0.0, 1.0);
    return sqrt(-2.0 * log(a)) * cos(6.283185307179586 * b);
}

#endif
