/* Branch-free float exp and activations for CPU kernels (linear epilogue,
 * conv1d + SiLU): selects instead of branches and no calls into libm, so
 * that a loop over them vectorizes. Header-only; static inline.
 * Relative error a few float ulps (see the fits below). */
#ifndef MVRT_OPS_COMMON_CPU_VMATH_H
#define MVRT_OPS_COMMON_CPU_VMATH_H

#include <stdint.h>
#include <string.h>

#include "ops/common/cpu_half.h" /* mvrt_f32_bits, mvrt_bits_f32 */

/* (erff/tanhf would cost more than the GEMM itself on MLP-sized rows.) */

/* The polynomial steps of the helpers below, shared with the kernels that
 * write the same formulas on GCC vector types (ops/linear/
 * linear_cpu_gemm_kernel.h, ops/attention/attention_cpu_kernel.h): the
 * statements compile for float and for vector types alike (a vector times
 * a float scalar broadcasts), so there is one copy of each fit.
 *   MVRT_EXP_TAYLOR7(q, r): q = e^r for |r| <= ln2/2; q must hold
 *     MVRT_EXP_TAYLOR7_LEAD on entry (degree 7, truncation < 1e-8).
 *   MVRT_ERF_PA(p, u) / MVRT_ERF_PB(p, u): the two erfc fits of
 *     mvrt_gelu_erf_v; p must hold MVRT_ERF_PA_LEAD / MVRT_ERF_PB_LEAD. */
#define MVRT_EXP_TAYLOR7_LEAD (1.0f / 5040.0f)
#define MVRT_EXP_TAYLOR7(q, r)                                                                     \
    do {                                                                                           \
        (q) = (q) * (r) + 1.0f / 720.0f;                                                           \
        (q) = (q) * (r) + 1.0f / 120.0f;                                                           \
        (q) = (q) * (r) + 1.0f / 24.0f;                                                            \
        (q) = (q) * (r) + 1.0f / 6.0f;                                                             \
        (q) = (q) * (r) + 0.5f;                                                                    \
        (q) = (q) * (r) + 1.0f;                                                                    \
        (q) = (q) * (r) + 1.0f;                                                                    \
    } while (0)
#define MVRT_ERF_PA_LEAD 1.230605449e-06f
#define MVRT_ERF_PA(p, u)                                                                          \
    do {                                                                                           \
        (p) = (p) * (u) - 1.766906826e-05f;                                                        \
        (p) = (p) * (u) + 2.175135451e-04f;                                                        \
        (p) = (p) * (u) - 2.285419498e-03f;                                                        \
        (p) = (p) * (u) + 1.985249668e-02f;                                                        \
        (p) = (p) * (u) - 1.405360997e-01f;                                                        \
        (p) = (p) * (u) + 9.654687643e-01f;                                                        \
    } while (0)
#define MVRT_ERF_PB_LEAD (-3.566417945e-05f)
#define MVRT_ERF_PB(p, u)                                                                          \
    do {                                                                                           \
        (p) = (p) * (u) + 9.629120177e-05f;                                                        \
        (p) = (p) * (u) - 1.474161400e-04f;                                                        \
        (p) = (p) * (u) + 3.681510861e-04f;                                                        \
        (p) = (p) * (u) - 1.013662550e-03f;                                                        \
        (p) = (p) * (u) + 2.425638959e-03f;                                                        \
        (p) = (p) * (u) - 5.568837747e-03f;                                                        \
        (p) = (p) * (u) + 1.248412300e-02f;                                                        \
        (p) = (p) * (u) - 2.700545825e-02f;                                                        \
        (p) = (p) * (u) + 5.611094832e-02f;                                                        \
        (p) = (p) * (u) - 1.115210205e-01f;                                                        \
        (p) = (p) * (u) + 2.108063549e-01f;                                                        \
    } while (0)

/* exp(x) for x in [-87, 88] (clamped outside: callers only divide by
 * 1 + exp(.), where the clamp is invisible): x = n ln2 + r, |r| <= ln2/2,
 * degree-7 Taylor polynomial of e^r (error < 1e-8), times 2^n made from
 * bits. n comes from the bits of the rounding sum, not a float->int
 * conversion, so a NaN input just yields NaN. */
static inline float mvrt_expf_core(float x) /* x already in [-87, 88] */
{
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    const float t = x * 1.44269504088896341f + magic;
    const float n = t - magic;
    const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f; /* ln2 in two parts */
    float q = MVRT_EXP_TAYLOR7_LEAD;
    MVRT_EXP_TAYLOR7(q, r);
    return q * mvrt_bits_f32((mvrt_f32_bits(t) - 0x4B400000u + 127u) << 23); /* times 2^n */
}

static inline float mvrt_expf_v(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    return mvrt_expf_core(x);
}

/* silu(a) = a / (1 + exp(-a)) with e = exp(-|a|) in (0, 1]: a >= 0 gives
 * a / (1 + e), a < 0 gives a e / (1 + e), so the exp never overflows. The
 * clamp of -|a| to >= -87 and the sign select work on the bit patterns:
 * GCC does not if-convert the float compares of mvrt_expf_v's clamp in
 * every loop (-ftrapping-math; the conv1d's SiLU loop stayed scalar),
 * integer selects it always does. */
static inline float mvrt_silu_v(float a)
{
    const uint32_t ua = mvrt_f32_bits(a);
    uint32_t uy = ua | 0x80000000u;   /* -|a| */
    const uint32_t lim = 0xC2AE0000u; /* -87.0f; larger bits = more negative */
    uy = uy < lim ? uy : lim;
    const float e = mvrt_expf_core(mvrt_bits_f32(uy));
    const uint32_t neg = 0u - (ua >> 31); /* all ones when a < 0 */
    const float f = mvrt_bits_f32((mvrt_f32_bits(1.0f) & ~neg) | (mvrt_f32_bits(e) & neg));
    return a * f / (1.0f + e);
}

/* 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3);
 * the sigmoid form keeps relative accuracy for negative x. */
static inline float mvrt_gelu_tanh_v(float x)
{
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.0f + mvrt_expf_v(-2.0f * u));
}

/* 0.5 x (1 + erf(x / sqrt 2)) through erfc(z), z = |x| / sqrt 2:
 *   z < 1:      erfc = 1 - z PA(z^2)       (erf(z)/z, Chebyshev fit, rel
 *                                           error 1.3e-9 in exact math)
 *   1 <= z < 4: erfc = exp(-z^2) PB(z)     (erfc(z) e^(z^2), fit rel 3.4e-8)
 *   z >= 4:     erfc = 0                   (erfc(4) = 1.5e-8)
 * then gelu = x - x erfc/2 for x >= 0 and x erfc/2 for x < 0, which
 * keeps the tiny negative tail accurate instead of cancelling 1 + erf. */
static inline float mvrt_gelu_erf_v(float x)
{
    const float z = (x < 0.0f ? -x : x) * 0.70710678118654752f;
    const float ua = 2.0f * (z * z) - 1.0f; /* z^2 in [0, 1] -> [-1, 1] */
    float pa = MVRT_ERF_PA_LEAD;
    MVRT_ERF_PA(pa, ua);
    const float ea = 1.0f - z * pa;
    const float zb = z < 1.0f ? 1.0f : (z > 4.0f ? 4.0f : z);
    const float ub = (2.0f * zb - 5.0f) * (1.0f / 3.0f); /* [1, 4] -> [-1, 1] */
    float pb = MVRT_ERF_PB_LEAD;
    MVRT_ERF_PB(pb, ub);
    const float eb = mvrt_expf_v(-(zb * zb)) * pb;
    const float ec = z < 1.0f ? ea : (z < 4.0f ? eb : 0.0f);
    /* Both arms computed, then a select: with the default -ftrapping-math,
     * GCC will not if-convert (vectorize) a conditional float operation. */
    const float hx = 0.5f * x * ec, pos = x - hx;
    return x >= 0.0f ? pos : hx;
}

#endif
