/* Kernel-level test of the CPU selective scan (ops/selective_scan/scan_cpu.h):
 * fills mvrt_scan_params_t by hand and compares forward and backward with a
 * straightforward double-precision loop written here, for edge shapes,
 * dtypes, strides and every instruction set the CPU has; then checks that
 * the backward is bitwise identical for 1, 2 and 3 threads.
 *
 * Usage: test_scan_cpu_kernels [--quick]   (exit 0 pass, 1 fail) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/cpu_half.h"
#include "ops/selective_scan/scan_cpu.h"

typedef struct tcase {
    const char *name;
    int Bt, Dm, L, N, G;
    int bvar, cvar, hasD, hasZ, hasBias, softplus;
    int dtype;
    double dlo, dhi;   /* delta range */
    double alo, ahi;   /* A range */
    int lstride;       /* element stride along L (1 = contiguous) */
    int bpad;          /* extra elements between batch rows */
    int gstride0;      /* G == 1 given as rank-3 (Bt, N, L): group stride 0 */
} tcase_t;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(double lo, double hi)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    double x = (double)(rng_state >> 11) / 9007199254740992.0;
    return lo + (hi - lo) * x;
}

static size_t esz(int dt) { return dt == MVRT_SCAN_F32 ? 4 : 2; }

static float rd(const void *p, int64_t i, int dt)
{
    if (dt == MVRT_SCAN_F32)
        return ((const float *)p)[i];
    if (dt == MVRT_SCAN_BF16)
        return mvrt_bf16_to_f32(((const uint16_t *)p)[i]);
    return mvrt_f16_to_f32(((const uint16_t *)p)[i]);
}

static void wr(void *p, int64_t i, float v, int dt)
{
    if (dt == MVRT_SCAN_F32)
        ((float *)p)[i] = v;
    else if (dt == MVRT_SCAN_BF16)
        ((uint16_t *)p)[i] = mvrt_f32_to_bf16(v);
    else
        ((uint16_t *)p)[i] = mvrt_f32_to_f16(v);
}

/* One strided operand in host memory. */
typedef struct arr {
    void *data;
    size_t bytes;
    int dt;
    int64_t st[4];
    int rank;
    int64_t shape[4];
} arr_t;

static int64_t arr_index(const arr_t *a, const int64_t *ix)
{
    int64_t o = 0;
    for (int k = 0; k < a->rank; k++)
        o += ix[k] * a->st[k];
    return o;
}

#define SENTINEL 1234.5f

static void arr_make(arr_t *a, int dt, int rank, const int64_t *shape, int lstride, int bpad,
                     int gstride0)
{
    memset(a, 0, sizeof *a);
    a->dt = dt;
    a->rank = rank;
    int64_t s = lstride;
    for (int k = rank - 1; k >= 0; k--) {
        a->shape[k] = shape[k];
        a->st[k] = s;
        s *= shape[k];
    }
    if (rank >= 3)
        a->st[0] += bpad;
    if (rank == 4 && gstride0 && shape[1] == 1)
        a->st[1] = 0;
    int64_t maxoff = 0;
    for (int k = 0; k < rank; k++)
        maxoff += (shape[k] - 1) * a->st[k];
    size_t n = (size_t)maxoff + 1;
    a->bytes = n * esz(dt);
    a->data = malloc(a->bytes);
    for (size_t i = 0; i < n; i++)
        wr(a->data, (int64_t)i, SENTINEL, dt);
}

static void arr_free(arr_t *a) { free(a->data); }

static mvrt_scan_operand_t arr_op(const arr_t *a)
{
    mvrt_scan_operand_t o;
    memset(&o, 0, sizeof o);
    o.data = a->data;
    for (int k = 0; k < 4; k++)
        o.stride[k] = a->st[k];
    return o;
}

/* Fills every logical element with random values (rounded to the dtype) and
 * returns them as doubles in row-major logical order. */
static double *arr_fill(arr_t *a, double lo, double hi)
{
    int64_t n = 1;
    for (int k = 0; k < a->rank; k++)
        n *= a->shape[k];
    double *v = malloc((size_t)n * sizeof *v);
    int64_t ix[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i;
        for (int k = a->rank - 1; k >= 0; k--) {
            ix[k] = r % a->shape[k];
            r /= a->shape[k];
        }
        int64_t o = arr_index(a, ix);
        wr(a->data, o, (float)urand(lo, hi), a->dt);
        v[i] = rd(a->data, o, a->dt);
    }
    return v;
}

/* Logical elements as floats; also checks that padding keeps the sentinel. */
static float *arr_read(const arr_t *a, int *pad_ok)
{
    int64_t n = 1;
    for (int k = 0; k < a->rank; k++)
        n *= a->shape[k];
    float *v = malloc((size_t)n * sizeof *v);
    size_t tot = a->bytes / esz(a->dt);
    char *touched = calloc(tot, 1);
    int64_t ix[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i;
        for (int k = a->rank - 1; k >= 0; k--) {
            ix[k] = r % a->shape[k];
            r /= a->shape[k];
        }
        int64_t o = arr_index(a, ix);
        v[i] = rd(a->data, o, a->dt);
        touched[o] = 1;
    }
    *pad_ok = 1;
    uint32_t sent;                          /* the sentinel as stored in this dtype */
    wr(&sent, 0, SENTINEL, a->dt);
    const float sentinel = rd(&sent, 0, a->dt);
    for (size_t i = 0; i < tot; i++)
        if (!touched[i] && rd(a->data, (int64_t)i, a->dt) != sentinel)
            *pad_ok = 0;
    free(touched);
    return v;
}

/* ---- double-precision reference (straightforward, written for this test) */
typedef struct refio {
    /* inputs */
    double *u, *delta, *A, *B, *C, *D, *z, *bias, *dout;
    /* outputs */
    double *out, *last, *du, *ddelta, *dA, *dB, *dC, *dD, *dz, *dbias;
} refio_t;

static double sp(double v) { return v <= 20.0 ? log1p(exp(v)) : v; }
static double sg(double v) { return 1.0 / (1.0 + exp(-v)); }

static void reference(const tcase_t *c, refio_t *r)
{
    const int Bt = c->Bt, Dm = c->Dm, L = c->L, N = c->N, G = c->G, cpg = Dm / G;
    double *hs = malloc((size_t)(L + 1) * N * sizeof *hs);
    double *dts = malloc((size_t)L * sizeof *dts);
    double *ys = malloc((size_t)L * sizeof *ys);
    double *lam = malloc((size_t)N * sizeof *lam);
    size_t nA = (size_t)Dm * N;
    memset(r->dA, 0, nA * sizeof(double));
    size_t nB = c->bvar ? (size_t)Bt * G * N * L : nA, nC = c->cvar ? (size_t)Bt * G * N * L : nA;
    memset(r->dB, 0, nB * sizeof(double));
    memset(r->dC, 0, nC * sizeof(double));
    memset(r->dD, 0, (size_t)Dm * sizeof(double));
    memset(r->dbias, 0, (size_t)Dm * sizeof(double));
    for (int b = 0; b < Bt; b++) {
        for (int d = 0; d < Dm; d++) {
            const int g = d / cpg;
            const size_t row = ((size_t)b * Dm + d) * L;
#define BV(n, t) (c->bvar ? r->B[(((size_t)b * G + g) * N + (n)) * L + (t)] : r->B[(size_t)d * N + (n)])
#define CV(n, t) (c->cvar ? r->C[(((size_t)b * G + g) * N + (n)) * L + (t)] : r->C[(size_t)d * N + (n)])
            double Dd = c->hasD ? r->D[d] : 0.0;
            for (int n = 0; n < N; n++)
                hs[n] = 0.0;
            for (int t = 0; t < L; t++) {
                double v = r->delta[row + t] + (c->hasBias ? r->bias[d] : 0.0);
                double dt = c->softplus ? sp(v) : v;
                dts[t] = dt;
                double y = Dd * r->u[row + t];
                for (int n = 0; n < N; n++) {
                    double h = exp(dt * r->A[(size_t)d * N + n]) * hs[(size_t)t * N + n] +
                               dt * BV(n, t) * r->u[row + t];
                    hs[(size_t)(t + 1) * N + n] = h;
                    y += CV(n, t) * h;
                }
                ys[t] = y;
                r->out[row + t] = c->hasZ ? y * r->z[row + t] * sg(r->z[row + t]) : y;
            }
            for (int n = 0; n < N; n++)
                r->last[((size_t)b * Dm + d) * N + n] = hs[(size_t)L * N + n];
            /* backward */
            for (int n = 0; n < N; n++)
                lam[n] = 0.0;
            for (int t = L - 1; t >= 0; t--) {
                double gv = r->dout[row + t];
                if (c->hasZ) {
                    double zz = r->z[row + t], s = sg(zz);
                    r->dz[row + t] = gv * ys[t] * s * (1.0 + zz * (1.0 - s));
                    gv *= zz * s;
                }
                double dt = dts[t], u = r->u[row + t];
                double du = Dd * gv, ddt = 0.0;
                for (int n = 0; n < N; n++) {
                    double a_next = t + 1 < L ? exp(dts[t + 1] * r->A[(size_t)d * N + n]) : 0.0;
                    lam[n] = CV(n, t) * gv + a_next * lam[n];
                    double An = r->A[(size_t)d * N + n], a = exp(dt * An);
                    double hp = hs[(size_t)t * N + n];
                    du += lam[n] * BV(n, t) * dt;
                    ddt += lam[n] * (BV(n, t) * u + An * a * hp);
                    r->dA[(size_t)d * N + n] += lam[n] * dt * a * hp;
                    double vb = lam[n] * dt * u, vc = gv * hs[(size_t)(t + 1) * N + n];
                    if (c->bvar)
                        r->dB[(((size_t)b * G + g) * N + n) * L + t] += vb;
                    else
                        r->dB[(size_t)d * N + n] += vb;
                    if (c->cvar)
                        r->dC[(((size_t)b * G + g) * N + n) * L + t] += vc;
                    else
                        r->dC[(size_t)d * N + n] += vc;
                }
                double v = r->delta[row + t] + (c->hasBias ? r->bias[d] : 0.0);
                double dv = (c->softplus && v <= 20.0) ? ddt * sg(v) : ddt;
                r->du[row + t] = du;
                r->ddelta[row + t] = dv;
                r->dD[d] += gv * u;
                r->dbias[d] += dv;
            }
#undef BV
#undef CV
        }
    }
    free(hs);
    free(dts);
    free(ys);
    free(lam);
}

/* ---- comparison ---------------------------------------------------------- */
static int compare(const char *cname, const char *isa, const char *what, const float *got,
                   const double *ref, size_t n, double rtol, double atol_rel, int pad_ok)
{
    double scale = 0.0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(ref[i]));
    double atol = atol_rel * (scale > 1e-30 ? scale : 1.0);
    double worst = 0.0;
    size_t wi = 0;
    int bad = !pad_ok;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        double lim = atol + rtol * fabs(ref[i]);
        if (!(e <= lim)) {
            if (!bad || e / lim > worst)
                wi = i;
            bad = 1;
        }
        if (e / lim > worst)
            worst = e / lim, wi = i;
    }
    if (bad) {
        printf("FAIL %-26s %-8s %-7s elem %zu got %.9g ref %.9g (err/limit %.3g)%s\n", cname, isa,
               what, wi, got[wi], ref[wi], worst, pad_ok ? "" : " [padding overwritten]");
        return 1;
    }
    return 0;
}

/* ---- one problem --------------------------------------------------------- */
typedef struct prob {
    tcase_t c;
    arr_t u, delta, A, B, C, D, z, bias, out, last, dout, du, ddelta, dA, dB, dC, dD, dz, dbias;
    refio_t r;
    mvrt_scan_params_t p;
} prob_t;

static void prob_init(prob_t *P, const tcase_t *c)
{
    memset(P, 0, sizeof *P);
    P->c = *c;
    const int dt = c->dtype, ls = c->lstride, bp = c->bpad;
    int64_t sx[3] = {c->Bt, c->Dm, c->L};
    int64_t sA[2] = {c->Dm, c->N};
    int64_t sV[4] = {c->Bt, c->G, c->N, c->L};
    int64_t sD[1] = {c->Dm};
    int64_t sLs[3] = {c->Bt, c->Dm, c->N};
    refio_t *r = &P->r;
    arr_make(&P->u, dt, 3, sx, ls, bp, 0);
    r->u = arr_fill(&P->u, -1, 1);
    arr_make(&P->delta, dt, 3, sx, ls, bp, 0);
    r->delta = arr_fill(&P->delta, c->dlo, c->dhi);
    arr_make(&P->A, MVRT_SCAN_F32, 2, sA, 1, 0, 0);
    r->A = arr_fill(&P->A, c->alo, c->ahi);
    if (c->bvar)
        arr_make(&P->B, dt, 4, sV, ls, bp, c->gstride0);
    else
        arr_make(&P->B, MVRT_SCAN_F32, 2, sA, 1, 0, 0);
    r->B = arr_fill(&P->B, -1, 1);
    if (c->cvar)
        arr_make(&P->C, dt, 4, sV, ls, bp, c->gstride0);
    else
        arr_make(&P->C, MVRT_SCAN_F32, 2, sA, 1, 0, 0);
    r->C = arr_fill(&P->C, -1, 1);
    if (c->hasD) {
        arr_make(&P->D, MVRT_SCAN_F32, 1, sD, 1, 0, 0);
        r->D = arr_fill(&P->D, -1, 1);
        arr_make(&P->dD, MVRT_SCAN_F32, 1, sD, 1, 0, 0);
    }
    if (c->hasZ) {
        arr_make(&P->z, dt, 3, sx, ls, bp, 0);
        r->z = arr_fill(&P->z, -2, 2);
        arr_make(&P->dz, dt, 3, sx, ls, bp, 0);
    }
    if (c->hasBias) {
        arr_make(&P->bias, MVRT_SCAN_F32, 1, sD, 1, 0, 0);
        r->bias = arr_fill(&P->bias, -0.5, 0.5);
        arr_make(&P->dbias, MVRT_SCAN_F32, 1, sD, 1, 0, 0);
    }
    arr_make(&P->dout, dt, 3, sx, ls, bp, 0);
    r->dout = arr_fill(&P->dout, -1, 1);
    arr_make(&P->out, dt, 3, sx, ls, bp, 0);
    arr_make(&P->last, MVRT_SCAN_F32, 3, sLs, 1, bp, 0);
    arr_make(&P->du, dt, 3, sx, ls, bp, 0);
    arr_make(&P->ddelta, dt, 3, sx, ls, bp, 0);
    arr_make(&P->dA, MVRT_SCAN_F32, 2, sA, 1, 0, 0);
    if (c->bvar)
        arr_make(&P->dB, dt, 4, sV, ls, bp, c->gstride0);
    else
        arr_make(&P->dB, MVRT_SCAN_F32, 2, sA, 1, 0, 0);
    if (c->cvar)
        arr_make(&P->dC, dt, 4, sV, ls, bp, c->gstride0);
    else
        arr_make(&P->dC, MVRT_SCAN_F32, 2, sA, 1, 0, 0);

    size_t nx = (size_t)c->Bt * c->Dm * c->L, nA = (size_t)c->Dm * c->N;
    size_t nV = (size_t)c->Bt * c->G * c->N * c->L;
    r->out = calloc(nx, sizeof(double));
    r->last = calloc((size_t)c->Bt * c->Dm * c->N, sizeof(double));
    r->du = calloc(nx, sizeof(double));
    r->ddelta = calloc(nx, sizeof(double));
    r->dz = calloc(nx, sizeof(double));
    r->dA = calloc(nA, sizeof(double));
    r->dB = calloc(c->bvar ? nV : nA, sizeof(double));
    r->dC = calloc(c->cvar ? nV : nA, sizeof(double));
    r->dD = calloc((size_t)c->Dm, sizeof(double));
    r->dbias = calloc((size_t)c->Dm, sizeof(double));
    reference(c, r);

    mvrt_scan_params_t *p = &P->p;
    p->batch = c->Bt;
    p->dim = c->Dm;
    p->seqlen = c->L;
    p->dstate = c->N;
    p->groups = c->G;
    p->input_dtype = dt;
    p->b_variable = c->bvar;
    p->c_variable = c->cvar;
    p->delta_softplus = c->softplus;
    p->u = arr_op(&P->u);
    p->delta = arr_op(&P->delta);
    p->A = arr_op(&P->A);
    p->B = arr_op(&P->B);
    p->C = arr_op(&P->C);
    p->D = arr_op(&P->D);
    p->z = arr_op(&P->z);
    p->delta_bias = arr_op(&P->bias);
    p->out = arr_op(&P->out);
    p->last_state = arr_op(&P->last);
    p->dout = arr_op(&P->dout);
    p->du = arr_op(&P->du);
    p->ddelta = arr_op(&P->ddelta);
    p->dA = arr_op(&P->dA);
    p->dB = arr_op(&P->dB);
    p->dC = arr_op(&P->dC);
    p->dD = arr_op(&P->dD);
    p->dz = arr_op(&P->dz);
    p->ddelta_bias = arr_op(&P->dbias);
}

static void prob_free(prob_t *P)
{
    arr_t *as[] = {&P->u, &P->delta, &P->A, &P->B, &P->C, &P->D, &P->z, &P->bias, &P->out,
                   &P->last, &P->dout, &P->du, &P->ddelta, &P->dA, &P->dB, &P->dC, &P->dD,
                   &P->dz, &P->dbias};
    for (size_t i = 0; i < sizeof as / sizeof as[0]; i++)
        arr_free(as[i]);
    double *ds[] = {P->r.u, P->r.delta, P->r.A, P->r.B, P->r.C, P->r.D, P->r.z, P->r.bias,
                    P->r.dout, P->r.out, P->r.last, P->r.du, P->r.ddelta, P->r.dA, P->r.dB,
                    P->r.dC, P->r.dD, P->r.dz, P->r.dbias};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
        free(ds[i]);
}

static void run_bwd(prob_t *P, int threads)
{
    size_t ws = mvrt_cpu_scan_bwd_workspace_size(&P->p, threads);
    void *w = malloc(ws + 1);
    P->p.workspace = (char *)w + 1; /* deliberately misaligned */
    P->p.workspace_bytes = ws;
    mvrt_cpu_scan_bwd(&P->p, threads);
    free(w);
    P->p.workspace = NULL;
    P->p.workspace_bytes = 0;
}

static int check_arr(const prob_t *P, const char *isa, const char *what, const arr_t *a,
                     const double *ref, double rtol, double atol)
{
    int pad_ok;
    float *g = arr_read(a, &pad_ok);
    size_t n = 1;
    for (int k = 0; k < a->rank; k++)
        n *= (size_t)a->shape[k];
    int f = compare(P->c.name, isa, what, g, ref, n, rtol, atol, pad_ok);
    free(g);
    return f;
}

static int run_case(const tcase_t *c, const char *isa)
{
    prob_t P;
    prob_init(&P, c);
    int fails = 0;
    /* tolerances: outputs in the input dtype include its rounding */
    double rt = 1e-4, at = 2e-5;          /* f32 out */
    if (c->dtype == MVRT_SCAN_F16)
        rt = 2e-3, at = 1e-3;
    if (c->dtype == MVRT_SCAN_BF16)
        rt = 1.6e-2, at = 8e-3;
    double grt = fmax(rt, 5e-4), gat = fmax(at, 1e-4);   /* dtype gradients */
    double frt = 1e-3, fat = 2e-4;                       /* f32 reductions over (b,t) */

    mvrt_cpu_scan_fwd(&P.p, 2);
    fails += check_arr(&P, isa, "out", &P.out, P.r.out, rt, at);
    fails += check_arr(&P, isa, "last", &P.last, P.r.last, 1e-4, 2e-5);
    run_bwd(&P, 2);
    fails += check_arr(&P, isa, "du", &P.du, P.r.du, grt, gat);
    fails += check_arr(&P, isa, "ddelta", &P.ddelta, P.r.ddelta, 2 * grt, 2 * gat);
    fails += check_arr(&P, isa, "dA", &P.dA, P.r.dA, frt, fat);
    fails += check_arr(&P, isa, "dB", &P.dB, P.r.dB, c->bvar ? grt : frt, c->bvar ? gat : fat);
    fails += check_arr(&P, isa, "dC", &P.dC, P.r.dC, c->cvar ? grt : frt, c->cvar ? gat : fat);
    if (c->hasD)
        fails += check_arr(&P, isa, "dD", &P.dD, P.r.dD, frt, fat);
    if (c->hasZ)
        fails += check_arr(&P, isa, "dz", &P.dz, P.r.dz, grt, gat);
    if (c->hasBias)
        fails += check_arr(&P, isa, "dbias", &P.dbias, P.r.dbias, frt, fat);
    if (!fails)
        printf("ok   %-26s %s\n", c->name, isa);
    prob_free(&P);
    return fails;
}

/* Backward with 1, 2 and 3 threads must give the same bits. */
static int run_determinism(const tcase_t *c, const char *isa)
{
    prob_t P;
    prob_init(&P, c);
    arr_t *outs[] = {&P.du, &P.ddelta, &P.dA, &P.dB, &P.dC, &P.dD, &P.dz, &P.dbias, &P.out};
    const int nouts = (int)(sizeof outs / sizeof outs[0]);
    void *first[9] = {0};
    int fails = 0;
    const int threads[] = {1, 2, 3};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < nouts; i++)
            if (outs[i]->data)
                memset(outs[i]->data, 0x7f, outs[i]->bytes);
        mvrt_cpu_scan_fwd(&P.p, threads[k]);
        run_bwd(&P, threads[k]);
        for (int i = 0; i < nouts; i++) {
            if (!outs[i]->data)
                continue;
            if (k == 0) {
                first[i] = malloc(outs[i]->bytes);
                memcpy(first[i], outs[i]->data, outs[i]->bytes);
            } else if (memcmp(first[i], outs[i]->data, outs[i]->bytes)) {
                printf("FAIL determinism %s %s: output %d differs between 1 and %d threads\n",
                       c->name, isa, i, threads[k]);
                fails++;
            }
        }
    }
    /* and it must also be right */
    fails += check_arr(&P, isa, "dB(det)", &P.dB, P.r.dB, 5e-4, 1e-4);
    for (int i = 0; i < nouts; i++)
        free(first[i]);
    if (!fails)
        printf("ok   determinism %-14s %s (1/2/3 threads bitwise equal)\n", c->name, isa);
    prob_free(&P);
    return fails;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const int F32 = MVRT_SCAN_F32, F16 = MVRT_SCAN_F16, BF16 = MVRT_SCAN_BF16;
    /*  name                 Bt  Dm    L   N  G bv cv  D  z bi sp dtype   dlo  dhi   alo   ahi ls bp g0 */
    const tcase_t cases[] = {
        {"L1 Dm5 N1",           2,   5,    1,   1, 1, 1, 1, 1, 0, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 1, 0, 1},
        {"L7 Dm17 N8 z",        2,  17,    7,   8, 1, 1, 1, 1, 1, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 1, 0, 1},
        {"L33 Dm100 N16 G2",    1, 100,   33,  16, 2, 1, 1, 1, 0, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 1, 0, 0},
        {"G=Dm=6 (1 ch/group)", 2,   6,   45,   8, 6, 1, 1, 1, 1, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 1, 0, 0},
        {"G3 vB cC Dm51 z",     2,  51,   70,  16, 3, 1, 0, 1, 1, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 1, 0, 0},
        {"L196 Dm160 N8 MV",    2, 160,  196,   8, 1, 1, 1, 1, 0, 1, 1, F32, -4.0, 0.0, -4.0, -0.5, 1, 0, 1},
        {"L100 Dm1 N16",        3,   1,  100,  16, 1, 1, 1, 1, 1, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 1, 0, 0},
        {"L4100 Dm5 N4 z",      1,   5, 4100,   4, 1, 1, 1, 1, 1, 1, 1, F32, -4.0, -1.0, -1.0, -0.05, 1, 0, 0},
        {"L300 Dm17 N64 cB vC", 2,  17,  300,  64, 1, 0, 1, 1, 0, 1, 1, F32, -3.0, 0.0, -3.0, -0.1, 1, 0, 0},
        {"L40 Dm3 N256 vB cC",  1,   3,   40, 256, 1, 1, 0, 0, 0, 0, 0, F32, 0.0, 0.2, -1.0, -0.01, 1, 0, 0},
        {"L50 Dm33 N16 cBC z",  2,  33,   50,  16, 1, 0, 0, 1, 1, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 1, 0, 0},
        {"no D/z/bias, no sp",  2,  20,   65,   8, 2, 1, 1, 0, 0, 0, 0, F32, 0.0, 0.3, -2.0, -0.1, 1, 0, 0},
        {"delta>20 underflow",  2,  18,   40,   8, 1, 1, 1, 1, 1, 1, 1, F32, 19.0, 26.0, -9.0, -0.01, 1, 0, 0},
        {"exp underflow",       1,  16,   30,   8, 1, 1, 1, 1, 0, 0, 1, F32, 1.0, 4.0, -80.0, -20.0, 1, 0, 0},
        {"strided L x2 bpad",   2,  19,   37,   8, 1, 1, 1, 1, 1, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 2, 5, 0},
        {"strided bpad G2",     2,  32,   70,  16, 2, 1, 1, 1, 0, 1, 1, F32, -2.0, 1.0, -2.0, -0.1, 1, 7, 0},
        {"f16 L196 Dm40 N8",    2,  40,  196,   8, 1, 1, 1, 1, 1, 1, 1, F16, -3.0, 0.0, -3.0, -0.1, 1, 0, 1},
        {"f16 strided cB",      2,  21,   45,  16, 1, 0, 1, 1, 0, 1, 1, F16, -3.0, 0.0, -3.0, -0.1, 3, 2, 0},
        {"bf16 L100 Dm33 N16",  2,  33,  100,  16, 1, 1, 1, 1, 1, 1, 1, BF16, -3.0, 0.0, -3.0, -0.1, 1, 0, 0},
        {"bf16 G2 strided",     1,  48,   70,   8, 2, 1, 1, 0, 0, 0, 1, BF16, -3.0, 0.0, -3.0, -0.1, 2, 3, 0},
    };
    /* L = 1100 > the backward chunk for N = 16 on every ISA: several chunks */
    const tcase_t det = {"det L1100 Dm40 N16 G2", 3, 40, 1100, 16, 2, 1, 1, 1, 1, 1, 1, F32,
                         -3.0, 0.0, -2.0, -0.1, 1, 0, 0};
    const tcase_t det_c = {"det const B/C", 5, 24, 90, 8, 1, 0, 0, 1, 0, 1, 1, F32,
                           -3.0, 0.0, -2.0, -0.1, 1, 0, 0};
    const char *isas[] = {"avx512", "avx2", "generic"};
    int fails = 0, ran = 0;
    printf("best ISA: %s (%d lanes)\n", mvrt_cpu_scan_isa(), mvrt_cpu_scan_lanes());
    for (int k = 0; k < 3; k++) {
        if (mvrt_cpu_scan_force_isa(isas[k]) != 0) {
            printf("skip ISA %s (not supported by this CPU)\n", isas[k]);
            continue;
        }
        ran++;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (quick && cases[i].L > 1000)
                continue;
            fails += run_case(&cases[i], isas[k]);
        }
        fails += run_determinism(&det, isas[k]);
        fails += run_determinism(&det_c, isas[k]);
    }
    mvrt_cpu_scan_force_isa(NULL);
    if (mvrt_cpu_scan_force_isa("no-such-isa") != -1) {
        printf("FAIL force_isa accepted an unknown name\n");
        fails++;
    }
    if (!ran) {
        printf("FAIL no ISA could be run\n");
        return 1;
    }
    printf("%s: %d failure(s)\n", fails ? "FAILED" : "PASSED", fails);
    return fails ? 1 : 0;
}
