/* CPU LayerNorm (contract: mvrt_layernorm_params_t in mv_op_params.h).
 *
 * One row at a time, three passes over the row (it stays in L1 for the
 * widths MambaVision uses):
 *   1. a rough mean m1 from a float sum;
 *   2. sums of d = x - m1 and d^2, which give the exact-ish correction
 *      m2 = mean(d) and var = mean(d^2) - m2^2. Because d is centred, this
 *      keeps full float accuracy even when the row has a large mean (the
 *      one-pass E[x^2] - E[x]^2 formula would cancel catastrophically);
 *   3. y = ((x - m1) - m2) * rstd * w + b. Subtracting the mean as the pair
 *      (m1, m2) instead of the rounded float m1 + m2 avoids an error of half
 *      an ulp of the mean in every output.
 * Sums use LN_LANES independent partial sums so GCC vectorizes them
 * (a single float accumulator would force a sequential reduction).
 * Rows are split statically over threads; y may equal x because every
 * element is read before it is written, at the same index. */
#include <math.h>
#include <stdint.h>

#include "ops/mv/mv_kernels.h"

#define LN_LANES 16

static void ln_row(const float *x, float *y, int64_t n, const float *w, const float *b,
                   float eps)
{
    float acc[LN_LANES] = {0};
    int64_t i = 0;
    for (; i + LN_LANES <= n; i += LN_LANES)
        for (int k = 0; k < LN_LANES; k++)
            acc[k] += x[i + k];
    float s = 0.0f;
    for (int k = 0; k < LN_LANES; k++)
        s += acc[k];
    for (; i < n; i++)
        s += x[i];
    const float m1 = s / (float)n;

    float a1[LN_LANES] = {0}, a2[LN_LANES] = {0};
    i = 0;
    for (; i + LN_LANES <= n; i += LN_LANES)
        for (int k = 0; k < LN_LANES; k++) {
            const float d = x[i + k] - m1;
            a1[k] += d;
            a2[k] += d * d;
        }
    float sd = 0.0f, sq = 0.0f;
    for (int k = 0; k < LN_LANES; k++) {
        sd += a1[k];
        sq += a2[k];
    }
    for (; i < n; i++) {
        const float d = x[i] - m1;
        sd += d;
        sq += d * d;
    }
    const double m2 = (double)sd / (double)n;
    double var = (double)sq / (double)n - m2 * m2;
    if (var < 0.0)
        var = 0.0;
    const float rstd = (float)(1.0 / sqrt(var + (double)eps));
    const float m2f = (float)m2;

    for (i = 0; i < n; i++)
        y[i] = ((x[i] - m1) - m2f) * rstd * w[i] + b[i];
}

void mvrt_cpu_layernorm(const mvrt_layernorm_params_t *p, int threads)
{
    const int64_t rows = p->rows, cols = p->cols;
    if (rows <= 0 || cols <= 0)
        return;
    const int nt = threads < 1 ? 1 : threads;
    (void)nt;
#ifdef _OPENMP
/* Threads only pay off above a few tens of KB of data. */
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && rows > 1 && rows * cols >= 16384)
#endif
    for (int64_t r = 0; r < rows; r++)
        ln_row(p->x + r * p->x_ld, p->y + r * p->y_ld, cols, p->weight, p->bias, p->eps);
}
