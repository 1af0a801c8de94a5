/* Body of the CPU attention kernel, included by attention_cpu.c once per
 * vector width (no include guard on purpose). Before including, define
 *   AT_VW      lanes of a float vector: 8 (AVX2 build) or 4 (baseline)
 *   AT_FN(n)   the name of function n in this build (a suffix per width)
 * and have at_ws_t / at_dims_t / AT_QT / AT_QB in scope. Produces one
 * external-to-the-body entry point, AT_FN(at_block_range), with the contract
 * written above it; everything else is inlined into it.
 *
 * Tiles are chosen so that each has 8 independent vector accumulators
 * (enough to hide the multiply-add latency) and fits the register file of
 * its width: AT_QT = 4 queries x 2 vectors of keys for S = Q Kt, the same
 * for O = P V along head dims, and 8 queries x 1 vector for a leftover
 * vector of head dims. Scalars multiply vectors directly (vector * float):
 * GCC then emits one broadcast per scalar, where a {x, x, ...} initializer
 * can end up as a shuffle chain or a trip through the stack. */

#define AT_VF AT_FN(at_vf)
#define AT_VI AT_FN(at_vi)
typedef float AT_VF __attribute__((vector_size(AT_VW * 4)));
typedef int32_t AT_VI __attribute__((vector_size(AT_VW * 4)));

#define AT_INL static inline __attribute__((always_inline))
/* A constant in every lane (folded at compile time). */
#define AT_SPLAT(c) ((AT_VF){0} + (c))

AT_INL AT_VF AT_FN(at_ld)(const float *p)
{
    AT_VF v;
    memcpy(&v, p, sizeof v);
    return v;
}

AT_INL void AT_FN(at_st)(float *p, AT_VF v) { memcpy(p, &v, sizeof v); }

/* exp(x) for x <= 0 (a softmax argument after max subtraction). Cody-Waite
 * reduction x = n ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial for
 * exp(r) (truncation < 1e-8 relative) and 2^n from the exponent bits.
 * Inputs below -87 are clamped (exp(-87) ~ 1.6e-38 is negligible next to
 * the row maximum's term 1), which keeps 2^n a normal float. */
AT_INL AT_VF AT_FN(at_exp_neg)(AT_VF x)
{
    const AT_VF lo = AT_SPLAT(-87.0f);
    const AT_VI below = x < lo;
    x = (AT_VF)(((AT_VI)lo & below) | ((AT_VI)x & ~below));
    const AT_VF magic = AT_SPLAT(12582912.0f);  /* 1.5 * 2^23: rounds to integer */
    const AT_VF t = x * 1.44269504088896341f + magic;
    const AT_VF n = t - magic;
    AT_VF r = x - n * 0.693145751953125f;
    r = r - n * 1.428606765330187e-06f;
    AT_VF q = AT_SPLAT(MVRT_EXP_TAYLOR7_LEAD);
    MVRT_EXP_TAYLOR7(q, r); /* the fit of ops/common/cpu_vmath.h */
    const AT_VI e = ((AT_VI)t - (AT_VI)magic + 127) << 23;
    return q * (AT_VF)e;
}

/* The 4 x (2 vectors) tile of C = A B that both products share: c[r] (rows
 * c_pitch apart, 2 * AT_VW floats each) = sum over k < K of a[r][k] (rows
 * a_pitch apart, unit stride in k) times b_k (2 * AT_VW floats, rows b_pitch
 * apart). Q Kt sums over head dims, P V over keys. */
AT_INL void AT_FN(at_tile4x2)(const float *a, size_t a_pitch, const float *b, size_t b_pitch, int64_t K, float *c,
                              size_t c_pitch)
{
    const float *a0 = a, *a1 = a0 + a_pitch, *a2 = a1 + a_pitch, *a3 = a2 + a_pitch;
    AT_VF c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0};
    AT_VF c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
    for (int64_t k = 0; k < K; k++, b += b_pitch) {
        const AT_VF b0 = AT_FN(at_ld)(b), b1 = AT_FN(at_ld)(b + AT_VW);
        c00 += b0 * a0[k];
        c01 += b1 * a0[k];
        c10 += b0 * a1[k];
        c11 += b1 * a1[k];
        c20 += b0 * a2[k];
        c21 += b1 * a2[k];
        c30 += b0 * a3[k];
        c31 += b1 * a3[k];
    }
    AT_FN(at_st)(c, c00);
    AT_FN(at_st)(c + AT_VW, c01);
    AT_FN(at_st)(c + c_pitch, c10);
    AT_FN(at_st)(c + c_pitch + AT_VW, c11);
    AT_FN(at_st)(c + 2 * c_pitch, c20);
    AT_FN(at_st)(c + 2 * c_pitch + AT_VW, c21);
    AT_FN(at_st)(c + 3 * c_pitch, c30);
    AT_FN(at_st)(c + 3 * c_pitch + AT_VW, c31);
}

/* S[0..nr) x [0..Lp) = Q Kt; Lp is a multiple of 2 * AT_VW, nr of 8. */
AT_INL void AT_FN(at_scores)(const at_ws_t *w, const at_dims_t *g, int nr)
{
    const int d = g->d;
    const int64_t Lp = g->Lp;
    for (int qi = 0; qi < nr; qi += AT_QT)
        for (int64_t j = 0; j < Lp; j += 2 * AT_VW)
            AT_FN(at_tile4x2)(w->q + (size_t)qi * d, (size_t)d, w->kt + j, (size_t)Lp, d,
                              w->s + (size_t)qi * Lp + j, (size_t)Lp);
}

/* Softmax numerators of rows [0, nr) in place (keys >= L become 0); inv[r]
 * gets 1 / rowsum. */
AT_INL void AT_FN(at_softmax)(const at_ws_t *w, const at_dims_t *g, int nr)
{
    const int64_t L = g->L, Lp = g->Lp;
    for (int r = 0; r < nr; r++) {
        float *s = w->s + (size_t)r * Lp;
        for (int64_t j = L; j < Lp; j++)
            s[j] = -INFINITY;
        AT_VF m8 = AT_FN(at_ld)(s);
        for (int64_t j = AT_VW; j < Lp; j += AT_VW) {
            const AT_VF sj = AT_FN(at_ld)(s + j);
            const AT_VI gt = sj > m8;
            m8 = (AT_VF)(((AT_VI)sj & gt) | ((AT_VI)m8 & ~gt));
        }
        float m = m8[0];
        for (int k = 1; k < AT_VW; k++)
            m = m8[k] > m ? m8[k] : m;
        AT_VF sum8 = {0};
        for (int64_t j = 0; j < Lp; j += AT_VW) {
            const AT_VF e = AT_FN(at_exp_neg)(AT_FN(at_ld)(s + j) - m);
            AT_FN(at_st)(s + j, e);
            sum8 += e;
        }
        /* Padding keys added exp(-87) ~ 1e-38 each to a sum >= 1: nothing
         * in float; zero them so they drop out of P V. */
        for (int64_t j = L; j < Lp; j++)
            s[j] = 0.0f;
        float sum = 0.0f;
        for (int k = 0; k < AT_VW; k++)
            sum += sum8[k];
        w->inv[r] = 1.0f / sum;
    }
}

/* O[0..nr) x [0..dp) = P Vs; dp is a multiple of 8, hence of AT_VW. */
AT_INL void AT_FN(at_pv)(const at_ws_t *w, const at_dims_t *g, int nr)
{
    const int dp = g->dp, cw = dp / (2 * AT_VW) * (2 * AT_VW);
    const int64_t Lp = g->Lp;
    for (int qi = 0; qi < nr; qi += AT_QT)
        for (int c = 0; c < cw; c += 2 * AT_VW)
            AT_FN(at_tile4x2)(w->s + (size_t)qi * Lp, (size_t)Lp, w->vs + c, (size_t)dp, Lp,
                              w->o + (size_t)qi * dp + c, (size_t)dp);
    if (cw == dp)
        return;
    /* One vector of head dims left: 8 queries at a time. */
    for (int qi = 0; qi < nr; qi += 8) {
        const float *p = w->s + (size_t)qi * Lp;
        AT_VF a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
        const float *vp = w->vs + cw;
        for (int64_t j = 0; j < Lp; j++, vp += dp) {
            const AT_VF v = AT_FN(at_ld)(vp);
            a0 += v * p[j];
            a1 += v * p[Lp + j];
            a2 += v * p[2 * Lp + j];
            a3 += v * p[3 * Lp + j];
            a4 += v * p[4 * Lp + j];
            a5 += v * p[5 * Lp + j];
            a6 += v * p[6 * Lp + j];
            a7 += v * p[7 * Lp + j];
        }
        float *o = w->o + (size_t)qi * dp + cw;
        AT_FN(at_st)(o, a0);
        AT_FN(at_st)(o + dp, a1);
        AT_FN(at_st)(o + 2 * dp, a2);
        AT_FN(at_st)(o + 3 * dp, a3);
        AT_FN(at_st)(o + 4 * dp, a4);
        AT_FN(at_st)(o + 5 * dp, a5);
        AT_FN(at_st)(o + 6 * dp, a6);
        AT_FN(at_st)(o + 7 * dp, a7);
    }
}

/* Queries [q_begin, q_end) of one (batch, head): K/V of that head must
 * already be in the scratch (at_load_kv). qbase points at query row 0 of
 * the head, obase at output row 0 of the head. */
static void AT_FN(at_block_range)(const at_ws_t *w, const at_dims_t *g, const float *qbase,
                                  float *obase, float scale, int64_t q_begin, int64_t q_end)
{
    const int d = g->d, dp = g->dp;
    for (int64_t q0 = q_begin; q0 < q_end; q0 += AT_QB) {
        const int nq = (int)(q_end - q0 < AT_QB ? q_end - q0 : AT_QB);
        /* Rows computed: nq rounded up to the 8-query tiles (zero queries
         * fill the rest), not the whole block, for short tails like 49. */
        const int nr = (nq + 7) / 8 * 8;
        for (int r = 0; r < nr; r++) {
            float *qd = w->q + (size_t)r * d;
            if (r < nq) {
                const float *qs = qbase + (q0 + r) * g->ld;
                for (int k = 0; k < d; k++)
                    qd[k] = qs[k] * scale;
            } else {
                for (int k = 0; k < d; k++)
                    qd[k] = 0.0f;
            }
        }
        AT_FN(at_scores)(w, g, nr);
        AT_FN(at_softmax)(w, g, nr);
        AT_FN(at_pv)(w, g, nr);
        for (int r = 0; r < nq; r++) {
            const float inv = w->inv[r];
            const float *o = w->o + (size_t)r * dp;
            float *dst = obase + (q0 + r) * g->C;
            for (int k = 0; k < d; k++)
                dst[k] = o[k] * inv;
        }
    }
}

#undef AT_VF
#undef AT_VI
#undef AT_INL
#undef AT_SPLAT
