/* CPU linear and conv2d (mvrt_cpu_op_run) against the double references
 * (mvrt_ref_op_run), for every GEMM kernel this build and CPU offer
 * (OpenBLAS, and mvrt's own avx512 / avx2 / generic kernels).
 *
 * Tolerance per element: |got - ref| <= atol + rtol |ref| with
 *   atol = 1e-5 sqrt(K) max|a| max|b| + 1e-6,  rtol = 1e-4
 * (K = reduction length; a float sum of K products has an error of a few
 * eps sqrt(K) |a||b| on random data; rtol covers the activations, which the
 * kernels compute in float). Elements the op must not write (row padding
 * past N, gaps between batch items) must keep their exact bits. Prints the
 * worst error of every case; exits 1 on any failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/mv_cpu.h"
#include "ops/common/mv_reference.h"
#include "ops/linear/linear_cpu_gemm.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float frand(void) /* uniform in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void fill(float *p, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = scale * frand();
}

static float max_abs(const float *p, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++)
        m = fabsf(p[i]) > m ? fabsf(p[i]) : m;
    return m;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static int failures, cases;
static const char *const act_names[] = {"none", "relu", "gelu", "gelu_tanh", "silu"};

/* Compares y (n floats, `written` marks the op's outputs) with the
 * reference `ref` and the untouched copy `before`. */
static void check(const char *what, const float *y, const float *before, const double *ref,
                  const unsigned char *written, int64_t n, double atol, double rtol)
{
    double worst = 0.0, worst_ratio = 0.0;
    int64_t bad = 0, first_bad = -1, clobbered = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!written[i]) {
            if (memcmp(&y[i], &before[i], sizeof(float)) != 0)
                clobbered++;
            continue;
        }
        const double err = fabs((double)y[i] - ref[i]);
        const double ratio = err / (atol + rtol * fabs(ref[i]));
        if (!(ratio <= 1.0)) { /* also catches NaN */
            if (first_bad < 0)
                first_bad = i;
            bad++;
        }
        if (err > worst || isnan(err))
            worst = err;
        if (ratio > worst_ratio || isnan(ratio))
            worst_ratio = ratio;
    }
    cases++;
    const int ok = bad == 0 && clobbered == 0;
    printf("%s %-58s worst |err| %.3g (%.3f of tol)", ok ? "ok  " : "FAIL", what, worst,
           worst_ratio);
    if (bad)
        printf("  %lld bad, first at %lld: got %.9g want %.9g", (long long)bad,
               (long long)first_bad, (double)y[first_bad], ref[first_bad]);
    if (clobbered)
        printf("  %lld elements outside the output were written", (long long)clobbered);
    printf("\n");
    if (!ok)
        failures++;
}

/* ---- linear --------------------------------------------------------------- */

typedef struct lin_case {
    int64_t batch, M, N, K;
    int ta, tb;
    int share_a, share_b; /* batch stride 0 */
    int64_t ldy_pad, gap;  /* ldy = N + ldy_pad; gap floats between items */
    int bias;              /* 0 none, 1 per column, 2 per row */
    int act;
    int beta;              /* 0, 1, or 2: 1 with a separate residual */
    int threads;
} lin_case_t;

static void run_linear(const lin_case_t *c, const char *kernel)
{
    const int64_t arows = c->ta ? c->K : c->M, acols = c->ta ? c->M : c->K;
    const int64_t brows = c->tb ? c->N : c->K, bcols = c->tb ? c->K : c->N;
    /* Leading dimensions with a little padding, odd strides between items. */
    const int64_t lda = acols + (c->gap ? 3 : 0), ldb = bcols + (c->gap ? 1 : 0);
    const int64_t ldy = c->N + c->ldy_pad;
    const int64_t sa = c->share_a ? 0 : arows * lda + c->gap;
    const int64_t sb = c->share_b ? 0 : brows * ldb + c->gap;
    const int64_t sy = c->M * ldy + c->gap;
    const int64_t na = (c->batch - 1) * sa + arows * lda, nb = (c->batch - 1) * sb + brows * ldb;
    const int64_t ny = (c->batch - 1) * sy + c->M * ldy;
    float *A = xmalloc((size_t)na * sizeof(float)), *B = xmalloc((size_t)nb * sizeof(float));
    float *Y = xmalloc((size_t)ny * sizeof(float)), *Y0 = xmalloc((size_t)ny * sizeof(float));
    float *R = c->beta == 2 ? xmalloc((size_t)ny * sizeof(float)) : NULL;
    const int64_t nbias = c->bias == 2 ? c->M : c->N;
    float *bias = xmalloc((size_t)nbias * sizeof(float));
    double *ref = xmalloc((size_t)ny * sizeof(double));
    unsigned char *written = xmalloc((size_t)ny);
    fill(A, na, 1.0f);
    fill(B, nb, 0.5f);
    fill(bias, nbias, 1.0f);
    if (c->beta == 1)
        fill(Y, ny, 2.0f);
    else
        for (int64_t i = 0; i < ny; i++)
            Y[i] = NAN; /* beta = 0, or a separate residual: must not read Y */
    if (R)
        fill(R, ny, 2.0f);
    memcpy(Y0, Y, (size_t)ny * sizeof(float));
    memset(written, 0, (size_t)ny);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t n = 0; n < c->N; n++)
                written[b * sy + m * ldy + n] = 1;

    mvrt_op_params_t op;
    memset(&op, 0, sizeof op);
    op.kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *p = &op.u.linear;
    p->batch = c->batch;
    p->M = c->M;
    p->N = c->N;
    p->K = c->K;
    p->A = A;
    p->lda = lda;
    p->batch_stride_a = sa;
    p->trans_a = c->ta;
    p->B = B;
    p->ldb = ldb;
    p->batch_stride_b = sb;
    p->trans_b = c->tb;
    p->Y = Y;
    p->ldy = ldy;
    p->batch_stride_y = sy;
    p->bias = c->bias ? bias : NULL;
    p->bias_per_row = c->bias == 2;
    p->activation = c->act;
    p->beta = c->beta ? 1.0f : 0.0f;
    p->residual = R;
    p->math = MVRT_MATH_FP32;

    if (mvrt_ref_op_run(&op, ref) != 0 || mvrt_cpu_op_run(&op, NULL, c->threads) != 0) {
        printf("FAIL linear: op_run returned an error\n");
        failures++;
    } else {
        const double atol = 1e-5 * sqrt((double)(c->K > 1 ? c->K : 1)) * max_abs(A, na) *
                                max_abs(B, nb) + 1e-6;
        char what[160];
        snprintf(what, sizeof what, "%s lin b%lld %lldx%lldx%lld t%d%d%s%s ldy+%lld bias%d %s b%d th%d",
                 kernel, (long long)c->batch, (long long)c->M, (long long)c->N, (long long)c->K,
                 c->ta, c->tb, c->share_a ? " sA0" : "", c->share_b ? " sB0" : "",
                 (long long)c->ldy_pad, c->bias, act_names[c->act], c->beta, c->threads);
        check(what, Y, Y0, ref, written, ny, atol, 1e-4);
    }
    free(A);
    free(B);
    free(Y);
    free(Y0);
    free(R);
    free(bias);
    free(ref);
    free(written);
}

static void linear_cases(const char *kernel)
{
    /* Every transpose / bias / activation combination on odd sizes. */
    for (int t = 0; t < 4; t++)
        for (int bias = 0; bias < 3; bias++)
            for (int act = 0; act < 5; act++) {
                lin_case_t c = {2, 7, 33, 65, t >> 1, t & 1, 0, 0, 5, 3, bias, act, 0,
                                1 + (act & 1)};
                run_linear(&c, kernel);
            }
    /* beta = 1 (residual accumulate; the contract makes the activation NONE). */
    for (int t = 0; t < 4; t++)
        for (int bias = 0; bias < 3; bias++) {
            lin_case_t c = {3, 13, 17, 29, t >> 1, t & 1, t == 1, t == 2, 2, 1, bias, 0, 1,
                            1 + (bias & 1)};
            run_linear(&c, kernel);
            /* the same onto a separate residual (Y is NaN: never read) */
            c.beta = 2;
            run_linear(&c, kernel);
        }
    /* Sizes 1, K = 1, and sizes around the register tile (6 x 8/16/32). */
    static const int64_t shapes[][4] = {
        {1, 1, 1, 1},  {1, 1, 1, 7},   {1, 5, 1, 1},    {1, 1, 9, 3},   {1, 6, 16, 1},
        {1, 6, 32, 8}, {1, 12, 48, 9}, {1, 5, 15, 300}, {1, 97, 45, 513}, {4, 7, 33, 65},
        {1, 150, 70, 260},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int th = 1; th <= 2; th++) {
            lin_case_t c = {shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], (int)(i & 1),
                            (int)((i >> 1) & 1), 0, 0, (int64_t)(i % 3), (int64_t)(i % 2) * 7,
                            (int)(i % 3), (int)(i % 5), 0, th};
            run_linear(&c, kernel);
        }
    /* MambaVision-like: token-major x W^T + bias (in_proj, fc1 + GELU,
     * fc2 as a residual accumulate), and per-window GEMMs with one shared
     * weight (x_proj over (C/2, L) slices). */
    {
        lin_case_t c = {1, 392, 160, 160, 0, 1, 1, 0, 0, 0, 0, 0, 0, 2};
        run_linear(&c, kernel);
    }
    {
        lin_case_t c = {1, 392, 640, 160, 0, 1, 1, 0, 0, 0, 1, MVRT_ACT_GELU_ERF, 0, 2};
        run_linear(&c, kernel);
    }
    {
        lin_case_t c = {1, 196, 160, 640, 0, 1, 1, 0, 0, 0, 1, 0, 1, 2};
        run_linear(&c, kernel);
        c.beta = 2; /* a block graph's projection onto its input */
        run_linear(&c, kernel);
    }
    {
        lin_case_t c = {24, 36, 196, 160, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2};
        run_linear(&c, kernel);
    }
    {
        lin_case_t c = {5, 49, 49, 40, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3};
        run_linear(&c, kernel);
    }
}

/* The float activations themselves: K = 1 and B = 1 make the GEMM exact,
 * so Y = act(x + bias) isolates the epilogue. x runs over [-12, 12] (GELU's
 * tails, SiLU's saturation) in 4801 steps, plus the N tail (4801 is not a
 * multiple of any vector width). Tolerance: a few float ulps. */
static void activation_cases(const char *kernel)
{
    const int64_t N = 4801;
    float one = 1.0f, *xs = xmalloc((size_t)N * sizeof(float));
    float *y = xmalloc((size_t)N * sizeof(float)), *y0 = xmalloc((size_t)N * sizeof(float));
    double *ref = xmalloc((size_t)N * sizeof(double));
    unsigned char *written = xmalloc((size_t)N);
    memset(written, 1, (size_t)N);
    for (int64_t i = 0; i < N; i++)
        xs[i] = -12.0f + 24.0f * (float)i / (float)(N - 1);
    for (int act = 1; act < 5; act++)
        for (int th = 1; th <= 2; th++) {
            for (int64_t i = 0; i < N; i++)
                y[i] = y0[i] = NAN;
            mvrt_op_params_t op;
            memset(&op, 0, sizeof op);
            op.kind = MVRT_OP_LINEAR;
            mvrt_linear_params_t *p = &op.u.linear;
            p->batch = 1;
            p->M = 1;
            p->N = N;
            p->K = 1;
            p->A = &one;
            p->lda = 1;
            p->B = xs; /* 1 x N */
            p->ldb = N;
            p->Y = y;
            p->ldy = N;
            p->activation = act;
            mvrt_ref_op_run(&op, ref);
            mvrt_cpu_op_run(&op, NULL, th);
            char what[160];
            snprintf(what, sizeof what, "%s activation %s on [-12, 12] th%d", kernel, act_names[act],
                     th);
            check(what, y, y0, ref, written, N, 1e-7, 1e-6);
        }
    free(xs);
    free(y);
    free(y0);
    free(ref);
    free(written);
}

/* ---- conv2d --------------------------------------------------------------- */

typedef struct conv_case {
    int64_t batch, cin, cout, h, w;
    int k, s, pad;
    int bias, residual, act, threads;
} conv_case_t;

static void run_conv(const conv_case_t *c, const char *kernel)
{
    const int64_t oh = (c->h + 2 * c->pad - c->k) / c->s + 1;
    const int64_t ow = (c->w + 2 * c->pad - c->k) / c->s + 1;
    const int64_t nx = c->batch * c->cin * c->h * c->w;
    const int64_t nw = c->cout * c->cin * c->k * c->k;
    const int64_t ny = c->batch * c->cout * oh * ow;
    float *x = xmalloc((size_t)nx * sizeof(float)), *w = xmalloc((size_t)nw * sizeof(float));
    float *bias = xmalloc((size_t)c->cout * sizeof(float));
    float *res = xmalloc((size_t)ny * sizeof(float));
    float *y = xmalloc((size_t)ny * sizeof(float)), *y0 = xmalloc((size_t)ny * sizeof(float));
    double *ref = xmalloc((size_t)ny * sizeof(double));
    unsigned char *written = xmalloc((size_t)ny);
    fill(x, nx, 1.0f);
    fill(w, nw, 0.5f);
    fill(bias, c->cout, 1.0f);
    fill(res, ny, 1.0f);
    for (int64_t i = 0; i < ny; i++)
        y[i] = NAN;
    memcpy(y0, y, (size_t)ny * sizeof(float));
    memset(written, 1, (size_t)ny);

    mvrt_op_params_t op;
    memset(&op, 0, sizeof op);
    op.kind = MVRT_OP_CONV2D;
    mvrt_conv2d_params_t *p = &op.u.conv2d;
    p->batch = c->batch;
    p->in_channels = c->cin;
    p->in_h = c->h;
    p->in_w = c->w;
    p->out_channels = c->cout;
    p->out_h = oh;
    p->out_w = ow;
    p->kernel = c->k;
    p->stride = c->s;
    p->pad = c->pad;
    p->x = x;
    p->weight = w;
    p->bias = c->bias ? bias : NULL;
    p->residual = c->residual ? res : NULL;
    p->y = y;
    p->activation = c->act;

    if (mvrt_ref_op_run(&op, ref) != 0 || mvrt_cpu_op_run(&op, NULL, c->threads) != 0) {
        printf("FAIL conv2d: op_run returned an error\n");
        failures++;
    } else {
        const double K = (double)(c->cin * c->k * c->k);
        const double atol = 1e-5 * sqrt(K) * max_abs(x, nx) * max_abs(w, nw) + 1e-6;
        char what[160];
        snprintf(what, sizeof what, "%s conv b%lld %lld->%lld %lldx%lld k%d s%d p%d%s%s %s th%d",
                 kernel, (long long)c->batch, (long long)c->cin, (long long)c->cout,
                 (long long)c->h, (long long)c->w, c->k, c->s, c->pad, c->bias ? " bias" : "",
                 c->residual ? " res" : "", act_names[c->act], c->threads);
        check(what, y, y0, ref, written, ny, atol, 1e-4);
    }
    free(x);
    free(w);
    free(bias);
    free(res);
    free(y);
    free(y0);
    free(ref);
    free(written);
}

static void conv_cases(const char *kernel)
{
    static const int64_t hw[][2] = {{9, 11}, {1, 1}, {13, 7}, {2, 3}, {8, 8}};
    static const int64_t ch[][2] = {{1, 1}, {3, 16}, {16, 17}, {17, 3}};
    int n = 0;
    for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++)
        for (size_t j = 0; j < sizeof ch / sizeof ch[0]; j++)
            for (int s = 1; s <= 2; s++, n++) {
                conv_case_t c = {1 + n % 3, ch[j][0], ch[j][1], hw[i][0], hw[i][1], 3, s, 1,
                                 n % 2, (n / 2) % 2, n % 5, 1 + (n / 3) % 2};
                run_conv(&c, kernel);
            }
    /* Other kernel sizes, strides and paddings (incl. kernel larger than
     * the padded-away border, pad 0, 1x1 fast path, stride > kernel). */
    static const conv_case_t more[] = {
        {2, 5, 7, 10, 9, 1, 1, 0, 1, 1, MVRT_ACT_RELU, 2},
        {1, 4, 6, 10, 9, 1, 2, 0, 1, 0, MVRT_ACT_NONE, 1},
        {2, 3, 5, 12, 11, 5, 3, 2, 1, 1, MVRT_ACT_SILU, 2},
        {1, 2, 3, 7, 6, 3, 1, 0, 0, 0, MVRT_ACT_GELU_ERF, 1},
        {1, 3, 4, 1, 1, 3, 2, 1, 1, 1, MVRT_ACT_GELU_TANH, 2},
        {1, 2, 2, 4, 4, 4, 2, 3, 1, 0, MVRT_ACT_NONE, 1},
        /* MambaVision-like: stem, conv block (tanh GELU, residual), down. */
        {2, 3, 32, 32, 32, 3, 2, 1, 1, 0, MVRT_ACT_RELU, 2},
        {1, 32, 16, 64, 64, 3, 1, 1, 1, 1, MVRT_ACT_GELU_TANH, 2},
        {1, 32, 16, 64, 64, 3, 1, 1, 1, 1, MVRT_ACT_GELU_TANH, 1},
        {3, 40, 80, 14, 14, 3, 2, 1, 0, 0, MVRT_ACT_NONE, 2},
        {1, 80, 48, 7, 7, 3, 1, 1, 1, 1, MVRT_ACT_NONE, 2},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        run_conv(&more[i], kernel);
}

int main(void)
{
    static const char *const kernels[] = {"openblas", "avx512", "avx2", "generic"};
    int tested = 0;
    printf("default GEMM: %s (library %s)\n", mvrt_cpu_gemm_kernel(), mvrt_cpu_gemm_library());
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        if (mvrt_cpu_gemm_force(kernels[k]) != 0) {
            printf("-- kernel %s: not available here\n", kernels[k]);
            continue;
        }
        tested++;
        printf("-- kernel %s\n", kernels[k]);
        activation_cases(kernels[k]);
        linear_cases(kernels[k]);
        conv_cases(kernels[k]);
    }
    mvrt_cpu_gemm_force(NULL);
    /* The default choice once more, as the backend uses it. */
    {
        lin_case_t c = {2, 9, 20, 31, 0, 1, 0, 0, 1, 2, 1, MVRT_ACT_GELU_ERF, 0, 2};
        run_linear(&c, "default");
    }
    if (!tested) {
        printf("FAIL: no GEMM kernel available\n");
        return 1;
    }
    printf("%d cases, %d failed\n", cases, failures);
    return failures ? 1 : 0;
}
