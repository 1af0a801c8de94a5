/* CPU conv2d (mv_op_params.h): im2col + the shared GEMM
 * (ops/linear/linear_cpu_gemm.h), whose fused epilogue adds the bias (per
 * output channel = GEMM row), applies the activation and adds the residual.
 *
 * Per image, y_b (out_channels x out_h*out_w, NCHW) = W (out_channels x
 * in_channels*k*k) . col_b (in_channels*k*k x out_h*out_w). col is built for
 * a block of output rows at a time into a scratch of at most ~1 MiB, so the
 * stem's large maps never need a full-size copy, and the (image, row block)
 * pairs are the tasks spread over the threads; each block writes its own
 * columns of y_b directly (ldc = out_h*out_w). When there are fewer tasks
 * than threads, the blocks run one after the other and the GEMM itself is
 * threaded. A 1x1, stride-1, unpadded conv reads x as col directly. If a
 * scratch cannot be allocated the affected rows are computed by direct
 * loops: slow, never a crash. */
#include <stdlib.h>
#include <string.h>

#include "ops/linear/linear_cpu_gemm.h"
#include "ops/mv/mv_kernels.h"

/* Scratch budget for one block's col, in floats (1 MiB). */
#define MVRT_CONV_SCRATCH_FLOATS (256 * 1024)

/* col (K x np, row stride np) for output rows [r0, r1) of image b:
 * col[(c k^2 + p k + q), (i - r0) OW + j] = x[b, c, i s + p - pad, j s + q - pad]
 * (zero outside the image). */
static void mvrt_conv_im2col(const mvrt_conv2d_params_t *p, int64_t b, int64_t r0, int64_t r1,
                             float *col)
{
    const int64_t C = p->in_channels, H = p->in_h, W = p->in_w, OW = p->out_w;
    const int kk = p->kernel, s = p->stride, pad = p->pad;
    const int64_t np = (r1 - r0) * OW;
    for (int64_t c = 0; c < C; c++) {
        const float *xc = p->x + (b * C + c) * H * W;
        for (int pi = 0; pi < kk; pi++)
            for (int qi = 0; qi < kk; qi++) {
                float *dst = col + ((c * kk + pi) * kk + qi) * np;
                /* Output columns j whose input column j s + qi - pad is in
                 * [0, W): j in [jlo, jhi). */
                const int64_t off = qi - pad;
                int64_t jlo = off >= 0 ? 0 : (-off + s - 1) / s;
                int64_t jhi = W - off > 0 ? (W - off + s - 1) / s : 0;
                if (jhi > OW)
                    jhi = OW;
                if (jlo > jhi)
                    jlo = jhi;
                for (int64_t i = r0; i < r1; i++) {
                    float *d = dst + (i - r0) * OW;
                    const int64_t h = i * s + pi - pad;
                    if (h < 0 || h >= H) {
                        memset(d, 0, (size_t)OW * sizeof(float));
                        continue;
                    }
                    const float *xr = xc + h * W;
                    for (int64_t j = 0; j < jlo; j++)
                        d[j] = 0.0f;
                    if (s == 1) {
                        if (jhi > jlo)
                            memcpy(d + jlo, xr + jlo + off, (size_t)(jhi - jlo) * sizeof(float));
                    } else {
                        for (int64_t j = jlo; j < jhi; j++)
                            d[j] = xr[j * s + off];
                    }
                    for (int64_t j = jhi; j < OW; j++)
                        d[j] = 0.0f;
                }
            }
    }
}

/* Direct loops for output rows [r0, r1) of image b (the no-memory path). */
static void mvrt_conv_direct(const mvrt_conv2d_params_t *p, int64_t b, int64_t r0, int64_t r1)
{
    const int64_t C = p->in_channels, H = p->in_h, W = p->in_w;
    const int64_t O = p->out_channels, OH = p->out_h, OW = p->out_w;
    const int kk = p->kernel;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = r0; i < r1; i++)
            for (int64_t j = 0; j < OW; j++) {
                float acc = p->bias ? p->bias[o] : 0.0f;
                for (int64_t c = 0; c < C; c++)
                    for (int pi = 0; pi < kk; pi++) {
                        const int64_t h = i * p->stride + pi - p->pad;
                        if (h < 0 || h >= H)
                            continue;
                        for (int qi = 0; qi < kk; qi++) {
                            const int64_t w = j * p->stride + qi - p->pad;
                            if (w >= 0 && w < W)
                                acc += p->weight[((o * C + c) * kk + pi) * kk + qi] *
                                       p->x[((b * C + c) * H + h) * W + w];
                        }
                    }
                const int64_t idx = ((b * O + o) * OH + i) * OW + j;
                float v = mvrt_cpu_activation(p->activation, acc);
                if (p->residual)
                    v += p->residual[idx];
                p->y[idx] = v;
            }
}

/* Output rows [r0, r1) of image b through col (NULL: direct loops). */
static void mvrt_conv_block(const mvrt_conv2d_params_t *p, int direct_x, int64_t b, int64_t r0,
                            int64_t r1, float *col, int gemm_threads)
{
    const int64_t P = p->out_h * p->out_w, OW = p->out_w;
    const int64_t Kc = p->in_channels * p->kernel * p->kernel;
    const int64_t np = (r1 - r0) * OW;
    const float *bsrc;
    int64_t ldb;
    if (direct_x) {
        bsrc = p->x + b * p->in_channels * P + r0 * OW;
        ldb = P;
    } else if (col) {
        mvrt_conv_im2col(p, b, r0, r1, col);
        bsrc = col;
        ldb = np;
    } else {
        mvrt_conv_direct(p, b, r0, r1);
        return;
    }
    const int64_t yoff = b * p->out_channels * P + r0 * OW;
    const mvrt_cpu_gemm_t g = {
        .M = p->out_channels, .N = np, .K = Kc,
        .A = p->weight, .lda = Kc, .trans_a = 0,
        .B = bsrc, .ldb = ldb, .trans_b = 0,
        .C = p->y + yoff, .ldc = P,
        .accumulate = 0,
        .bias = p->bias, .bias_per_row = 1,
        .activation = p->activation,
        .residual = p->residual ? p->residual + yoff : NULL, .ld_residual = P,
    };
    mvrt_cpu_gemm_run(&g, gemm_threads);
}

void mvrt_cpu_conv2d(const mvrt_conv2d_params_t *p, int threads)
{
    const int64_t batch = p->batch, OH = p->out_h, OW = p->out_w;
    if (batch <= 0 || p->out_channels <= 0 || OH <= 0 || OW <= 0)
        return;
    if (threads < 1)
        threads = 1;
    const int64_t Kc = p->in_channels * p->kernel * p->kernel;
    const int direct_x = p->kernel == 1 && p->stride == 1 && p->pad == 0 &&
                         p->out_h == p->in_h && p->out_w == p->in_w;

    /* Rows per block: within the scratch budget, at least ~128 GEMM
     * columns where the map allows (narrower blocks waste the register
     * tile), and enough blocks for ~4 tasks per thread when images alone
     * are too few. */
    int64_t rb_mem = MVRT_CONV_SCRATCH_FLOATS / (Kc * OW > 0 ? Kc * OW : 1);
    if (rb_mem < 1)
        rb_mem = 1;
    int64_t rb_min = (128 + OW - 1) / OW;
    int64_t rb = OH;
    if (batch < 4 * (int64_t)threads) {
        const int64_t want = (4 * (int64_t)threads + batch - 1) / batch;
        rb = (OH + want - 1) / want;
    }
    if (rb < rb_min)
        rb = rb_min;
    if (rb > rb_mem)
        rb = rb_mem;
    if (rb > OH)
        rb = OH;
    if (direct_x)
        rb = rb < rb_min ? rb_min : rb; /* no scratch: memory is no limit */
    if (rb > OH)
        rb = OH;
    const int64_t nblk = (OH + rb - 1) / rb, ntask = batch * nblk;
    const size_t col_bytes = direct_x ? 0 : (size_t)(Kc * rb * OW) * sizeof(float);

    if (threads == 1 || ntask < threads) {
        /* Few blocks: one at a time, the GEMM using every thread. */
        float *col = col_bytes ? malloc(col_bytes) : NULL;
        for (int64_t t = 0; t < ntask; t++) {
            const int64_t b = t / nblk, r0 = t % nblk * rb;
            const int64_t r1 = r0 + rb < OH ? r0 + rb : OH;
            mvrt_conv_block(p, direct_x, b, r0, r1, col, threads);
        }
        free(col);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        float *col = col_bytes ? malloc(col_bytes) : NULL;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t t = 0; t < ntask; t++) {
            const int64_t b = t / nblk, r0 = t % nblk * rb;
            const int64_t r1 = r0 + rb < OH ? r0 + rb : OH;
            mvrt_conv_block(p, direct_x, b, r0, r1, col, 1);
        }
        free(col);
    }
}
