/* Double-precision reference of the selective scan. Every formula below is
 * the one of shared/spec/selective_scan.md, in the same order and with the
 * same names, so a reader can check it line by line. */
#include "scan_reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double mvrt_scan_ref_softplus(double v)
{
    return v <= 20.0 ? log1p(exp(v)) : v;
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

int mvrt_scan_ref_check(const mvrt_scan_ref_problem_t *p)
{
    if (!p || p->batch < 1 || p->dim < 1 || p->seqlen < 1 || p->dstate < 1 || p->groups < 1)
        return -1;
    if (p->dim % p->groups != 0)
        return -1;
    if (!p->u || !p->delta || !p->A || !p->B || !p->C)
        return -1;
    return 0;
}

int64_t mvrt_scan_ref_b_numel(const mvrt_scan_ref_problem_t *p)
{
    return p->b_variable ? p->batch * p->groups * p->dstate * p->seqlen : p->dim * p->dstate;
}

int64_t mvrt_scan_ref_c_numel(const mvrt_scan_ref_problem_t *p)
{
    return p->c_variable ? p->batch * p->groups * p->dstate * p->seqlen : p->dim * p->dstate;
}

/* Index of B/C[n, t] for channel d of batch b, constant or variable. */
static int64_t bc_index(const mvrt_scan_ref_problem_t *p, int variable, int64_t b, int64_t d,
                        int64_t n, int64_t t)
{
    if (!variable)
        return d * p->dstate + n;
    int64_t g = d / (p->dim / p->groups);
    return ((b * p->groups + g) * p->dstate + n) * p->seqlen + t;
}

/* delta after bias and (optional) softplus: the δ of the spec. */
static double delta_eff(const mvrt_scan_ref_problem_t *p, int64_t row, int64_t d, int64_t t,
                        double *out_v)
{
    double v = p->delta[row + t] + (p->delta_bias ? p->delta_bias[d] : 0.0);
    if (out_v)
        *out_v = v;
    return p->delta_softplus ? mvrt_scan_ref_softplus(v) : v;
}

int mvrt_scan_ref_forward(const mvrt_scan_ref_problem_t *p, double *out, double *last_state)
{
    if (mvrt_scan_ref_check(p) != 0 || !out)
        return -1;
    const int64_t Bt = p->batch, Dm = p->dim, L = p->seqlen, N = p->dstate;
    double *h = malloc((size_t)N * sizeof *h);
    if (!h)
        return -2;
    for (int64_t b = 0; b < Bt; b++) {
        for (int64_t d = 0; d < Dm; d++) {
            const int64_t row = (b * Dm + d) * L;
            for (int64_t n = 0; n < N; n++)
                h[n] = 0.0;                                   /* h_{-1} = 0 */
            for (int64_t t = 0; t < L; t++) {
                const double dt = delta_eff(p, row, d, t, NULL);
                const double u = p->u[row + t];
                double y = 0.0;
                for (int64_t n = 0; n < N; n++) {
                    const double a = exp(dt * p->A[d * N + n]);
                    const double bb = dt * p->B[bc_index(p, p->b_variable, b, d, n, t)] * u;
                    h[n] = a * h[n] + bb;
                    y += p->C[bc_index(p, p->c_variable, b, d, n, t)] * h[n];
                }
                if (p->D)
                    y += p->D[d] * u;
                if (p->z) {
                    const double z = p->z[row + t];
                    y *= z * sigmoid(z);                      /* silu(z) */
                }
                out[row + t] = y;
            }
            if (last_state)
                for (int64_t n = 0; n < N; n++)
                    last_state[(b * Dm + d) * N + n] = h[n];  /* the true h_{L-1} */
        }
    }
    free(h);
    return 0;
}

int mvrt_scan_ref_backward(const mvrt_scan_ref_problem_t *p, const double *dout,
                           const mvrt_scan_ref_grads_t *g)
{
    if (mvrt_scan_ref_check(p) != 0 || !dout || !g || !g->du || !g->ddelta || !g->dA ||
        !g->dB || !g->dC || (p->D && !g->dD) || (p->z && !g->dz) ||
        (p->delta_bias && !g->ddelta_bias))
        return -1;
    const int64_t Bt = p->batch, Dm = p->dim, L = p->seqlen, N = p->dstate;

    /* Per (b, d) row: every state h_t (t = -1..L-1, so h[0] = h_{-1} = 0),
     * every a_t, and the adjoint λ. */
    double *hs = malloc((size_t)(L + 1) * (size_t)N * sizeof *hs);
    double *as = malloc((size_t)L * (size_t)N * sizeof *as);
    double *lam = malloc((size_t)N * sizeof *lam);
    double *gs = malloc((size_t)L * sizeof *gs);
    if (!hs || !as || !lam || !gs) {
        free(hs); free(as); free(lam); free(gs);
        return -2;
    }

    memset(g->dA, 0, (size_t)(Dm * N) * sizeof(double));
    memset(g->dB, 0, (size_t)mvrt_scan_ref_b_numel(p) * sizeof(double));
    memset(g->dC, 0, (size_t)mvrt_scan_ref_c_numel(p) * sizeof(double));
    if (p->D)
        memset(g->dD, 0, (size_t)Dm * sizeof(double));
    if (p->delta_bias)
        memset(g->ddelta_bias, 0, (size_t)Dm * sizeof(double));

    for (int64_t b = 0; b < Bt; b++) {
        for (int64_t d = 0; d < Dm; d++) {
            const int64_t row = (b * Dm + d) * L;

            /* Forward again, keeping every state. */
            for (int64_t n = 0; n < N; n++)
                hs[n] = 0.0;
            for (int64_t t = 0; t < L; t++) {
                const double dt = delta_eff(p, row, d, t, NULL);
                const double u = p->u[row + t];
                double y = 0.0;
                for (int64_t n = 0; n < N; n++) {
                    const double a = exp(dt * p->A[d * N + n]);
                    const double bb = dt * p->B[bc_index(p, p->b_variable, b, d, n, t)] * u;
                    as[t * N + n] = a;
                    hs[(t + 1) * N + n] = a * hs[t * N + n] + bb;
                    y += p->C[bc_index(p, p->c_variable, b, d, n, t)] * hs[(t + 1) * N + n];
                }
                if (p->D)
                    y += p->D[d] * u;                 /* y: un-gated output, D·u included */
                double gt = dout[row + t];
                if (p->z) {
                    const double z = p->z[row + t];
                    const double s = sigmoid(z);
                    g->dz[row + t] = gt * y * s * (1.0 + z * (1.0 - s));
                    gt *= z * s;                      /* g <- g · silu(z) */
                }
                gs[t] = gt;
            }

            /* Backward over t with the adjoint λ_t = C_t g_t + a_{t+1} λ_{t+1}. */
            for (int64_t n = 0; n < N; n++)
                lam[n] = 0.0;                         /* λ_L = 0 (a_L unused) */
            for (int64_t t = L - 1; t >= 0; t--) {
                double v;
                const double dt = delta_eff(p, row, d, t, &v);
                const double u = p->u[row + t];
                const double gt = gs[t];
                double du = p->D ? p->D[d] * gt : 0.0;
                double ddt = 0.0;
                for (int64_t n = 0; n < N; n++) {
                    const int64_t bi = bc_index(p, p->b_variable, b, d, n, t);
                    const int64_t ci = bc_index(p, p->c_variable, b, d, n, t);
                    const double a_next = (t + 1 < L) ? as[(t + 1) * N + n] : 0.0;
                    lam[n] = p->C[ci] * gt + a_next * lam[n];
                    const double h_prev = hs[t * N + n];    /* h_{t-1} */
                    const double h_cur = hs[(t + 1) * N + n]; /* h_t */
                    const double a = as[t * N + n];
                    const double An = p->A[d * N + n];
                    du += lam[n] * p->B[bi] * dt;
                    ddt += lam[n] * (p->B[bi] * u + An * a * h_prev);
                    g->dA[d * N + n] += lam[n] * dt * a * h_prev;
                    g->dB[bi] += lam[n] * dt * u;
                    g->dC[ci] += gt * h_cur;
                }
                double dv = ddt;
                if (p->delta_softplus && v <= 20.0)
                    dv = ddt * sigmoid(v);            /* softplus'(v) = σ(v) */
                g->du[row + t] = du;
                g->ddelta[row + t] = dv;
                if (p->delta_bias)
                    g->ddelta_bias[d] += dv;
                if (p->D)
                    g->dD[d] += gt * u;
            }
        }
    }
    free(hs); free(as); free(lam); free(gs);
    return 0;
}
