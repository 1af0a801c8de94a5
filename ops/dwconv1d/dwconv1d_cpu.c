/* CPU depthwise conv1d ('same' padding, no bias) + SiLU (contract:
 * mvrt_dwconv1d_params_t in mv_op_params.h).
 *
 * Works on tiles of DW_CB channels x up to DW_BUF - (width - 1) positions:
 *   load   the tile and its halo into xs[c][t] (channel-major, zeros outside
 *          [0, length)), walking x in whichever order is contiguous: the
 *          MambaVision case reads token-major (b, l, c) slices, so the loop
 *          over channels is innermost there and the transpose happens in L1;
 *   compute each channel along t with the taps as the outer loop, so the
 *          inner loop is a contiguous axpy GCC vectorizes;
 *   store  to y, again in y's contiguous order.
 * The SiLU is the branch-free one of ops/common/cpu_vmath.h (no libm call),
 * so that it vectorizes too.
 * Tiles are independent tasks over (batch, channel tile, length tile).
 * Widths too large for the tile buffer take a direct strided loop. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/common/cpu_vmath.h"
#include "ops/mv/mv_kernels.h"

#define DW_CB 32
#define DW_BUF 256

/* The tile code is plain C that GCC auto-vectorizes. Where the toolchain
 * can dispatch at load time (GCC >= 12, glibc ifuncs, x86-64) it is built
 * twice, for the baseline ISA and for x86-64-v3 (AVX2 + FMA: twice the
 * vector width, which the SiLU's exp and division need), and the CPU
 * picks. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) && \
    __GNUC__ >= 12
#define DW_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DW_CLONES
#endif

static inline int64_t dw_abs(int64_t v) { return v < 0 ? -v : v; }

/* One tile: channels [c0, c0 + nc), output positions [l0, l0 + nl). */
DW_CLONES static void dw_tile(const mvrt_dwconv1d_params_t *p, int64_t b, int64_t c0, int nc, int64_t l0,
                    int nl)
{
    float xs[DW_CB][DW_BUF];
    float ys[DW_CB][DW_BUF];
    const int width = p->width, pad = (width - 1) / 2;
    const int nin = nl + width - 1;  /* input positions l0 - pad ... */
    const int64_t L = p->length;
    const int64_t *xst = p->x_stride, *yst = p->y_stride;
    const float *xb = p->x + b * xst[0];
    float *yb = p->y + b * yst[0];

    /* Valid input window [t_lo, t_hi) of the tile buffer; zeros elsewhere. */
    const int64_t first = l0 - pad;
    int t_lo = first < 0 ? (int)-first : 0;
    int t_hi = (first + nin > L) ? (int)(L - first) : nin;
    if (t_hi < t_lo)
        t_hi = t_lo;
    for (int c = 0; c < nc; c++) {
        for (int t = 0; t < t_lo; t++)
            xs[c][t] = 0.0f;
        for (int t = t_hi; t < nin; t++)
            xs[c][t] = 0.0f;
    }
    if (dw_abs(xst[1]) < dw_abs(xst[2])) {
        for (int t = t_lo; t < t_hi; t++) {
            const float *src = xb + (first + t) * xst[2] + c0 * xst[1];
            for (int c = 0; c < nc; c++)
                xs[c][t] = src[c * xst[1]];
        }
    } else {
        for (int c = 0; c < nc; c++) {
            const float *src = xb + (c0 + c) * xst[1] + first * xst[2];
            for (int t = t_lo; t < t_hi; t++)
                xs[c][t] = src[t * xst[2]];
        }
    }

    for (int c = 0; c < nc; c++) {
        const float *w = p->weight + (c0 + c) * (int64_t)width;
        float *acc = ys[c];
        const float *xr = xs[c];
        const float w0 = w[0];
        for (int t = 0; t < nl; t++)
            acc[t] = w0 * xr[t];
        for (int j = 1; j < width; j++) {
            const float wj = w[j];
            for (int t = 0; t < nl; t++)
                acc[t] += wj * xr[t + j];
        }
        for (int t = 0; t < nl; t++)
            acc[t] = mvrt_silu_v(acc[t]);
    }

    if (dw_abs(yst[1]) < dw_abs(yst[2])) {
        for (int t = 0; t < nl; t++) {
            float *dst = yb + (l0 + t) * yst[2] + c0 * yst[1];
            for (int c = 0; c < nc; c++)
                dst[c * yst[1]] = ys[c][t];
        }
    } else {
        for (int c = 0; c < nc; c++) {
            float *dst = yb + (c0 + c) * yst[1] + l0 * yst[2];
            for (int t = 0; t < nl; t++)
                dst[t * yst[2]] = ys[c][t];
        }
    }
}

/* Widths that do not fit the tile buffer: one output at a time. */
static void dw_direct(const mvrt_dwconv1d_params_t *p, int64_t b, int64_t c)
{
    const int width = p->width, pad = (width - 1) / 2;
    const int64_t L = p->length;
    const float *xr = p->x + b * p->x_stride[0] + c * p->x_stride[1];
    float *yr = p->y + b * p->y_stride[0] + c * p->y_stride[1];
    const float *w = p->weight + c * (int64_t)width;
    for (int64_t l = 0; l < L; l++) {
        float acc = 0.0f;
        for (int j = 0; j < width; j++) {
            const int64_t s = l + j - pad;
            if (s >= 0 && s < L)
                acc += w[j] * xr[s * p->x_stride[2]];
        }
        yr[l * p->y_stride[2]] = mvrt_silu_v(acc);
    }
}

void mvrt_cpu_dwconv1d_silu(const mvrt_dwconv1d_params_t *p, int threads)
{
    if (p->split > 0 && p->split < p->channels) {
        /* two parts: each a one-part op */
        mvrt_dwconv1d_params_t lo = *p, hi = *p;
        lo.channels = p->split;
        lo.split = 0;
        hi.channels = p->channels - p->split;
        hi.x = p->x + p->split * p->x_stride[1];
        hi.y = p->y2;
        memcpy(hi.y_stride, p->y2_stride, sizeof hi.y_stride);
        hi.weight = p->weight2;
        hi.split = 0;
        mvrt_cpu_dwconv1d_silu(&lo, threads);
        mvrt_cpu_dwconv1d_silu(&hi, threads);
        return;
    }
    const int64_t B = p->batch, C = p->channels, L = p->length;
    if (B <= 0 || C <= 0 || L <= 0 || p->width <= 0)
        return;
    const int nt = threads < 1 ? 1 : threads;
    (void)nt;
    const int64_t work = B * C * L * p->width;

    if (p->width > DW_BUF / 2) {
        const int64_t ntask = B * C;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && ntask > 1)
#endif
        for (int64_t task = 0; task < ntask; task++)
            dw_direct(p, task / C, task % C);
        return;
    }

    const int tl = DW_BUF - (p->width - 1);
    const int64_t ncb = (C + DW_CB - 1) / DW_CB, nlb = (L + tl - 1) / tl;
    const int64_t ntask = B * ncb * nlb;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && ntask > 1 && work >= 32768)
#endif
    for (int64_t task = 0; task < ntask; task++) {
        const int64_t lb = task % nlb, cb = (task / nlb) % ncb, b = task / (nlb * ncb);
        const int64_t c0 = cb * DW_CB, l0 = lb * tl;
        const int nc = (int)(C - c0 < DW_CB ? C - c0 : DW_CB);
        const int nl = (int)(L - l0 < tl ? L - l0 : tl);
        dw_tile(p, b, c0, nc, l0, nl);
    }
    (void)work;
}
