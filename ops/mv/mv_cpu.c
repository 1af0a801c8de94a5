/* Dispatcher of the MambaVision ops' CPU kernels (contract: mv_cpu.h). */
#include "ops/common/mv_cpu.h"
#include "ops/mv/mv_kernels.h"
#include "ops/common/cpu_half.h"

#include <stdint.h>

#define MVRT_CPU_SCRATCH_ALIGN 64 /* each fp32 copy starts on a cache line */

/* One 16-bit value of storage type t (MVRT_STORAGE16_BF16 / _F16) <-> float. */
static float wide16(int t, uint16_t h) { return t == MVRT_STORAGE16_F16 ? mvrt_f16_to_f32(h) : mvrt_bf16_to_f32(h); }
static uint16_t narrow16(int t, float f) { return t == MVRT_STORAGE16_F16 ? mvrt_f32_to_f16(f) : mvrt_f32_to_bf16(f); }

static size_t round_up(size_t n) { return (n + MVRT_CPU_SCRATCH_ALIGN - 1) / MVRT_CPU_SCRATCH_ALIGN * MVRT_CPU_SCRATCH_ALIGN; }

/* The stored rows and columns of a linear's A and how many distinct
 * matrices it has (1 when shared over the batch). */
static void linear_a_shape(const mvrt_linear_params_t *l, int64_t *rows, int64_t *cols, int64_t *count)
{
    *rows = l->trans_a ? l->K : l->M;
    *cols = l->trans_a ? l->M : l->K;
    *count = l->batch_stride_a ? l->batch : 1;
}

static size_t linear_a32_bytes(const mvrt_linear_params_t *l)
{
    int64_t rows, cols, count;
    linear_a_shape(l, &rows, &cols, &count);
    return l->a16 ? round_up((size_t)(rows * cols * count) * sizeof(float)) : 0;
}

/* Floats of a conv's NCHW input and output. */
static size_t conv_in_floats(const mvrt_conv2d_params_t *c) { return (size_t)(c->batch * c->in_channels * c->in_h * c->in_w); }
static size_t conv_out_floats(const mvrt_conv2d_params_t *c) { return (size_t)(c->batch * c->out_channels * c->out_h * c->out_w); }

size_t mvrt_cpu_op_scratch_bytes(const mvrt_op_params_t *p)
{
    if (p->kind == MVRT_OP_CONV2D) { /* x, residual, y as NCHW floats */
        const mvrt_conv2d_params_t *c = &p->u.conv2d;
        const size_t x = c->x_nhwc16 ? round_up(conv_in_floats(c) * sizeof(float)) : 0;
        const size_t y = c->y_nhwc16 ? round_up(conv_out_floats(c) * sizeof(float)) : 0;
        return x + (c->residual ? 2 * y : y);
    }
    if (p->kind == MVRT_OP_WINDOW_PARTITION || p->kind == MVRT_OP_WINDOW_REVERSE) {
        const mvrt_window_params_t *w = &p->u.window;
        return w->map_nhwc16 ? round_up((size_t)(w->batch * w->channels * w->height * w->width) * sizeof(float)) : 0;
    }
    if (p->kind == MVRT_OP_AFFINE_AVGPOOL && p->u.pool.x_nhwc16)
        return round_up((size_t)(p->u.pool.batch * p->u.pool.channels * p->u.pool.spatial) * sizeof(float));
    if (p->kind == MVRT_OP_LAYERNORM && p->u.layernorm.y16)
        return round_up((size_t)(p->u.layernorm.rows * p->u.layernorm.cols) * sizeof(float));
    if (p->kind == MVRT_OP_LINEAR) {
        const mvrt_linear_params_t *l = &p->u.linear;
        const size_t y = l->y16 ? round_up((size_t)(l->batch * l->M * l->N) * sizeof(float)) : 0;
        return linear_a32_bytes(l) + y;
    }
    return 0;
}

/* LayerNorm into fp32 scratch, then each element rounded into the 16-bit y. */
static void layernorm_out16(const mvrt_layernorm_params_t *p, float *y32, int threads)
{
    mvrt_layernorm_params_t q = *p;
    q.y = y32, q.y_ld = p->cols, q.y16 = 0;
    mvrt_cpu_layernorm(&q, threads);
    uint16_t *y16 = (uint16_t *)(void *)p->y;
    for (int64_t r = 0; r < p->rows; r++)
        for (int64_t c = 0; c < p->cols; c++)
            y16[r * p->y_ld + c] = narrow16(p->y16, y32[r * p->cols + c]);
}

/* A linear with 16-bit A and/or Y through fp32 copies in scratch. */
static void linear_storage16(const mvrt_linear_params_t *p, char *scratch, int threads)
{
    mvrt_linear_params_t q = *p;
    q.a16 = q.y16 = 0;
    if (p->a16) {
        int64_t rows, cols, count;
        linear_a_shape(p, &rows, &cols, &count);
        float *a32 = (float *)(void *)scratch;
        const uint16_t *a16 = (const uint16_t *)(const void *)p->A;
        for (int64_t b = 0; b < count; b++)
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < cols; c++)
                    a32[(b * rows + r) * cols + c] = wide16(p->a16, a16[b * p->batch_stride_a + r * p->lda + c]);
        q.A = a32, q.lda = cols, q.batch_stride_a = count > 1 ? rows * cols : 0;
    }
    float *y32 = NULL;
    if (p->y16) {
        y32 = (float *)(void *)(scratch + linear_a32_bytes(p));
        q.Y = y32, q.ldy = p->N, q.batch_stride_y = p->M * p->N;
    }
    mvrt_cpu_linear(&q, threads);
    if (!p->y16)
        return;
    uint16_t *y16 = (uint16_t *)(void *)p->Y;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t n = 0; n < p->N; n++)
                y16[b * p->batch_stride_y + m * p->ldy + n] = narrow16(p->y16, y32[(b * p->M + m) * p->N + n]);
}

/* NHWC 16-bit map of type t (batch, spatial, C) <-> NCHW floats (batch, C, spatial). */
static void nhwc16_to_nchw(int t, const void *src16, float *dst, int64_t batch, int64_t C, int64_t spatial)
{
    const uint16_t *s = (const uint16_t *)src16;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < spatial; i++)
            for (int64_t c = 0; c < C; c++)
                dst[(b * C + c) * spatial + i] = wide16(t, s[(b * spatial + i) * C + c]);
}

static void nchw_to_nhwc16(int t, const float *src, void *dst16, int64_t batch, int64_t C, int64_t spatial)
{
    uint16_t *d = (uint16_t *)dst16;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < spatial; i++)
            for (int64_t c = 0; c < C; c++)
                d[(b * spatial + i) * C + c] = narrow16(t, src[(b * C + c) * spatial + i]);
}

/* A conv with 16-bit NHWC maps through NCHW float copies in scratch: the
 * output rounded to 16 bits once, after bias, activation and residual. */
static void conv2d_nhwc16(const mvrt_conv2d_params_t *p, char *scratch, int threads)
{
    mvrt_conv2d_params_t q = *p;
    q.x_nhwc16 = q.y_nhwc16 = 0;
    const int64_t in_sp = p->in_h * p->in_w, out_sp = p->out_h * p->out_w;
    if (p->x_nhwc16) {
        float *x32 = (float *)(void *)scratch;
        nhwc16_to_nchw(p->x_nhwc16, p->x, x32, p->batch, p->in_channels, in_sp);
        q.x = x32;
        scratch += round_up(conv_in_floats(p) * sizeof(float));
    }
    if (p->y_nhwc16) {
        float *y32 = (float *)(void *)scratch;
        q.y = y32;
        if (p->residual) {
            float *r32 = (float *)(void *)(scratch + round_up(conv_out_floats(p) * sizeof(float)));
            nhwc16_to_nchw(p->y_nhwc16, p->residual, r32, p->batch, p->out_channels, out_sp);
            q.residual = r32;
        }
    }
    mvrt_cpu_conv2d(&q, threads);
    if (p->y_nhwc16)
        nchw_to_nhwc16(p->y_nhwc16, q.y, p->y, p->batch, p->out_channels, out_sp);
}

static void window_nhwc16(const mvrt_window_params_t *p, int reverse, float *map32, int threads)
{
    mvrt_window_params_t q = *p;
    q.map_nhwc16 = 0;
    const int64_t sp = p->height * p->width;
    if (!reverse) {
        nhwc16_to_nchw(p->map_nhwc16, p->src, map32, p->batch, p->channels, sp);
        q.src = map32;
        mvrt_cpu_window_partition(&q, threads);
    } else {
        q.dst = map32;
        mvrt_cpu_window_reverse(&q, threads);
        nchw_to_nhwc16(p->map_nhwc16, map32, p->dst, p->batch, p->channels, sp);
    }
}

int mvrt_cpu_op_run(const mvrt_op_params_t *p, void *scratch, int threads)
{
    if (threads < 1)
        threads = 1;
    if (mvrt_cpu_op_scratch_bytes(p) > 0 && !scratch)
        return -2;
    switch (p->kind) {
    case MVRT_OP_LAYERNORM:
        if (p->u.layernorm.y16)
            layernorm_out16(&p->u.layernorm, (float *)scratch, threads);
        else
            mvrt_cpu_layernorm(&p->u.layernorm, threads);
        return 0;
    case MVRT_OP_LINEAR:
        if (p->u.linear.a16 || p->u.linear.y16)
            linear_storage16(&p->u.linear, (char *)scratch, threads);
        else
            mvrt_cpu_linear(&p->u.linear, threads);
        return 0;
    case MVRT_OP_DWCONV1D_SILU: mvrt_cpu_dwconv1d_silu(&p->u.dwconv1d, threads); return 0;
    case MVRT_OP_ATTENTION: mvrt_cpu_attention(&p->u.attention, threads); return 0;
    case MVRT_OP_CONV2D:
        if (p->u.conv2d.x_nhwc16 || p->u.conv2d.y_nhwc16)
            conv2d_nhwc16(&p->u.conv2d, (char *)scratch, threads);
        else
            mvrt_cpu_conv2d(&p->u.conv2d, threads);
        return 0;
    case MVRT_OP_WINDOW_PARTITION:
    case MVRT_OP_WINDOW_REVERSE:
        if (p->u.window.map_nhwc16)
            window_nhwc16(&p->u.window, p->kind == MVRT_OP_WINDOW_REVERSE, (float *)scratch, threads);
        else if (p->kind == MVRT_OP_WINDOW_REVERSE)
            mvrt_cpu_window_reverse(&p->u.window, threads);
        else
            mvrt_cpu_window_partition(&p->u.window, threads);
        return 0;
    case MVRT_OP_AFFINE_AVGPOOL:
        if (p->u.pool.x_nhwc16) {
            mvrt_affine_avgpool_params_t q = p->u.pool;
            nhwc16_to_nchw(q.x_nhwc16, q.x, (float *)scratch, q.batch, q.channels, q.spatial);
            q.x = (const float *)scratch, q.x_nhwc16 = 0;
            mvrt_cpu_affine_avgpool(&q, threads);
        } else {
            mvrt_cpu_affine_avgpool(&p->u.pool, threads);
        }
        return 0;
    default: return -1;
    }
}

const char *mvrt_cpu_gemm_library(void)
{
    return mvrt_cpu_linear_library();
}
