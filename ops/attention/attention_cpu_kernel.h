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

/* S[0..nr) x [0..Lp) = Q Kt; Lp is a multiple of 2 * AT_VW, nr of 8. */
AT_INL void AT_FN(at_scores)(const at_ws_t *w, const at_dims_t *g, int nr)
{
    const int d = g->d;
    const int64_t Lp = g->Lp;
    for (int qi = 0; qi < nr; qi += AT_QT) {
        const float *q0 = w->q + (size_t)qi * d, *q1 = q0 + d, *q2 = q1 + d, *q3 = q2 + d;
        for (int64_t j = 0; j < Lp; j += 2 * AT_VW) {
            AT_VF a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0};
            AT_VF a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
            const float *kp = w->kt + j;
            for (int k = 0; k < d; k++, kp += Lp) {
                const AT_VF k0 = AT_FN(at_ld)(kp), k1 = AT_FN(at_ld)(kp + AT_VW);
                a00 += k0 * q0[k];
                a01 += k1 * q0[k];
                a10 += k0 * q1[k];
                a11 += k1 * q1[k];
                a20 += k0 * q2[k];
                a21 += k1 * q2[k];
                a30 += k0 * q3[k];
                a31 += k1 * q3[k];
            }
            float *s = w->s + (size_t)qi * Lp + j;
            AT_FN(at_st)(s, a00);
            AT_FN(at_st)(s + AT_VW, a01);
            AT_FN(at_st)(s + Lp, a10);
            AT_FN(at_st)(s + Lp + AT_VW, a11);
            AT_FN(at_st)(s + 2 * Lp, a20);
            AT_FN(at_st)(s + 2 * Lp + AT_VW, a21);
            AT_FN(at_st)(s + 3 * Lp, a30);
            AT_FN(at_st)(s + 3 * Lp + AT_VW, a31);
        }
    }
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
    for (int qi = 0; qi < nr; qi += AT_QT) {
        const float *p0 = w->s + (size_t)qi * Lp, *p1 = p0 + Lp, *p2 = p1 + Lp, *p3 = p2 + Lp;
        for (int c = 0; c < cw; c += 2 * AT_VW) {
            AT_VF a00 = {0}, a01 = {0}, a10 = {0}, a11 = {0};
            AT_VF a20 = {0}, a21 = {0}, a30 = {0}, a31 = {0};
            const float *vp = w->vs + c;
            for (int64_t j = 0; j < Lp; j++, vp += dp) {
                const AT_VF v0 = AT_FN(at_ld)(vp), v1 = AT_FN(at_ld)(vp + AT_VW);
                a00 += v0 * p0[j];
                a01 += v1 * p0[j];
                a10 += v0 * p1[j];
                a11 += v1 * p1[j];
                a20 += v0 * p2[j];
                a21 += v1 * p2[j];
                a30 += v0 * p3[j];
                a31 += v1 * p3[j];
            }
            float *o = w->o + (size_t)qi * dp + c;
            AT_FN(at_st)(o, a00);
            AT_FN(at_st)(o + AT_VW, a01);
            AT_FN(at_st)(o + dp, a10);
            AT_FN(at_st)(o + dp + AT_VW, a11);
            AT_FN(at_st)(o + 2 * dp, a20);
            AT_FN(at_st)(o + 2 * dp + AT_VW, a21);
            AT_FN(at_st)(o + 3 * dp, a30);
            AT_FN(at_st)(o + 3 * dp + AT_VW, a31);
        }
    }
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
