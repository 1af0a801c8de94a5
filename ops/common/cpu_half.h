/* Scalar f16 / bf16 <-> f32 conversions for host code (CPU kernels, tests,
 * tools). Integer-only, so the result does not depend on the caller's
 * FTZ/DAZ floating-point mode (TensorFlow's thread pools set both).
 * f32 -> f16 and f32 -> bf16 round to nearest even; NaN stays a quiet NaN;
 * values too large for f16 become +-inf. Header-only, no dependencies. */
#ifndef MVRT_OPS_COMMON_CPU_HALF_H
#define MVRT_OPS_COMMON_CPU_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t mvrt_f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static inline float mvrt_bits_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static inline float mvrt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    uint32_t bits;
    if (em >= 0x7c00u) {                 /* inf / NaN: keep the payload */
        bits = 0x7f800000u | ((em & 0x3ffu) << 13);
    } else if (em >= 0x0400u) {          /* normal: rebias the exponent 15 -> 127 */
        bits = (em << 13) + 0x38000000u;
    } else if (em == 0) {
        bits = 0;
    } else {                             /* subnormal half: normalize */
        uint32_t m = em, e = 113;        /* 2^-14 has f32 biased exponent 113 */
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        bits = (e << 23) | ((m & 0x3ffu) << 13);
    }
    return mvrt_bits_f32(bits | sign);
}

static inline uint16_t mvrt_f32_to_f16(float f)
{
    uint32_t x = mvrt_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)                          /* NaN -> quiet NaN */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u)                         /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) {                       /* normal half (>= 2^-14) */
        uint32_t r = ax - 0x38000000u;             /* rebias 127 -> 15 */
        r += 0xfffu + ((r >> 13) & 1u);            /* round to nearest even */
        return (uint16_t)(sign | (r >> 13));
    }
    if (ax <= 0x33000000u)                         /* <= 2^-25: rounds to 0 */
        return (uint16_t)sign;
    {                                              /* subnormal half */
        uint32_t e = ax >> 23;                     /* 102..112 */
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e;                 /* 14..24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
}

static inline float mvrt_bf16_to_f32(uint16_t h)
{
    return mvrt_bits_f32((uint32_t)h << 16);
}

static inline uint16_t mvrt_f32_to_bf16(float f)
{
    uint32_t x = mvrt_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)           /* NaN -> quiet NaN */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);               /* round to nearest even */
    return (uint16_t)(x >> 16);
}

#endif
