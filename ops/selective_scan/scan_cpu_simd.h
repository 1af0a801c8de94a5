/* SIMD helpers of the CPU scan kernels, written once with GCC (>= 12) or
 * Clang vector extensions and instantiated per instruction set. The including file
 * defines MVRT_SCAN_LANES (16, 8 or 4) and is compiled with the matching
 * -m flags; a few steps use intrinsics when the ISA has a better
 * instruction (vscalefps, vcvtph2ps), everything else is portable.
 *
 * One vector = MVRT_SCAN_LANES consecutive channels of one batch row. */
#ifndef MVRT_OPS_SCAN_CPU_SIMD_H
#define MVRT_OPS_SCAN_CPU_SIMD_H

#include <stdint.h>
#include <string.h>

#include "ops/common/cpu_half.h"
#include "scan_params.h"

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

#ifndef MVRT_SCAN_LANES
#error "define MVRT_SCAN_LANES before including scan_cpu_simd.h"
#endif

#define W MVRT_SCAN_LANES
#define MVRT_SI static inline __attribute__((always_inline))

typedef float vf __attribute__((vector_size(W * 4)));
typedef int32_t vi __attribute__((vector_size(W * 4)));
typedef uint32_t vu __attribute__((vector_size(W * 4)));
typedef uint16_t vh __attribute__((vector_size(W * 2)));
/* Unaligned variants for loads/stores from user memory. */
typedef float vf_u __attribute__((vector_size(W * 4), aligned(4)));
typedef uint16_t vh_u __attribute__((vector_size(W * 2), aligned(2)));

MVRT_SI vf vbc(float x) { return (vf){0} + x; }
MVRT_SI vf vzero(void) { return (vf){0}; }
MVRT_SI vf vsel(vi m, vf a, vf b) { return (vf)(((vi)a & m) | ((vi)b & ~m)); }
MVRT_SI vf vloadu(const float *p) { return *(const vf_u *)p; }
MVRT_SI void vstoreu(float *p, vf v) { *(vf_u *)p = v; }

/* ---- exp ----------------------------------------------------------------
 * Cody-Waite range reduction x = k ln2 + r, |r| <= ln2/2, then a degree-6
 * polynomial (near-minimax, relative error 1.7e-8 before rounding; ~1 ulp
 * overall), then scaling by 2^k.
 * NaN -> NaN, -inf or x < -104 -> 0, +inf -> +inf.
 * AVX-512: vscalefps gives correctly scaled subnormals and overflow.
 * Other ISAs: results below ~1.6e-38 (x < -87) flush to 0 and
 * 88 < x <= 88.72 returns exp(88) (inf above); no subnormal results. */
#define MVRT_EXP_POLY(r, p)                                           \
    do {                                                              \
        vf q_ = vbc(1.3836845755577087e-3f);                          \
        q_ = q_ * (r) + 8.374815806746483e-3f;                        \
        q_ = q_ * (r) + 4.166822507977486e-2f;                        \
        q_ = q_ * (r) + 1.6666419804096222e-1f;                       \
        q_ = q_ * (r) + 4.9999991059303284e-1f;                       \
        q_ = q_ * (r) + 1.0f;                                         \
        (p) = q_ * (r) + 1.0f;                                        \
    } while (0)

MVRT_SI vf vexp(vf x)
{
#if defined(__AVX512F__) && W == 16
    x = (vf)_mm512_max_ps((__m512)vbc(-104.0f), (__m512)x); /* NaN passes (2nd operand) */
    x = (vf)_mm512_min_ps((__m512)vbc(89.0f), (__m512)x);
    vf kf = (vf)_mm512_roundscale_ps((__m512)(x * 1.44269504088896341f),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf r = x - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    vf p;
    MVRT_EXP_POLY(r, p);
    return (vf)_mm512_scalef_ps((__m512)p, (__m512)kf);
#else
    vf xc = vsel(x < -87.0f, vbc(-87.0f), x);  /* comparisons are false for NaN */
    xc = vsel(xc > 88.0f, vbc(88.0f), xc);
    vf kf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to int */
    vf r = xc - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    vf p;
    MVRT_EXP_POLY(r, p);
    vi ki = __builtin_convertvector(kf, vi);
    vi bits = (vi)p + (ki << 23);
    bits &= ~(x < -87.0f);                                    /* underflow -> 0 */
    bits = (bits & ~(x > 88.72f)) | ((x > 88.72f) & 0x7f800000); /* overflow -> inf */
    return (vf)bits;
#endif
}

MVRT_SI vf vsigmoid(vf x) { return 1.0f / (1.0f + vexp(-x)); }

/* 1/x for finite x > 0 of moderate size: the AVX-512 14-bit estimate plus
 * one Newton step (~1 ulp) instead of a slow vdivps; exact division
 * elsewhere. */
MVRT_SI vf vrcp_pos(vf x)
{
#if defined(__AVX512F__) && W == 16
    vf r = (vf)_mm512_rcp14_ps((__m512)x);
    vf e = 1.0f - x * r;
    return r + r * e;
#else
    return 1.0f / x;
#endif
}

/* log1p(e) for e in [0, 1] (and NaN): u = 1 + e = m 2^k, m in [sqrt(1/2),
 * sqrt(2)), log m = 2 atanh(f / (2 + f)), plus the rounding error of 1 + e. */
MVRT_SI vf vlog1p01(vf e)
{
    vf u = 1.0f + e;
    vi big = u > 1.41421356f;
    vf m = vsel(big, u * 0.5f, u);
    vf k = vsel(big, vbc(1.0f), vzero());
    vf f = m - 1.0f;
    vf s = f * vrcp_pos(2.0f + f);
    vf s2 = s * s;
    vf poly = vbc(2.0f / 9.0f);
    poly = poly * s2 + 2.0f / 7.0f;
    poly = poly * s2 + 2.0f / 5.0f;
    poly = poly * s2 + 2.0f / 3.0f;
    vf logm = 2.0f * s + s * s2 * poly;
    vf corr = (e - (u - 1.0f)) * vrcp_pos(u);
    return k * 0.693147180559945309f + (logm + corr);
}

/* softplus(v) = log1p(exp(v)) for v <= 20, v above (as the spec says). */
MVRT_SI vf vsoftplus(vf v)
{
    vf av = vsel(v < 0.0f, -v, v);
    vf pos = vsel(v > 0.0f, v, vzero());
    vf sp = pos + vlog1p01(vexp(-av));
    return vsel(v > 20.0f, v, sp);
}

/* ---- rows of W contiguous elements of a given dtype -------------------- */
MVRT_SI vf ld_row(const void *p, int dt)
{
    if (dt == MVRT_SCAN_F32)
        return vloadu((const float *)p);
    if (dt == MVRT_SCAN_BF16) {
        vh h = *(const vh_u *)p;
        vu w = __builtin_convertvector(h, vu);
        return (vf)(w << 16);
    }
#if defined(__AVX512F__) && W == 16
    return (vf)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
#elif defined(__F16C__) && W == 8
    return (vf)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
#elif defined(__F16C__) && W == 4
    return (vf)_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)p));
#else
    {
        float tmp[W];
        const uint16_t *h = (const uint16_t *)p;
        for (int l = 0; l < W; l++)
            tmp[l] = mvrt_f16_to_f32(h[l]);
        return vloadu(tmp);
    }
#endif
}

MVRT_SI void st_row(void *p, vf v, int dt)
{
    if (dt == MVRT_SCAN_F32) {
        vstoreu((float *)p, v);
        return;
    }
    if (dt == MVRT_SCAN_BF16) {
        vu x = (vu)v;
        vu r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
        vi nan = (x & 0x7fffffffu) > 0x7f800000u;
        r = (vu)(((vi)r & ~nan) | ((vi)((x >> 16) | 0x40u) & nan));
        *(vh_u *)p = __builtin_convertvector(r, vh);
        return;
    }
#if defined(__AVX512F__) && W == 16
    _mm256_storeu_si256((__m256i *)p,
                        _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__) && W == 8
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__) && W == 4
    _mm_storel_epi64((__m128i *)p, _mm_cvtps_ph((__m128)v, _MM_FROUND_TO_NEAREST_INT));
#else
    {
        uint16_t *h = (uint16_t *)p;
        for (int l = 0; l < W; l++)
            h[l] = mvrt_f32_to_f16(v[l]);
    }
#endif
}

/* Scalar element access (tails, strided operands). */
MVRT_SI size_t dt_size(int dt) { return dt == MVRT_SCAN_F32 ? 4 : 2; }

MVRT_SI float ld_elem(const void *base, int64_t idx, int dt)
{
    if (dt == MVRT_SCAN_F32)
        return ((const float *)base)[idx];
    if (dt == MVRT_SCAN_BF16)
        return mvrt_bf16_to_f32(((const uint16_t *)base)[idx]);
    return mvrt_f16_to_f32(((const uint16_t *)base)[idx]);
}

MVRT_SI void st_elem(void *base, int64_t idx, float v, int dt)
{
    if (dt == MVRT_SCAN_F32)
        ((float *)base)[idx] = v;
    else if (dt == MVRT_SCAN_BF16)
        ((uint16_t *)base)[idx] = mvrt_f32_to_bf16(v);
    else
        ((uint16_t *)base)[idx] = mvrt_f32_to_f16(v);
}

/* ---- in-register W x W transpose -------------------------------------------
 * Stage k swaps bit k of the row and column index where they differ; after
 * all stages (i, l) -> (l, i). */
#if W == 16
#define MVRT_LANES(M, k) M(0, k), M(1, k), M(2, k), M(3, k), M(4, k), M(5, k), M(6, k), \
        M(7, k), M(8, k), M(9, k), M(10, k), M(11, k), M(12, k), M(13, k), M(14, k), M(15, k)
#elif W == 8
#define MVRT_LANES(M, k) M(0, k), M(1, k), M(2, k), M(3, k), M(4, k), M(5, k), M(6, k), M(7, k)
#elif W == 4
#define MVRT_LANES(M, k) M(0, k), M(1, k), M(2, k), M(3, k)
#else
#error "MVRT_SCAN_LANES must be 16, 8 or 4"
#endif

#define MVRT_TM1(l, k) (((l) & (k)) ? W + (l) - (k) : (l))
#define MVRT_TM2(l, k) (((l) & (k)) ? W + (l) : (l) + (k))
#define MVRT_TSTAGE(m, k)                                                         \
    for (int i_ = 0; i_ < W; i_++) {                                              \
        if (i_ & (k))                                                             \
            continue;                                                             \
        vf a_ = (m)[i_], b_ = (m)[i_ + (k)];                                      \
        (m)[i_] = __builtin_shufflevector(a_, b_, MVRT_LANES(MVRT_TM1, k));       \
        (m)[i_ + (k)] = __builtin_shufflevector(a_, b_, MVRT_LANES(MVRT_TM2, k)); \
    }

MVRT_SI void transpose(vf *m)
{
    MVRT_TSTAGE(m, 1)
    MVRT_TSTAGE(m, 2)
#if W >= 8
    MVRT_TSTAGE(m, 4)
#endif
#if W >= 16
    MVRT_TSTAGE(m, 8)
#endif
}

/* ---- W vectors -> one vector of their lane sums (fixed tree) -------------
 * Level with segment size s combines vectors a, b into segments of s/2:
 * output segment k holds the two halves of segment k>>1 of (k&1 ? b : a)
 * added. The output lanes come out in bit-reversed input order (see
 * hsum_lanes). */
#define MVRT_RLO(i, s) (((((i) / ((s) / 2)) & 1) ? W : 0) + (((i) / ((s) / 2)) >> 1) * (s) + (i) % ((s) / 2))
#define MVRT_RHI(i, s) (MVRT_RLO(i, s) + (s) / 2)
/* The level with segment size s has s input vectors and leaves s/2. */
#define MVRT_RSTAGE(v, s)                                                              \
    for (int i_ = 0; i_ < (s) / 2; i_++)                                               \
        (v)[i_] = __builtin_shufflevector((v)[2 * i_], (v)[2 * i_ + 1], MVRT_LANES(MVRT_RLO, s)) + \
                  __builtin_shufflevector((v)[2 * i_], (v)[2 * i_ + 1], MVRT_LANES(MVRT_RHI, s));

MVRT_SI vf hsum_tree(vf *v)
{
    /* s = W: W vectors -> W/2; s = W/2: W/2 -> W/4; ... ; s = 2: 2 -> 1. */
    MVRT_RSTAGE(v, W)
#if W >= 4
    MVRT_RSTAGE(v, W / 2)
#endif
#if W >= 8
    MVRT_RSTAGE(v, W / 4)
#endif
#if W >= 16
    MVRT_RSTAGE(v, W / 8)
#endif
    return v[0];
}

/* The tree leaves the sum of input v[i] in lane bitreverse(i); one fixed
 * permutation puts lane i = sum of the lanes of v[i]. */
#if W == 16
#define MVRT_BITREV(i, k_) ((((i) & 1) << 3) | (((i) & 2) << 1) | (((i) & 4) >> 1) | (((i) & 8) >> 3))
#elif W == 8
#define MVRT_BITREV(i, k_) ((((i) & 1) << 2) | ((i) & 2) | (((i) & 4) >> 2))
#else
#define MVRT_BITREV(i, k_) ((((i) & 1) << 1) | (((i) & 2) >> 1))
#endif

MVRT_SI vf hsum_lanes(vf *v)
{
    vf r = hsum_tree(v);
    return __builtin_shufflevector(r, r, MVRT_LANES(MVRT_BITREV, 0));
}

#endif
