/* The selective scan with a complex A on random problems, through the
 * public API, against references written here from the spec (section
 * "Complex A" of shared/spec/selective_scan.md), not from the kernel:
 * - forward (out, last_state): a float64 recurrence in C99 complex
 *   arithmetic on the same float32 inputs; tolerance 1e-4 of the largest
 *   |value| plus 1e-4 relative;
 * - every gradient: central finite differences of that float64 loss
 *   sum(out * dout) at 8 random coordinates of each input (the real and
 *   imaginary parts of complex tensors perturbed as their stored floats:
 *   dL/dre + i dL/dim, PyTorch's convention), step 1e-4; tolerance 2e-3
 *   of the gradient tensor's largest |value| plus 2e-3 relative. The
 *   finite differences check the gradient formulas, which the kernel
 *   derives by hand, independently of them.
 * Problems cover variable and constant B / C, groups, z, D, delta_bias,
 * softplus on and off, L across the backward's 64-step chunks, N 1..200,
 * many channels per group at a large batch (the GPU kernels' layouts);
 * and the backward must be bitwise the same with 1 and 3 threads as with
 * the backend's default.
 * usage: test_scan_complex --backend NAME (exit 77 when unavailable; a
 * backend that refuses complex A with MVRT_ERR_UNSUPPORTED also skips). */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt/mvrt.h"

typedef struct prob {
    int64_t Bt, Dm, L, N, G;
    int bvar, cvar, has_d, has_z, has_bias, softplus;
} prob_t;

enum { I_U, I_DELTA, I_A, I_B, I_C, I_D, I_Z, I_BIAS, NIN };
static const char *const names[NIN] = {"u", "delta", "A", "B", "C", "D", "z", "delta_bias"};

typedef struct data {
    float *in[NIN];
    int64_t n[NIN]; /* floats (complex tensors: 2 per element) */
    float *dout;
} data_t;

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static int failures;

static double complex bc_value(const prob_t *p, const float *v, int variable, int64_t b, int64_t g, int64_t d,
                               int64_t n, int64_t t)
{
    if (variable) {
        const float *row = v + ((b * p->G + g) * p->N + n) * 2 * p->L;
        return row[2 * t] + I * row[2 * t + 1];
    }
    return v[2 * (d * p->N + n)] + I * v[2 * (d * p->N + n) + 1];
}

/* float64 forward: returns sum(out * dout); out / last may be NULL. */
static double ref_loss(const prob_t *p, const data_t *x, double *out, double complex *last)
{
    double loss = 0.0;
    double complex h[MVRT_SCAN_MAX_DSTATE];
    const int64_t per_group = p->Dm / p->G;
    for (int64_t b = 0; b < p->Bt; b++)
        for (int64_t d = 0; d < p->Dm; d++) {
            const int64_t g = d / per_group;
            for (int64_t n = 0; n < p->N; n++)
                h[n] = 0.0;
            for (int64_t t = 0; t < p->L; t++) {
                const int64_t i = (b * p->Dm + d) * p->L + t;
                double v = x->in[I_DELTA][i] + (p->has_bias ? x->in[I_BIAS][d] : 0.0);
                const double dt = p->softplus ? (v <= 20.0 ? log1p(exp(v)) : v) : v;
                const double u = x->in[I_U][i];
                double complex acc = 0.0;
                for (int64_t n = 0; n < p->N; n++) {
                    const float *a = x->in[I_A] + 2 * (d * p->N + n);
                    const double complex A = a[0] + I * a[1];
                    h[n] = cexp(dt * A) * h[n] + dt * u * bc_value(p, x->in[I_B], p->bvar, b, g, d, n, t);
                    acc += h[n] * bc_value(p, x->in[I_C], p->cvar, b, g, d, n, t);
                }
                double y = 2.0 * creal(acc) + (p->has_d ? x->in[I_D][d] * u : 0.0);
                if (p->has_z) {
                    const double z = x->in[I_Z][i];
                    y *= z / (1.0 + exp(-z));
                }
                if (out)
                    out[i] = y;
                loss += y * x->dout[i];
            }
            if (last)
                for (int64_t n = 0; n < p->N; n++)
                    last[(b * p->Dm + d) * p->N + n] = h[n];
        }
    return loss;
}

static mvrt_status_t put(mvrt_backend_t *be, const float *host, int64_t floats, mvrt_buffer_t **buf)
{
    mvrt_status_t st = mvrt_buffer_alloc(be, (size_t)floats * sizeof(float), buf);
    if (st == MVRT_OK && host)
        st = mvrt_copy_host_to_device(NULL, *buf, 0, host, (size_t)floats * sizeof(float));
    return st;
}

/* Runs one problem; returns 77 when the backend refuses complex A. */
static int run(mvrt_backend_t *be, const prob_t *p, int index)
{
    data_t x;
    memset(&x, 0, sizeof x);
    const int64_t bdl = p->Bt * p->Dm * p->L;
    const int64_t bc_var = p->Bt * p->G * p->N * 2 * p->L, bc_const = 2 * p->Dm * p->N;
    x.n[I_U] = x.n[I_DELTA] = x.n[I_Z] = bdl;
    x.n[I_A] = 2 * p->Dm * p->N;
    x.n[I_B] = p->bvar ? bc_var : bc_const;
    x.n[I_C] = p->cvar ? bc_var : bc_const;
    x.n[I_D] = x.n[I_BIAS] = p->Dm;
    const int present[NIN] = {1, 1, 1, 1, 1, p->has_d, p->has_z, p->has_bias};
    for (int i = 0; i < NIN; i++) {
        x.in[i] = malloc(sizeof(float) * (size_t)x.n[i]);
        for (int64_t k = 0; k < x.n[i]; k++) {
            double v = uniform(-1.0, 1.0);
            /* softplus off: positive steps (a negative one makes the state grow) */
            if (i == I_DELTA)
                v = p->softplus ? uniform(-3.0, 0.5) : uniform(0.01, 0.3);
            if (i == I_BIAS && !p->softplus)
                v = uniform(0.0, 0.2);
            if (i == I_A) /* re < 0 (a decaying state), im any */
                v = k % 2 == 0 ? -uniform(0.05, 2.0) : uniform(-3.0, 3.0);
            x.in[i][k] = (float)v;
        }
    }
    x.dout = malloc(sizeof(float) * (size_t)bdl);
    for (int64_t k = 0; k < bdl; k++)
        x.dout[k] = (float)uniform(-1.0, 1.0);

    /* device tensors: complex ones as c64 views of the float pairs */
    mvrt_buffer_t *buf[NIN] = {0}, *gbuf[NIN] = {0}, *bout = NULL, *blast = NULL, *bdout = NULL;
    mvrt_status_t st = MVRT_OK;
    for (int i = 0; i < NIN && st == MVRT_OK; i++)
        if (present[i]) {
            st = put(be, x.in[i], x.n[i], &buf[i]);
            if (st == MVRT_OK)
                st = put(be, NULL, x.n[i], &gbuf[i]);
        }
    if (st == MVRT_OK)
        st = put(be, NULL, bdl, &bout);
    if (st == MVRT_OK)
        st = put(be, NULL, 2 * p->Bt * p->Dm * p->N, &blast);
    if (st == MVRT_OK)
        st = put(be, x.dout, bdl, &bdout);
    if (st != MVRT_OK) {
        fprintf(stderr, "FAIL: allocation: %s\n", mvrt_last_error());
        exit(1);
    }
    const int64_t s_bdl[3] = {p->Bt, p->Dm, p->L}, s_dn[2] = {p->Dm, p->N}, s_dm[1] = {p->Dm};
    const int64_t s_var[4] = {p->Bt, p->G, p->N, 2 * p->L}, s_last[3] = {p->Bt, p->Dm, p->N};
    mvrt_tensor_t t[NIN], g[NIN];
    memset(t, 0, sizeof t);
    memset(g, 0, sizeof g);
    for (int i = 0; i < NIN; i++) {
        if (!present[i])
            continue;
        const int var = (i == I_B && p->bvar) || (i == I_C && p->cvar);
        mvrt_dtype_t dt = MVRT_DTYPE_F32;
        int rank = 3;
        const int64_t *shape = s_bdl;
        if (i == I_A || ((i == I_B || i == I_C) && !var))
            dt = MVRT_DTYPE_C64, rank = 2, shape = s_dn;
        else if (var)
            rank = 4, shape = s_var;
        else if (i == I_D || i == I_BIAS)
            rank = 1, shape = s_dm;
        t[i] = mvrt_tensor_make(buf[i], 0, dt, rank, shape);
        g[i] = mvrt_tensor_make(gbuf[i], 0, dt, rank, shape);
    }
    mvrt_selective_scan_args_t args = {t[I_U], t[I_DELTA], t[I_A], t[I_B], t[I_C], t[I_D], t[I_Z], t[I_BIAS],
                                       p->softplus};
    mvrt_selective_scan_outputs_t outs = {mvrt_tensor_make(bout, 0, MVRT_DTYPE_F32, 3, s_bdl),
                                          mvrt_tensor_make(blast, 0, MVRT_DTYPE_C64, 3, s_last)};
    st = mvrt_selective_scan_fwd(NULL, &args, &outs);
    if (st == MVRT_ERR_UNSUPPORTED) {
        printf("SKIP: %s\n", mvrt_last_error());
        return 77;
    }
    mvrt_selective_scan_grads_t grads = {mvrt_tensor_make(bdout, 0, MVRT_DTYPE_F32, 3, s_bdl),
                                         g[I_U], g[I_DELTA], g[I_A], g[I_B], g[I_C], g[I_D], g[I_Z], g[I_BIAS]};
    if (st == MVRT_OK)
        st = mvrt_selective_scan_bwd(NULL, &args, &grads, NULL);
    if (st != MVRT_OK) {
        fprintf(stderr, "FAIL: problem %d: %s: %s\n", index, mvrt_status_string(st), mvrt_last_error());
        exit(1);
    }

    /* the backward is bitwise the same with 1 and with 3 threads */
    int same = 1;
    for (int nt = 1; nt <= 3 && same; nt += 2) {
        float *keep[NIN] = {0};
        for (int i = 0; i < NIN; i++)
            if (present[i]) {
                keep[i] = malloc(sizeof(float) * (size_t)x.n[i]);
                mvrt_copy_device_to_host(NULL, keep[i], gbuf[i], 0, sizeof(float) * (size_t)x.n[i]);
            }
        if (mvrt_backend_set_num_threads(be, nt) != MVRT_OK ||
            mvrt_selective_scan_bwd(NULL, &args, &grads, NULL) != MVRT_OK) {
            fprintf(stderr, "FAIL: backward with %d thread(s): %s\n", nt, mvrt_last_error());
            exit(1);
        }
        for (int i = 0; i < NIN; i++)
            if (present[i]) {
                float *again = malloc(sizeof(float) * (size_t)x.n[i]);
                mvrt_copy_device_to_host(NULL, again, gbuf[i], 0, sizeof(float) * (size_t)x.n[i]);
                same &= memcmp(again, keep[i], sizeof(float) * (size_t)x.n[i]) == 0;
                free(again);
                free(keep[i]);
            }
    }
    if (!same) {
        printf("problem %d: FAIL: the backward differs between thread counts\n", index);
        failures++;
    }

    /* forward */
    float *got = malloc(sizeof(float) * (size_t)(2 * p->Bt * p->Dm * p->N > bdl ? 2 * p->Bt * p->Dm * p->N : bdl));
    double *ref = malloc(sizeof(double) * (size_t)bdl);
    double complex *last = malloc(sizeof(double complex) * (size_t)(p->Bt * p->Dm * p->N));
    ref_loss(p, &x, ref, last);
    mvrt_copy_device_to_host(NULL, got, bout, 0, sizeof(float) * (size_t)bdl);
    double worst = 0.0, big = 0.0;
    for (int64_t k = 0; k < bdl; k++)
        big = fmax(big, fabs(ref[k]));
    for (int64_t k = 0; k < bdl; k++)
        worst = fmax(worst, fabs(got[k] - ref[k]) / (1e-4 * big + 1e-4 * fabs(ref[k]) + 1e-30));
    int ok_fwd = worst <= 1.0;
    mvrt_copy_device_to_host(NULL, got, blast, 0, sizeof(float) * 2 * (size_t)(p->Bt * p->Dm * p->N));
    double lbig = 0.0, lworst = 0.0;
    for (int64_t k = 0; k < p->Bt * p->Dm * p->N; k++)
        lbig = fmax(lbig, cabs(last[k]));
    for (int64_t k = 0; k < p->Bt * p->Dm * p->N; k++)
        lworst = fmax(lworst, cabs((got[2 * k] + I * got[2 * k + 1]) - last[k]) / (1e-4 * lbig + 1e-4 * cabs(last[k]) + 1e-30));
    ok_fwd &= lworst <= 1.0;
    printf("problem %d (Bt %lld Dm %lld L %lld N %lld G %lld, B %s, C %s%s%s%s%s): out %.3f, last_state %.3f of tol",
           index, (long long)p->Bt, (long long)p->Dm, (long long)p->L, (long long)p->N, (long long)p->G,
           p->bvar ? "var" : "const", p->cvar ? "var" : "const", p->has_d ? ", D" : "", p->has_z ? ", z" : "",
           p->has_bias ? ", bias" : "", p->softplus ? ", softplus" : "", worst, lworst);
    if (!ok_fwd)
        failures++;

    /* gradients against central differences */
    double gworst = 0.0;
    const char *gname = "-";
    for (int i = 0; i < NIN; i++) {
        if (!present[i])
            continue;
        float *gv = malloc(sizeof(float) * (size_t)x.n[i]);
        mvrt_copy_device_to_host(NULL, gv, gbuf[i], 0, sizeof(float) * (size_t)x.n[i]);
        double gbig = 0.0;
        for (int64_t k = 0; k < x.n[i]; k++)
            gbig = fmax(gbig, fabs(gv[k]));
        for (int s = 0; s < 8; s++) {
            const int64_t k = (int64_t)uniform(0.0, (double)x.n[i]) % x.n[i];
            const float keep = x.in[i][k];
            const double step = 1e-4;
            /* perturb in double through a wider copy: the loss reads floats,
             * so evaluate at keep +- step as exact float sums where possible */
            x.in[i][k] = (float)(keep + step);
            const double hi_v = (double)x.in[i][k], lp = ref_loss(p, &x, NULL, NULL);
            x.in[i][k] = (float)(keep - step);
            const double lo_v = (double)x.in[i][k], lm = ref_loss(p, &x, NULL, NULL);
            x.in[i][k] = keep;
            const double fd = (lp - lm) / (hi_v - lo_v);
            const double r = fabs(gv[k] - fd) / (2e-3 * gbig + 2e-3 * fabs(fd) + 1e-12);
            if (r > gworst)
                gworst = r, gname = names[i];
        }
        free(gv);
    }
    printf(", gradients %.3f of tol (worst: d%s) %s\n", gworst, gname, ok_fwd && gworst <= 1.0 ? "ok" : "FAIL");
    if (gworst > 1.0)
        failures++;

    for (int i = 0; i < NIN; i++) {
        free(x.in[i]);
        mvrt_buffer_free(buf[i]);
        mvrt_buffer_free(gbuf[i]);
    }
    free(x.dout), free(got), free(ref), free(last);
    mvrt_buffer_free(bout), mvrt_buffer_free(blast), mvrt_buffer_free(bdout);
    return 0;
}

int main(int argc, char **argv)
{
    const char *spec = argc == 3 && strcmp(argv[1], "--backend") == 0 ? argv[2] : NULL;
    if (!spec) {
        fprintf(stderr, "usage: %s --backend NAME\n", argv[0]);
        return 2;
    }
    mvrt_backend_t *be = NULL;
    if (mvrt_backend_open(spec, &be) != MVRT_OK) {
        printf("SKIP: backend '%s': %s\n", spec, mvrt_last_error());
        return 77;
    }
    static const prob_t probs[] = {
        /* Bt Dm   L   N  G  bvar cvar D  z  bias softplus */
        {2, 4, 65, 8, 1, 1, 1, 1, 1, 1, 1},   /* the golden file's shape, across a chunk edge */
        {1, 6, 130, 3, 3, 1, 1, 1, 1, 1, 1},  /* groups 3, two chunk edges */
        {3, 5, 33, 4, 1, 0, 0, 1, 0, 1, 1},   /* constant complex B and C */
        {2, 4, 64, 16, 2, 1, 0, 0, 1, 0, 0},  /* variable B, constant C, no softplus, L = one chunk */
        {2, 3, 1, 1, 1, 0, 1, 0, 0, 0, 1},    /* L = 1, N = 1 */
        {1, 2, 129, 2, 1, 0, 1, 1, 1, 1, 0},  /* constant B, variable C */
        /* the GPU kernels' other layouts: several states per lane (N > 32;
         * chunks of 32 and 16 steps), and backward units of several
         * channels (batch x groups large: tiles of 3 channels, the last
         * one shorter), with groups */
        {2, 3, 70, 40, 1, 1, 1, 1, 1, 1, 1},
        {1, 2, 37, 100, 2, 1, 0, 1, 0, 1, 1},
        {1, 1, 18, 200, 1, 0, 1, 0, 1, 0, 1},
        {48, 200, 6, 2, 1, 1, 1, 1, 1, 1, 1},
        {40, 240, 5, 3, 2, 1, 0, 1, 0, 1, 1},
        /* the chunked warp-scan GPU kernels: forward chunks of 256 steps
         * (8 per lane) and backward chunks of 128 (4 per lane), several of
         * each; 8-row blocks with a shorter
         * last one; N = 256, the most the runtime takes
         * (MVRT_SCAN_MAX_DSTATE). With MVRT_CUDA_SCAN_CX_BC_MB=1 (ctest
         * scan_complex_cuda_subtiles) the first takes 16-row tiles
         * with dB / dC partials, the second one tile per group written
         * straight to dB. */
        {2, 40, 600, 16, 1, 1, 1, 1, 1, 1, 1},
        {1, 12, 140, 256, 1, 1, 0, 1, 1, 1, 1},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof probs / sizeof probs[0] && rc == 0; i++)
        rc = run(be, &probs[i], (int)i);
    mvrt_backend_close(be);
    if (rc == 77)
        return 77;
    printf("%d problem(s) failed\n", failures);
    return failures ? 1 : 0;
}
