/* CPU multi-head attention, not causal (contract: mvrt_attention_params_t in
 * mv_op_params.h).
 *
 * Per (batch, head) the keys are copied transposed into Kt[d][Lp] and the
 * values into Vs[Lp][dp] (Lp = L rounded up to 16 keys, dp = head_dim
 * rounded up to 8, zero padded), so both products stream contiguous rows:
 *   S  = (q * scale) Kt     register tile: AT_QT queries x 2 vectors of keys,
 *   P  = exp(S - rowmax)    vectorized exp, padding keys forced to 0,
 *   O  = P Vs / rowsum      register tile: AT_QT queries x 2 vectors of dims.
 * Queries go in blocks of AT_QB; S holds one block's full rows, so the
 * softmax needs no rescaling (MambaVision windows have L <= 196). The
 * copies are O(L d) against O(L^2 d) of arithmetic.
 *
 * The products and the exp are written with GCC vector extensions
 * (attention_cpu_kernel.h, built per vector width, see below) so the tiles
 * stay in registers; -ffp-contract=fast turns the multiply-adds into FMAs
 * where the ISA has them. Tasks are (batch*head, query chunk) so that a small
 * batch*heads still feeds every thread; each thread allocates its scratch
 * once and reloads K/V only when its (batch, head) changes. If that
 * allocation fails, the thread falls back to a scratch-free scalar kernel
 * (online softmax), so the op still completes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/cpu_vmath.h" /* MVRT_EXP_TAYLOR7 */
#include "ops/mv/mv_kernels.h"

#define AT_QT 4  /* queries per register tile */
#define AT_QB 16 /* queries per block (multiple of AT_QT and of 8) */

typedef struct at_ws {
    float *kt;  /* d x Lp */
    float *vs;  /* Lp x dp */
    float *s;   /* AT_QB x Lp */
    float *q;   /* AT_QB x d (scaled) */
    float *o;   /* AT_QB x dp */
    float *inv; /* AT_QB */
} at_ws_t;

typedef struct at_dims {
    int64_t L, Lp, ld, C;
    int d, dp;
} at_dims_t;

static size_t at_ws_floats(const at_dims_t *g)
{
    return (size_t)g->d * g->Lp + (size_t)g->Lp * g->dp + (size_t)AT_QB * g->Lp +
           (size_t)AT_QB * g->d + (size_t)AT_QB * g->dp + AT_QB;
}

static void at_ws_carve(at_ws_t *w, float *base, const at_dims_t *g)
{
    w->kt = base;
    w->vs = w->kt + (size_t)g->d * g->Lp;
    w->s = w->vs + (size_t)g->Lp * g->dp;
    w->q = w->s + (size_t)AT_QB * g->Lp;
    w->o = w->q + (size_t)AT_QB * g->d;
    w->inv = w->o + (size_t)AT_QB * g->dp;
}

static void at_load_kv(const at_ws_t *w, const at_dims_t *g, const float *kbase,
                       const float *vbase)
{
    const int d = g->d, dp = g->dp;
    const int64_t L = g->L, Lp = g->Lp;
    for (int64_t j = 0; j < L; j++) {
        const float *kr = kbase + j * g->ld;
        for (int k = 0; k < d; k++)
            w->kt[k * Lp + j] = kr[k];
    }
    for (int k = 0; k < d; k++)
        for (int64_t j = L; j < Lp; j++)
            w->kt[k * Lp + j] = 0.0f;
    for (int64_t j = 0; j < Lp; j++) {
        float *vr = w->vs + j * dp;
        if (j < L) {
            memcpy(vr, vbase + j * g->ld, (size_t)d * sizeof(float));
            for (int k = d; k < dp; k++)
                vr[k] = 0.0f;
        } else {
            for (int k = 0; k < dp; k++)
                vr[k] = 0.0f;
        }
    }
}

/* The kernel proper, once per vector width. On x86-64 with GCC an AVX2 +
 * FMA build (16 registers of 8 floats hold a whole tile) is chosen at run
 * time when the CPU has it; the baseline build uses 4-float vectors, which
 * every target has (SSE2, NEON) and whose tiles fit 16 registers. Generic
 * 8-float vectors on a 4-float ISA would spill and shuffle through the
 * stack instead. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AT_HAVE_AVX2_BUILD 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define AT_VW 8
#define AT_FN(n) n##_avx2
#include "attention_cpu_kernel.h"
#undef AT_VW
#undef AT_FN
#pragma GCC pop_options
#endif

#define AT_VW 4
#define AT_FN(n) n##_base
#include "attention_cpu_kernel.h"
#undef AT_VW
#undef AT_FN

typedef void (*at_block_fn)(const at_ws_t *, const at_dims_t *, const float *, float *, float,
                            int64_t, int64_t);

static at_block_fn at_pick_kernel(void)
{
#ifdef AT_HAVE_AVX2_BUILD
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return at_block_range_avx2;
#endif
    return at_block_range_base;
}

/* Scratch-free fallback: one query at a time with an online softmax. */
static void at_naive_range(const at_dims_t *g, const float *qbase, const float *kbase,
                           const float *vbase, float *obase, float scale, int64_t q_begin,
                           int64_t q_end)
{
    const int d = g->d;
    for (int64_t i = q_begin; i < q_end; i++) {
        const float *q = qbase + i * g->ld;
        float *o = obase + i * g->C;
        float m = -INFINITY, sum = 0.0f;
        for (int k = 0; k < d; k++)
            o[k] = 0.0f;
        for (int64_t j = 0; j < g->L; j++) {
            const float *kr = kbase + j * g->ld, *vr = vbase + j * g->ld;
            float s = 0.0f;
            for (int k = 0; k < d; k++)
                s += q[k] * kr[k];
            s *= scale;
            if (s > m) {
                const float c = expf(m - s);
                sum *= c;
                for (int k = 0; k < d; k++)
                    o[k] *= c;
                m = s;
            }
            const float e = expf(s - m);
            sum += e;
            for (int k = 0; k < d; k++)
                o[k] += e * vr[k];
        }
        const float inv = 1.0f / sum;
        for (int k = 0; k < d; k++)
            o[k] *= inv;
    }
}

void mvrt_cpu_attention(const mvrt_attention_params_t *p, int threads)
{
    const int64_t B = p->batch, L = p->length;
    const int H = p->heads, d = p->head_dim;
    if (B <= 0 || L <= 0 || H <= 0 || d <= 0)
        return;
    at_dims_t g;
    g.L = L;
    g.Lp = (L + 15) / 16 * 16;
    g.C = (int64_t)H * d;
    g.ld = 3 * g.C;
    g.d = d;
    g.dp = (d + 7) / 8 * 8;
    const size_t ws_bytes = (at_ws_floats(&g) * sizeof(float) + 63) / 64 * 64;

    const int nt = threads < 1 ? 1 : threads;
    const int64_t nbh = B * H, nqb = (L + AT_QB - 1) / AT_QB;
    /* Enough tasks for every thread (twice over, for balance) even when
     * batch * heads is small; chunks are whole query blocks. */
    int64_t nqc = 1;
    if (nbh < 2 * (int64_t)nt) {
        nqc = (2 * (int64_t)nt + nbh - 1) / nbh;
        if (nqc > nqb)
            nqc = nqb;
    }
    const int64_t ntask = nbh * nqc;
    const int64_t work = nbh * L * L * d;
    (void)work;
    const at_block_fn block = at_pick_kernel();

#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1 && ntask > 1 && work >= 65536)
#endif
    {
        float *base = aligned_alloc(64, ws_bytes);
        at_ws_t w;
        if (base)
            at_ws_carve(&w, base, &g);
        int64_t loaded = -1;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t task = 0; task < ntask; task++) {
            const int64_t bh = task / nqc, qc = task % nqc;
            const int64_t b = bh / H;
            const int h = (int)(bh % H);
            const float *qbase = p->qkv + b * L * g.ld + (int64_t)h * d;
            const float *kbase = qbase + g.C, *vbase = qbase + 2 * g.C;
            float *obase = p->out + b * L * g.C + (int64_t)h * d;
            const int64_t q_begin = qc * nqb / nqc * AT_QB;
            int64_t q_end = (qc + 1) * nqb / nqc * AT_QB;
            if (q_end > L)
                q_end = L;
            if (!base) {
                at_naive_range(&g, qbase, kbase, vbase, obase, p->scale, q_begin, q_end);
                continue;
            }
            if (loaded != bh) {
                at_load_kv(&w, &g, kbase, vbase);
                loaded = bh;
            }
            block(&w, &g, qbase, obase, p->scale, q_begin, q_end);
        }
        free(base);
    }
}
