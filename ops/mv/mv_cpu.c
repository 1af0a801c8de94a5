/* Dispatcher of the MambaVision ops' CPU kernels (contract: mv_cpu.h). */
#include "ops/common/mv_cpu.h"
#include "ops/mv/mv_kernels.h"
#include "ops/common/cpu_half.h"

#include <stdint.h>
#include <string.h>

#define MVRT_CPU_SCRATCH_ALIGN 64 /* each fp32 copy starts on a cache line */

#define MVRT_CONV_PAR_MIN 65536 /* elements below which one thread converts */

/* fp16 rows on x86's F16C conversions where the CPU has them (8 values
 * per instruction, round to nearest even, subnormals and overflow as the
 * scalar code: the same bits but for a signalling NaN's quiet bit); the
 * scalar loops of cpu_half.h elsewhere. MambaVision-T at batch 8 on this
 * machine class (2-core EPYC, AVX-512): fp16 411 ms per batch with the
 * scalar, one-thread, untiled conversions, 264 ms with threads, tiled map
 * transposes and F16C, against 242 ms in fp32 (bf16 329 -> 273 ms). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MVRT_HAVE_F16C_PATH 1
__attribute__((target("avx,f16c"))) static void f16_widen_f16c(const uint16_t *x, float *y, int64_t n)
{
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        _mm256_storeu_ps(y + c, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(x + c))));
    for (; c < n; c++)
        y[c] = mvrt_f16_to_f32(x[c]);
}
__attribute__((target("avx,f16c"))) static void f16_narrow_f16c(const float *x, uint16_t *y, int64_t n)
{
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        _mm_storeu_si128((__m128i *)(void *)(y + c), _mm256_cvtps_ph(_mm256_loadu_ps(x + c), _MM_FROUND_TO_NEAREST_INT));
    for (; c < n; c++)
        y[c] = mvrt_f32_to_f16(x[c]);
}
/* __builtin_cpu_supports reads a table filled when the program loads:
 * cheap, and no cache of ours for graphs on several threads to race on */
static int have_f16c(void) { return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx"); }
#else
static int have_f16c(void) { return 0; }
#endif

/* n contiguous values: 16-bit of type t -> floats (to16 0) or floats ->
 * 16-bit (to16 1); f16c: have_f16c(). The type's branch stays outside the
 * inner loops (the bf16 ones vectorize); the bits of cpu_half.h's scalar
 * conversions. */
static void convert_seg(int t, int f16c, int to16, const void *x, void *y, int64_t n)
{
#if defined(MVRT_HAVE_F16C_PATH)
    if (t == MVRT_STORAGE16_F16 && f16c) {
        if (to16)
            f16_narrow_f16c((const float *)x, (uint16_t *)y, n);
        else
            f16_widen_f16c((const uint16_t *)x, (float *)y, n);
        return;
    }
#endif
    (void)f16c;
    if (to16) {
        const float *xf = (const float *)x;
        uint16_t *yh = (uint16_t *)y;
        if (t == MVRT_STORAGE16_F16)
            for (int64_t c = 0; c < n; c++)
                yh[c] = mvrt_f32_to_f16(xf[c]);
        else
            for (int64_t c = 0; c < n; c++)
                yh[c] = mvrt_f32_to_bf16(xf[c]);
    } else {
        const uint16_t *xh = (const uint16_t *)x;
        float *yf = (float *)y;
        if (t == MVRT_STORAGE16_F16)
            for (int64_t c = 0; c < n; c++)
                yf[c] = mvrt_f16_to_f32(xh[c]);
        else
            for (int64_t c = 0; c < n; c++)
                yf[c] = mvrt_bf16_to_f32(xh[c]);
    }
}
/* Conversions (as convert_seg) over `rows` rows of `cols` values, row r
 * of matrix k at src + k * s_mat + r * s_row elements (and likewise dst):
 * k in [0, mats), rows split over the threads. */
static void convert_rows(int t, int to16, const void *src, int64_t s_mat, int64_t s_row, void *dst, int64_t d_mat,
                         int64_t d_row, int64_t mats, int64_t rows, int64_t cols, int threads)
{
    const int64_t total = mats * rows;
    const size_t s_size = to16 ? sizeof(float) : sizeof(uint16_t), d_size = to16 ? sizeof(uint16_t) : sizeof(float);
    const int f16c = have_f16c();
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && total * cols >= MVRT_CONV_PAR_MIN)
    for (int64_t kr = 0; kr < total; kr++) {
        const int64_t k = kr / rows, r = kr % rows;
        convert_seg(t, f16c, to16, (const char *)src + (size_t)(k * s_mat + r * s_row) * s_size,
                    (char *)dst + (size_t)(k * d_mat + r * d_row) * d_size, cols);
    }
}
static void widen_rows(int t, const uint16_t *src, int64_t s_mat, int64_t s_row, float *dst, int64_t d_mat,
                       int64_t d_row, int64_t mats, int64_t rows, int64_t cols, int threads)
{
    convert_rows(t, 0, src, s_mat, s_row, dst, d_mat, d_row, mats, rows, cols, threads);
}
static void narrow_rows(int t, const float *src, int64_t s_mat, int64_t s_row, uint16_t *dst, int64_t d_mat,
                        int64_t d_row, int64_t mats, int64_t rows, int64_t cols, int threads)
{
    convert_rows(t, 1, src, s_mat, s_row, dst, d_mat, d_row, mats, rows, cols, threads);
}

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

/* The same for B (b16: a 16-bit activation; the CPU declines 16-bit weights). */
static void linear_b_shape(const mvrt_linear_params_t *l, int64_t *rows, int64_t *cols, int64_t *count)
{
    *rows = l->trans_b ? l->N : l->K;
    *cols = l->trans_b ? l->K : l->N;
    *count = l->batch_stride_b ? l->batch : 1;
}

static size_t linear_b32_bytes(const mvrt_linear_params_t *l)
{
    int64_t rows, cols, count;
    linear_b_shape(l, &rows, &cols, &count);
    return l->b16 ? round_up((size_t)(rows * cols * count) * sizeof(float)) : 0;
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
    if (p->kind == MVRT_OP_LAYERNORM) { /* x, y as floats */
        const size_t n = round_up((size_t)(p->u.layernorm.rows * p->u.layernorm.cols) * sizeof(float));
        return (p->u.layernorm.x16 ? n : 0) + (p->u.layernorm.y16 ? n : 0);
    }
    if (p->kind == MVRT_OP_ATTENTION) { /* qkv, out as floats */
        const mvrt_attention_params_t *a = &p->u.attention;
        const size_t rows = (size_t)(a->batch * a->length), C = (size_t)a->heads * (size_t)a->head_dim;
        return (a->qkv16 ? round_up(rows * 3 * C * sizeof(float)) : 0) + (a->out16 ? round_up(rows * C * sizeof(float)) : 0);
    }
    if (p->kind == MVRT_OP_LINEAR) {
        const mvrt_linear_params_t *l = &p->u.linear;
        const size_t y = l->y16 ? round_up((size_t)(l->batch * l->M * l->N) * sizeof(float)) : 0;
        return linear_a32_bytes(l) + linear_b32_bytes(l) + y;
    }
    if (p->kind == MVRT_OP_DWCONV1D_SILU) { /* x and / or both outputs as dense floats */
        const mvrt_dwconv1d_params_t *d = &p->u.dwconv1d;
        const size_t n = round_up((size_t)(d->batch * d->channels * d->length) * sizeof(float));
        return (d->x16 ? n : 0) + (d->y16 ? n : 0);
    }
    return 0;
}

/* Element (b, c, l) of a strided (batch, channels, length) tensor. */
static int64_t dw_index(const int64_t st[3], int64_t b, int64_t c, int64_t l)
{
    return b * st[0] + c * st[1] + l * st[2];
}

/* Values [b, c, l] of a dense (B, C, L) float tensor rounded into a
 * strided 16-bit one of type t. */
static void narrow_strided(int t, const float *src, uint16_t *dst, const int64_t st[3], int64_t B, int64_t C,
                           int64_t L, int threads)
{
    if (st[2] == 1) {
        narrow_rows(t, src, C * L, L, dst, st[0], st[1], B, C, L, threads);
        return;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t l = 0; l < L; l++)
                convert_seg(t, 0, 1, src + (b * C + c) * L + l, dst + dw_index(st, b, c, l), 1);
}

/* conv1d + SiLU with a 16-bit x (widened exactly into dense floats in
 * scratch, the layout following x's: channels fastest when they are
 * contiguous), a 16-bit copy of the first part's output (rounded from
 * the fp32 values written to y) and / or 16-bit outputs y16 (both parts
 * computed into dense floats in scratch, then each value rounded once). */
static void dwconv1d_storage16(const mvrt_dwconv1d_params_t *p, char *scratch, int threads)
{
    mvrt_dwconv1d_params_t q = *p;
    const int64_t B = p->batch, C = p->channels, L = p->length;
    const int64_t C1 = p->split > 0 && p->split < C ? p->split : C;
    q.x16 = 0, q.y_copy = NULL, q.y_copy16 = 0, q.y16 = 0;
    float *y32 = NULL;
    if (p->y16) {
        y32 = (float *)(void *)(scratch + (p->x16 ? round_up((size_t)(B * C * L) * sizeof(float)) : 0));
        q.y = y32;
        q.y_stride[0] = C1 * L, q.y_stride[1] = L, q.y_stride[2] = 1;
        if (C1 < C) {
            q.y2 = y32 + B * C1 * L;
            q.y2_stride[0] = (C - C1) * L, q.y2_stride[1] = L, q.y2_stride[2] = 1;
        }
    }
    if (p->x16) {
        float *x32 = (float *)(void *)scratch;
        const uint16_t *x16 = (const uint16_t *)(const void *)p->x;
        if (p->x_stride[1] == 1) { /* token-major rows of C channels */
            widen_rows(p->x16, x16, p->x_stride[0], p->x_stride[2], x32, L * C, C, B, L, C, threads);
            q.x_stride[0] = L * C, q.x_stride[1] = 1, q.x_stride[2] = C;
        } else if (p->x_stride[2] == 1) { /* channel-major rows of L positions */
            widen_rows(p->x16, x16, p->x_stride[0], p->x_stride[1], x32, C * L, L, B, C, L, threads);
            q.x_stride[0] = C * L, q.x_stride[1] = L, q.x_stride[2] = 1;
        } else {
            /* any other strides: one value at a time (convert_seg directly,
             * not convert_rows' per-call CPU probe and parallel region) */
            for (int64_t b = 0; b < B; b++)
                for (int64_t c = 0; c < C; c++)
                    for (int64_t l = 0; l < L; l++)
                        convert_seg(p->x16, 0, 0, x16 + dw_index(p->x_stride, b, c, l), x32 + (b * C + c) * L + l, 1);
            q.x_stride[0] = C * L, q.x_stride[1] = L, q.x_stride[2] = 1;
        }
        q.x = x32;
    }
    mvrt_cpu_dwconv1d_silu(&q, threads);
    if (p->y16) {
        narrow_strided(p->y16, y32, (uint16_t *)(void *)p->y, p->y_stride, B, C1, L, threads);
        if (C1 < C)
            narrow_strided(p->y16, y32 + B * C1 * L, (uint16_t *)(void *)p->y2, p->y2_stride, B, C - C1, L, threads);
    }
    if (!p->y_copy16)
        return;
    uint16_t *copy = (uint16_t *)(void *)p->y_copy;
    if (p->y_stride[2] == 1) {
        narrow_rows(p->y_copy16, p->y, p->y_stride[0], p->y_stride[1], copy, p->y_stride[0], p->y_stride[1], B, C1, L,
                    threads);
    } else {
        for (int64_t b = 0; b < B; b++)
            for (int64_t c = 0; c < C1; c++)
                for (int64_t l = 0; l < L; l++) {
                    const int64_t i = dw_index(p->y_stride, b, c, l);
                    convert_seg(p->y_copy16, 0, 1, p->y + i, copy + i, 1);
                }
    }
}

/* LayerNorm of a 16-bit x (widened exactly into scratch) and / or into
 * fp32 scratch, then each element rounded into the 16-bit y. */
static void layernorm_storage16(const mvrt_layernorm_params_t *p, char *scratch, int threads)
{
    mvrt_layernorm_params_t q = *p;
    q.x16 = q.y16 = 0;
    if (p->x16) {
        float *x32 = (float *)(void *)scratch;
        widen_rows(p->x16, (const uint16_t *)(const void *)p->x, 0, p->x_ld, x32, 0, p->cols, 1, p->rows, p->cols,
                   threads);
        q.x = x32, q.x_ld = p->cols;
        scratch += round_up((size_t)(p->rows * p->cols) * sizeof(float));
    }
    if (p->y16)
        q.y = (float *)(void *)scratch, q.y_ld = p->cols;
    mvrt_cpu_layernorm(&q, threads);
    if (p->y16)
        narrow_rows(p->y16, q.y, 0, p->cols, (uint16_t *)(void *)p->y, 0, p->y_ld, 1, p->rows, p->cols, threads);
}

/* A linear with 16-bit A, B (an activation) and/or Y through fp32
 * copies in scratch (A's, then B's, then Y's). */
static void linear_storage16(const mvrt_linear_params_t *p, char *scratch, int threads)
{
    mvrt_linear_params_t q = *p;
    q.a16 = q.b16 = q.y16 = 0;
    if (p->a16) {
        int64_t rows, cols, count;
        linear_a_shape(p, &rows, &cols, &count);
        float *a32 = (float *)(void *)scratch;
        widen_rows(p->a16, (const uint16_t *)(const void *)p->A, p->batch_stride_a, p->lda, a32, rows * cols, cols,
                   count, rows, cols, threads);
        q.A = a32, q.lda = cols, q.batch_stride_a = count > 1 ? rows * cols : 0;
    }
    if (p->b16) {
        int64_t rows, cols, count;
        linear_b_shape(p, &rows, &cols, &count);
        float *b32 = (float *)(void *)(scratch + linear_a32_bytes(p));
        widen_rows(p->b16, (const uint16_t *)(const void *)p->B, p->batch_stride_b, p->ldb, b32, rows * cols, cols,
                   count, rows, cols, threads);
        q.B = b32, q.ldb = cols, q.batch_stride_b = count > 1 ? rows * cols : 0;
    }
    float *y32 = NULL;
    if (p->y16) {
        y32 = (float *)(void *)(scratch + linear_a32_bytes(p) + linear_b32_bytes(p));
        q.Y = y32, q.ldy = p->N, q.batch_stride_y = p->M * p->N;
        if (p->beta != 0.0f) {
            /* the 16-bit residual (Y's own contents or `residual`) widened
             * into Y's fp32 copy, which the product then accumulates onto:
             * one rounding of the whole sum below */
            const void *r16 = p->residual ? (const void *)p->residual : (const void *)p->Y;
            widen_rows(p->y16, (const uint16_t *)r16, p->batch_stride_y, p->ldy, y32, p->M * p->N, p->N, p->batch,
                       p->M, p->N, threads);
            q.residual = NULL;
        }
    }
    mvrt_cpu_linear(&q, threads);
    if (!p->y16)
        return;
    narrow_rows(p->y16, y32, p->M * p->N, p->N, (uint16_t *)(void *)p->Y, p->batch_stride_y, p->ldy, p->batch, p->M,
                p->N, threads);
}

/* NHWC 16-bit map of type t (batch, spatial, Cs: C channels, then zeros
 * to Cs) <-> NCHW floats (batch, C, spatial): 32 x 32 (position, channel) tiles, so that both sides stay
 * in cache (walking one side contiguously strode the other by a whole
 * map row), the (image, position tile) pairs split over the threads. */
#define MVRT_MAP_TILE 32
static void nhwc16_to_nchw(int t, const void *src16, float *dst, int64_t batch, int64_t C, int64_t Cs,
                           int64_t spatial, int threads)
{
    const uint16_t *s = (const uint16_t *)src16;
    const int64_t nt = (spatial + MVRT_MAP_TILE - 1) / MVRT_MAP_TILE;
    const int f16c = have_f16c();
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && batch * C * spatial >= MVRT_CONV_PAR_MIN)
    for (int64_t bt = 0; bt < batch * nt; bt++) {
        float tile[MVRT_MAP_TILE][MVRT_MAP_TILE];
        const int64_t b = bt / nt, i0 = bt % nt * MVRT_MAP_TILE;
        const int64_t ni = spatial - i0 < MVRT_MAP_TILE ? spatial - i0 : MVRT_MAP_TILE;
        for (int64_t c0 = 0; c0 < C; c0 += MVRT_MAP_TILE) {
            const int64_t nc = C - c0 < MVRT_MAP_TILE ? C - c0 : MVRT_MAP_TILE;
            for (int64_t i = 0; i < ni; i++) /* contiguous channels of one position */
                convert_seg(t, f16c, 0, s + (b * spatial + i0 + i) * Cs + c0, tile[i], nc);
            for (int64_t c = 0; c < nc; c++)
                for (int64_t i = 0; i < ni; i++)
                    dst[(b * C + c0 + c) * spatial + i0 + i] = tile[i][c];
        }
    }
}

static void nchw_to_nhwc16(int t, const float *src, void *dst16, int64_t batch, int64_t C, int64_t Cs,
                           int64_t spatial, int threads)
{
    uint16_t *d = (uint16_t *)dst16;
    const int64_t nt = (spatial + MVRT_MAP_TILE - 1) / MVRT_MAP_TILE;
    const int f16c = have_f16c();
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && batch * C * spatial >= MVRT_CONV_PAR_MIN)
    for (int64_t bt = 0; bt < batch * nt; bt++) {
        float tile[MVRT_MAP_TILE][MVRT_MAP_TILE];
        const int64_t b = bt / nt, i0 = bt % nt * MVRT_MAP_TILE;
        const int64_t ni = spatial - i0 < MVRT_MAP_TILE ? spatial - i0 : MVRT_MAP_TILE;
        for (int64_t c0 = 0; c0 < C; c0 += MVRT_MAP_TILE) {
            const int64_t nc = C - c0 < MVRT_MAP_TILE ? C - c0 : MVRT_MAP_TILE;
            for (int64_t c = 0; c < nc; c++)
                for (int64_t i = 0; i < ni; i++)
                    tile[i][c] = src[(b * C + c0 + c) * spatial + i0 + i];
            for (int64_t i = 0; i < ni; i++) /* contiguous channels of one position */
                convert_seg(t, f16c, 1, tile[i], d + (b * spatial + i0 + i) * Cs + c0, nc);
        }
        for (int64_t i = 0; i < ni && Cs > C; i++) /* the padding channels: zeros (+0 in bf16 and fp16) */
            memset(d + (b * spatial + i0 + i) * Cs + C, 0, (size_t)(Cs - C) * sizeof *d);
    }
}

/* v[0, n) rounded to the 16-bit type t and widened back, in place: a
 * conv's y of the other 16-bit type is first rounded to x's, as the GPU
 * rounds it (mv_op_params.h). */
static void round_through16(int t, float *v, int64_t n, int threads)
{
    enum { SEG = 256 };
    const int f16c = have_f16c();
    const int64_t segs = (n + SEG - 1) / SEG;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && n >= MVRT_CONV_PAR_MIN)
    for (int64_t i = 0; i < segs; i++) {
        uint16_t h[SEG];
        const int64_t m = n - i * SEG < SEG ? n - i * SEG : SEG;
        convert_seg(t, f16c, 1, v + i * SEG, h, m);
        convert_seg(t, f16c, 0, h, v + i * SEG, m);
    }
}

/* A conv with 16-bit NHWC maps through NCHW float copies in scratch: the
 * output rounded to 16 bits once, after bias, activation and residual
 * (twice for a y of the other type than x: round_through16). */
static void conv2d_nhwc16(const mvrt_conv2d_params_t *p, char *scratch, int threads)
{
    mvrt_conv2d_params_t q = *p;
    q.x_nhwc16 = q.y_nhwc16 = 0;
    const int64_t in_sp = p->in_h * p->in_w, out_sp = p->out_h * p->out_w;
    if (p->x_nhwc16) {
        float *x32 = (float *)(void *)scratch;
        nhwc16_to_nchw(p->x_nhwc16, p->x, x32, p->batch, p->in_channels, mvrt_conv2d_x_stored(p), in_sp, threads);
        q.x = x32;
        scratch += round_up(conv_in_floats(p) * sizeof(float));
    }
    if (p->y_nhwc16) {
        float *y32 = (float *)(void *)scratch;
        q.y = y32;
        if (p->residual) {
            float *r32 = (float *)(void *)(scratch + round_up(conv_out_floats(p) * sizeof(float)));
            nhwc16_to_nchw(p->y_nhwc16, p->residual, r32, p->batch, p->out_channels, mvrt_conv2d_y_stored(p),
                           out_sp, threads);
            q.residual = r32;
        }
    }
    mvrt_cpu_conv2d(&q, threads);
    if (p->x_nhwc16 && p->y_nhwc16 && p->y_nhwc16 != p->x_nhwc16)
        round_through16(p->x_nhwc16, q.y, (int64_t)conv_out_floats(p), threads);
    if (p->y_nhwc16)
        nchw_to_nhwc16(p->y_nhwc16, q.y, p->y, p->batch, p->out_channels, mvrt_conv2d_y_stored(p), out_sp, threads);
}

/* Attention with 16-bit qkv and/or output through fp32 copies in
 * scratch: the output rounded to 16 bits once. */
static void attention_storage16(const mvrt_attention_params_t *p, char *scratch, int threads)
{
    mvrt_attention_params_t q = *p;
    q.qkv16 = q.out16 = 0;
    const int64_t rows = p->batch * p->length, C = (int64_t)p->heads * p->head_dim;
    if (p->qkv16) {
        float *qkv32 = (float *)(void *)scratch;
        widen_rows(p->qkv16, (const uint16_t *)(const void *)p->qkv, 0, 3 * C, qkv32, 0, 3 * C, 1, rows, 3 * C,
                   threads);
        q.qkv = qkv32;
        scratch += round_up((size_t)(rows * 3 * C) * sizeof(float));
    }
    if (p->out16)
        q.out = (float *)(void *)scratch;
    mvrt_cpu_attention(&q, threads);
    if (p->out16)
        narrow_rows(p->out16, q.out, 0, C, (uint16_t *)(void *)p->out, 0, C, 1, rows, C, threads);
}

static void window_nhwc16(const mvrt_window_params_t *p, int reverse, float *map32, int threads)
{
    mvrt_window_params_t q = *p;
    q.map_nhwc16 = 0;
    const int64_t sp = p->height * p->width;
    if (!reverse) {
        nhwc16_to_nchw(p->map_nhwc16, p->src, map32, p->batch, p->channels, p->channels, sp, threads);
        q.src = map32;
        mvrt_cpu_window_partition(&q, threads);
    } else {
        q.dst = map32;
        mvrt_cpu_window_reverse(&q, threads);
        nchw_to_nhwc16(p->map_nhwc16, map32, p->dst, p->batch, p->channels, p->channels, sp, threads);
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
        if (p->u.layernorm.x16 || p->u.layernorm.y16)
            layernorm_storage16(&p->u.layernorm, (char *)scratch, threads);
        else
            mvrt_cpu_layernorm(&p->u.layernorm, threads);
        return 0;
    case MVRT_OP_LINEAR:
        if (p->u.linear.a16 || p->u.linear.b16 || p->u.linear.y16)
            linear_storage16(&p->u.linear, (char *)scratch, threads);
        else
            mvrt_cpu_linear(&p->u.linear, threads);
        return 0;
    case MVRT_OP_DWCONV1D_SILU:
        if (p->u.dwconv1d.x16 || p->u.dwconv1d.y_copy16 || p->u.dwconv1d.y16)
            dwconv1d_storage16(&p->u.dwconv1d, (char *)scratch, threads);
        else
            mvrt_cpu_dwconv1d_silu(&p->u.dwconv1d, threads);
        return 0;
    case MVRT_OP_ATTENTION:
        if (p->u.attention.qkv16 || p->u.attention.out16)
            attention_storage16(&p->u.attention, (char *)scratch, threads);
        else
            mvrt_cpu_attention(&p->u.attention, threads);
        return 0;
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
            nhwc16_to_nchw(q.x_nhwc16, q.x, (float *)scratch, q.batch, q.channels, q.channels, q.spatial, threads);
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
