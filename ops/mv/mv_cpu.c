/* Dispatcher of the MambaVision ops' CPU kernels (contract: mv_cpu.h). */
#include "ops/common/mv_cpu.h"
#include "ops/mv/mv_kernels.h"
#include "ops/common/cpu_half.h"

#include <stdint.h>

#define MVRT_CPU_SCRATCH_ALIGN 64 /* each fp32 copy starts on a cache line */

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
    return l->a_bf16 ? round_up((size_t)(rows * cols * count) * sizeof(float)) : 0;
}

size_t mvrt_cpu_op_scratch_bytes(const mvrt_op_params_t *p)
{
    if (p->kind == MVRT_OP_LAYERNORM && p->u.layernorm.y_bf16)
        return round_up((size_t)(p->u.layernorm.rows * p->u.layernorm.cols) * sizeof(float));
    if (p->kind == MVRT_OP_LINEAR) {
        const mvrt_linear_params_t *l = &p->u.linear;
        const size_t y = l->y_bf16 ? round_up((size_t)(l->batch * l->M * l->N) * sizeof(float)) : 0;
        return linear_a32_bytes(l) + y;
    }
    return 0;
}

/* LayerNorm into fp32 scratch, then each element rounded into the bf16 y. */
static void layernorm_bf16_out(const mvrt_layernorm_params_t *p, float *y32, int threads)
{
    mvrt_layernorm_params_t q = *p;
    q.y = y32, q.y_ld = p->cols, q.y_bf16 = 0;
    mvrt_cpu_layernorm(&q, threads);
    uint16_t *y16 = (uint16_t *)(void *)p->y;
    for (int64_t r = 0; r < p->rows; r++)
        for (int64_t c = 0; c < p->cols; c++)
            y16[r * p->y_ld + c] = mvrt_f32_to_bf16(y32[r * p->cols + c]);
}

/* A linear with bf16 A and/or Y through fp32 copies in scratch. */
static void linear_bf16_storage(const mvrt_linear_params_t *p, char *scratch, int threads)
{
    mvrt_linear_params_t q = *p;
    q.a_bf16 = q.y_bf16 = 0;
    if (p->a_bf16) {
        int64_t rows, cols, count;
        linear_a_shape(p, &rows, &cols, &count);
        float *a32 = (float *)(void *)scratch;
        const uint16_t *a16 = (const uint16_t *)(const void *)p->A;
        for (int64_t b = 0; b < count; b++)
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < cols; c++)
                    a32[(b * rows + r) * cols + c] = mvrt_bf16_to_f32(a16[b * p->batch_stride_a + r * p->lda + c]);
        q.A = a32, q.lda = cols, q.batch_stride_a = count > 1 ? rows * cols : 0;
    }
    float *y32 = NULL;
    if (p->y_bf16) {
        y32 = (float *)(void *)(scratch + linear_a32_bytes(p));
        q.Y = y32, q.ldy = p->N, q.batch_stride_y = p->M * p->N;
    }
    mvrt_cpu_linear(&q, threads);
    if (!p->y_bf16)
        return;
    uint16_t *y16 = (uint16_t *)(void *)p->Y;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t n = 0; n < p->N; n++)
                y16[b * p->batch_stride_y + m * p->ldy + n] = mvrt_f32_to_bf16(y32[(b * p->M + m) * p->N + n]);
}

int mvrt_cpu_op_run(const mvrt_op_params_t *p, void *scratch, int threads)
{
    if (threads < 1)
        threads = 1;
    if (mvrt_cpu_op_scratch_bytes(p) > 0 && !scratch)
        return -2;
    switch (p->kind) {
    case MVRT_OP_LAYERNORM:
        if (p->u.layernorm.y_bf16)
            layernorm_bf16_out(&p->u.layernorm, (float *)scratch, threads);
        else
            mvrt_cpu_layernorm(&p->u.layernorm, threads);
        return 0;
    case MVRT_OP_LINEAR:
        if (p->u.linear.a_bf16 || p->u.linear.y_bf16)
            linear_bf16_storage(&p->u.linear, (char *)scratch, threads);
        else
            mvrt_cpu_linear(&p->u.linear, threads);
        return 0;
    case MVRT_OP_DWCONV1D_SILU: mvrt_cpu_dwconv1d_silu(&p->u.dwconv1d, threads); return 0;
    case MVRT_OP_ATTENTION: mvrt_cpu_attention(&p->u.attention, threads); return 0;
    case MVRT_OP_CONV2D: mvrt_cpu_conv2d(&p->u.conv2d, threads); return 0;
    case MVRT_OP_WINDOW_PARTITION: mvrt_cpu_window_partition(&p->u.window, threads); return 0;
    case MVRT_OP_WINDOW_REVERSE: mvrt_cpu_window_reverse(&p->u.window, threads); return 0;
    case MVRT_OP_AFFINE_AVGPOOL: mvrt_cpu_affine_avgpool(&p->u.pool, threads); return 0;
    default: return -1;
    }
}

const char *mvrt_cpu_gemm_library(void)
{
    return mvrt_cpu_linear_library();
}
