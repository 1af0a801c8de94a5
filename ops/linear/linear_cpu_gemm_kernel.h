/* Body of mvrt's own blocked SGEMM (see linear_cpu_gemm.h), included by
 * linear_cpu.c once per instruction set with:
 *   GK_SUF   name suffix (generic, avx2, avx512)
 *   GK_VL    floats per vector register (4, 8, 16)
 *   GK_ATTR  function attribute selecting the instruction set (or empty)
 * The micro-kernel keeps a GK_MR x (2 GK_VL) tile of C in 12 vector
 * registers and streams packed panels of A (GK_MR rows, k-major) and B
 * (2 GK_VL columns, k-major): per k it loads two vectors of B, broadcasts
 * six values of A and issues twelve multiply-adds (FMAs, as the library is
 * built with -ffp-contract=fast and the ISA has them). Loop order is the
 * usual one for a cache hierarchy: a KC x NC block of B is packed once per
 * (jc, pc) and reused by every MC-row block of A, whose packed copy stays in
 * L2 while one KC x NR micro-panel of B stays in L1. */

#define GK_CAT2(a, b) a##_##b
#define GK_CAT(a, b) GK_CAT2(a, b)
#define GK(name) GK_CAT(mvrt_gemm_##name, GK_SUF)

#define GK_MR 6
#define GK_NR (2 * GK_VL)

typedef float GK(vf) __attribute__((vector_size(GK_VL * 4), may_alias));
typedef float GK(vfu) __attribute__((vector_size(GK_VL * 4), aligned(4), may_alias));

/* Packs rows [i0, i0+mc) x k [p0, p0+kc) of op(A) into MR-row panels;
 * rows past mc are zeros so the micro-kernel always runs a full tile. */
static GK_ATTR void GK(pack_a)(const mvrt_cpu_gemm_t *g, int64_t i0, int64_t mc, int64_t p0,
                               int64_t kc, float *restrict dst)
{
    for (int64_t ir = 0; ir < mc; ir += GK_MR) {
        const int64_t m = mc - ir < GK_MR ? mc - ir : GK_MR;
        float *restrict d = dst + ir * kc;
        if (!g->trans_a) {
            for (int64_t i = 0; i < m; i++) {
                const float *restrict s = g->A + (i0 + ir + i) * g->lda + p0;
                for (int64_t k = 0; k < kc; k++)
                    d[k * GK_MR + i] = s[k];
            }
        } else {
            /* op(A)(i, k) = A[k, i]: MR consecutive floats per k. */
            for (int64_t k = 0; k < kc; k++) {
                const float *restrict s = g->A + (p0 + k) * g->lda + i0 + ir;
                for (int64_t i = 0; i < m; i++)
                    d[k * GK_MR + i] = s[i];
            }
        }
        if (m < GK_MR)
            for (int64_t k = 0; k < kc; k++)
                for (int64_t i = m; i < GK_MR; i++)
                    d[k * GK_MR + i] = 0.0f;
    }
}

/* Packs k [p0, p0+kc) x columns [j0, j0+nc) of op(B) into NR-column
 * panels, zero-padded past nc. */
static GK_ATTR void GK(pack_b)(const mvrt_cpu_gemm_t *g, int64_t p0, int64_t kc, int64_t j0,
                               int64_t nc, float *restrict dst)
{
    for (int64_t jr = 0; jr < nc; jr += GK_NR) {
        const int64_t n = nc - jr < GK_NR ? nc - jr : GK_NR;
        float *restrict d = dst + jr * kc;
        if (!g->trans_b) {
            for (int64_t k = 0; k < kc; k++) {
                const float *restrict s = g->B + (p0 + k) * g->ldb + j0 + jr;
                float *restrict dk = d + k * GK_NR;
                if (n == GK_NR) {
                    for (int j = 0; j < GK_NR; j++)
                        dk[j] = s[j];
                } else {
                    int64_t j = 0;
                    for (; j < n; j++)
                        dk[j] = s[j];
                    for (; j < GK_NR; j++)
                        dk[j] = 0.0f;
                }
            }
        } else {
            /* op(B)(k, j) = B[j, k]: read each stored row contiguously. */
            for (int64_t j = 0; j < n; j++) {
                const float *restrict s = g->B + (j0 + jr + j) * g->ldb + p0;
                for (int64_t k = 0; k < kc; k++)
                    d[k * GK_NR + j] = s[k];
            }
            if (n < GK_NR)
                for (int64_t k = 0; k < kc; k++)
                    for (int64_t j = n; j < GK_NR; j++)
                        d[k * GK_NR + j] = 0.0f;
        }
    }
}

/* ---- activations on whole vectors ------------------------------------
 * The same formulas as the scalar helpers in ops/common/cpu_vmath.h (mvrt_expf_v
 * and friends; the polynomial fits are its shared MVRT_EXP_TAYLOR7 /
 * MVRT_ERF_PA / MVRT_ERF_PB), written on vector types: GCC does not if-convert the
 * scalar forms into vector code under the default -ftrapping-math, and
 * erff / tanhf calls cost more than the GEMM on MLP-sized rows. Selects
 * are bit masks, so no lane ever branches. */
typedef int32_t GK(vi) __attribute__((vector_size(GK_VL * 4)));
typedef uint32_t GK(vu) __attribute__((vector_size(GK_VL * 4)));
#define GK_SPLAT(s) ((GK(vf)){0} + (float)(s))
#define GK_INL static inline GK_ATTR __attribute__((always_inline))

GK_INL GK(vf) GK(sel)(GK(vi) m, GK(vf) a, GK(vf) b)
{
    return (GK(vf))(((GK(vi))a & m) | ((GK(vi))b & ~m));
}

GK_INL GK(vf) GK(vexp)(GK(vf) x)
{
    const GK(vf) lo = GK_SPLAT(-87.0f), hi = GK_SPLAT(88.0f), magic = GK_SPLAT(12582912.0f);
    x = GK(sel)(x < lo, lo, x);
    x = GK(sel)(x > hi, hi, x);
    const GK(vf) t = x * 1.44269504088896341f + magic;
    const GK(vf) n = t - magic;
    const GK(vf) r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
    GK(vf) q = GK_SPLAT(MVRT_EXP_TAYLOR7_LEAD);
    MVRT_EXP_TAYLOR7(q, r);
    const GK(vu) sb = ((GK(vu))t - 0x4B400000u + 127u) << 23;
    return q * (GK(vf))sb;
}

GK_INL GK(vf) GK(vsilu)(GK(vf) x) { return x / (1.0f + GK(vexp)(-x)); }

GK_INL GK(vf) GK(vgelu_tanh)(GK(vf) x)
{
    const GK(vf) u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.0f + GK(vexp)(-2.0f * u));
}

GK_INL GK(vf) GK(vgelu_erf)(GK(vf) x)
{
    const GK(vf) zero = GK_SPLAT(0.0f), one = GK_SPLAT(1.0f), four = GK_SPLAT(4.0f);
    const GK(vf) z = GK(sel)(x < zero, -x, x) * 0.70710678118654752f;
    const GK(vf) ua = 2.0f * (z * z) - 1.0f;
    GK(vf) pa = GK_SPLAT(MVRT_ERF_PA_LEAD);
    MVRT_ERF_PA(pa, ua);
    const GK(vf) ea = 1.0f - z * pa;
    GK(vf) zb = GK(sel)(z < one, one, z);
    zb = GK(sel)(zb > four, four, zb);
    const GK(vf) ub = (2.0f * zb - 5.0f) * (1.0f / 3.0f);
    GK(vf) pb = GK_SPLAT(MVRT_ERF_PB_LEAD);
    MVRT_ERF_PB(pb, ub);
    const GK(vf) eb = GK(vexp)(-(zb * zb)) * pb;
    const GK(vf) ec = GK(sel)(z < one, ea, GK(sel)(z < four, eb, zero));
    const GK(vf) hx = 0.5f * x * ec;
    return GK(sel)(x >= zero, x - hx, hx);
}

GK_INL GK(vf) GK(vact)(int act, GK(vf) x)
{
    switch (act) {
    case MVRT_ACT_RELU: return GK(sel)(x > GK_SPLAT(0.0f), x, GK_SPLAT(0.0f));
    case MVRT_ACT_GELU_ERF: return GK(vgelu_erf)(x);
    case MVRT_ACT_GELU_TANH: return GK(vgelu_tanh)(x);
    case MVRT_ACT_SILU: return GK(vsilu)(x);
    default: return x;
    }
}

/* act(C + bias) + residual on an m x n block at (r0, c0) of the GEMM. */
static GK_ATTR void GK(epilogue)(const mvrt_cpu_gemm_t *g, float *c, int64_t ldc, int64_t r0,
                                 int64_t c0, int64_t m, int64_t n)
{
    const int act = g->activation;
    for (int64_t i = 0; i < m; i++) {
        float *restrict row = c + i * ldc;
        if (g->bias) {
            if (g->bias_per_row) {
                const float bv = g->bias[r0 + i];
                for (int64_t j = 0; j < n; j++)
                    row[j] += bv;
            } else {
                const float *restrict bv = g->bias + c0;
                for (int64_t j = 0; j < n; j++)
                    row[j] += bv[j];
            }
        }
        if (act != MVRT_ACT_NONE) {
            int64_t j = 0;
            for (; j + GK_VL <= n; j += GK_VL) {
                GK(vfu) *v = (GK(vfu) *)(row + j);
                *v = GK(vact)(act, *v);
            }
            if (j < n) {
                /* Tail through a zero-filled vector (no lane reads past n). */
                GK(vf) t = GK_SPLAT(0.0f);
                float *tf = (float *)&t;
                for (int64_t q = j; q < n; q++)
                    tf[q - j] = row[q];
                t = GK(vact)(act, t);
                for (int64_t q = j; q < n; q++)
                    row[q] = tf[q - j];
            }
        }
        if (g->residual) {
            const float *restrict rv = g->residual + (r0 + i) * g->ld_residual + c0;
            for (int64_t j = 0; j < n; j++)
                row[j] += rv[j];
        }
    }
}

#undef GK_SPLAT
#undef GK_INL

#define GK_ROW_DECL(i) GK(vf) c##i##0 = {0}, c##i##1 = {0};
#define GK_ROW_FMA(i)            \
    {                            \
        const float ai = a[i];   \
        c##i##0 += ai * b0;      \
        c##i##1 += ai * b1;      \
    }
#define GK_ROW_STORE(i)                                                           \
    {                                                                             \
        GK(vfu) *r0 = (GK(vfu) *)(c + (i) * ldc), *r1 = (GK(vfu) *)(c + (i) * ldc + GK_VL); \
        if (acc) {                                                                \
            *r0 += c##i##0;                                                       \
            *r1 += c##i##1;                                                       \
        } else {                                                                  \
            *r0 = c##i##0;                                                        \
            *r1 = c##i##1;                                                        \
        }                                                                         \
    }
#define GK_ROW_SPILL(i)                        \
    {                                          \
        *(GK(vf) *)(t + (i) * GK_NR) = c##i##0; \
        *(GK(vf) *)(t + (i) * GK_NR + GK_VL) = c##i##1; \
    }

/* C[0:m, 0:n] (row stride ldc) = (acc ? C : 0) + Apanel Bpanel over kc. */
static GK_ATTR void GK(micro)(int64_t kc, const float *restrict a, const float *restrict b,
                              float *restrict c, int64_t ldc, int acc, int m, int n)
{
    GK_ROW_DECL(0) GK_ROW_DECL(1) GK_ROW_DECL(2) GK_ROW_DECL(3) GK_ROW_DECL(4) GK_ROW_DECL(5)
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        const GK(vf) b0 = *(const GK(vf) *)b;
        const GK(vf) b1 = *(const GK(vf) *)(b + GK_VL);
        GK_ROW_FMA(0) GK_ROW_FMA(1) GK_ROW_FMA(2) GK_ROW_FMA(3) GK_ROW_FMA(4) GK_ROW_FMA(5)
        a += GK_MR;
        b += GK_NR;
    }
    if (m == GK_MR && n == GK_NR) {
        GK_ROW_STORE(0) GK_ROW_STORE(1) GK_ROW_STORE(2) GK_ROW_STORE(3) GK_ROW_STORE(4)
        GK_ROW_STORE(5)
    } else {
        float t[GK_MR * GK_NR] __attribute__((aligned(64)));
        GK_ROW_SPILL(0) GK_ROW_SPILL(1) GK_ROW_SPILL(2) GK_ROW_SPILL(3) GK_ROW_SPILL(4)
        GK_ROW_SPILL(5)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                c[i * ldc + j] = (acc ? c[i * ldc + j] : 0.0f) + t[i * GK_NR + j];
    }
}

/* Rows [m0, m1) x columns [n0, n1) of one GEMM (g's pointers already at
 * its batch item), all of K, with the epilogue. abuf holds mc_max * kc_max
 * floats, bbuf kc_max * nc_max (nc_max a multiple of NR). */
static GK_ATTR void GK(tile)(const mvrt_cpu_gemm_t *g, int has_epi, int64_t m0, int64_t m1,
                             int64_t n0, int64_t n1, float *abuf, float *bbuf, int64_t mc_max,
                             int64_t kc_max, int64_t nc_max)
{
    const int64_t K = g->K, ldc = g->ldc;
    /* Equal K blocks (320 = 160 + 160, not 256 + 64): a short last block
     * would pay the C tile's load and store for little work. */
    const int64_t kblocks = (K + kc_max - 1) / kc_max, kc_even = (K + kblocks - 1) / kblocks;
    for (int64_t jc = n0; jc < n1; jc += nc_max) {
        const int64_t nc = n1 - jc < nc_max ? n1 - jc : nc_max;
        for (int64_t pc = 0; pc < K; pc += kc_even) {
            const int64_t kc = K - pc < kc_even ? K - pc : kc_even;
            const int last = pc + kc >= K;
            const int acc = g->accumulate || pc > 0;
            GK(pack_b)(g, pc, kc, jc, nc, bbuf);
            for (int64_t ic = m0; ic < m1; ic += mc_max) {
                const int64_t mc = m1 - ic < mc_max ? m1 - ic : mc_max;
                GK(pack_a)(g, ic, mc, pc, kc, abuf);
                for (int64_t jr = 0; jr < nc; jr += GK_NR) {
                    const int n = (int)(nc - jr < GK_NR ? nc - jr : GK_NR);
                    for (int64_t ir = 0; ir < mc; ir += GK_MR) {
                        const int m = (int)(mc - ir < GK_MR ? mc - ir : GK_MR);
                        float *c = g->C + (ic + ir) * ldc + jc + jr;
                        GK(micro)(kc, abuf + ir * kc, bbuf + jr * kc, c, ldc, acc, m, n);
                        /* The tile is still in L1: finish it now. */
                        if (last && has_epi)
                            GK(epilogue)(g, c, ldc, ic + ir, jc + jr, m, n);
                    }
                }
            }
        }
    }
}

#undef GK_ROW_DECL
#undef GK_ROW_FMA
#undef GK_ROW_STORE
#undef GK_ROW_SPILL
#undef GK_MR
#undef GK_NR
#undef GK
#undef GK_CAT
#undef GK_CAT2
