/* Launchers of the MambaVision op kernels (ops/<op>/<op>_gpu.cuh) behind
 * the C interface of mv_gpu_launch.h. Compiled by nvcc for the CUDA backend
 * (MVRT_GPU_HOST_CUDA) and by clang as HIP for the HIP backend
 * (MVRT_GPU_HOST_HIP).
 *
 * GEMMs (linear, conv2d): through the context's vendor BLAS hook when there
 * is one (cuBLAS on CUDA) followed by our epilogue kernel for bias /
 * activation / residual; otherwise (HIP, or the hook declining the sizes)
 * our own sgemm_kernel with the epilogue fused. */
#include "mv_gpu_launch.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ops/layernorm/layernorm_gpu.cuh"
#include "ops/linear/linear_gpu.cuh"
#include "ops/dwconv1d/dwconv1d_gpu.cuh"
#include "ops/attention/attention_gpu.cuh"
#include "ops/conv2d/conv2d_gpu.cuh"
#include "ops/window/window_gpu.cuh"
#include "ops/pool/pool_gpu.cuh"

using namespace mvrt_mv_gpu;

namespace {

/* Y = beta*Y + act(op(A) op(B) + bias) + R. */
int run_gemm(const gemm_args &g, int math, const mvrt_gpu_op_ctx_t *ctx, gpuStream_t s, gpuError_t *err, char *msg,
             size_t msg_n)
{
    if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return MVRT_GPU_OP_OK;
    if (ctx->gemm && g.K > 0) {
        mvrt_gpu_gemm_t v;
        v.batch = g.batch; v.M = g.M; v.N = g.N; v.K = g.K;
        v.A = g.A; v.lda = g.lda; v.sa = g.sa; v.ta = g.ta;
        v.B = g.B; v.ldb = g.ldb; v.sb = g.sb; v.tb = g.tb;
        v.Y = g.Y; v.ldy = g.ldy; v.sy = g.sy;
        v.beta = g.beta;
        v.math = math;
        const int rc = ctx->gemm(ctx->blas, s, &v, msg, msg_n);
        if (rc == MVRT_GPU_GEMM_OK) {
            const gpuError_t e = launch_epilogue(g, s);
            if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
            return MVRT_GPU_OP_OK;
        }
        if (rc != MVRT_GPU_GEMM_DECLINED) return MVRT_GPU_OP_BLAS;
    }
    const gpuError_t e = launch_sgemm(g, s);
    if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
    return MVRT_GPU_OP_OK;
}

int run_linear(const mvrt_linear_params_t &p, const mvrt_gpu_op_ctx_t *ctx, gpuStream_t s, gpuError_t *err,
               char *msg, size_t msg_n)
{
    gemm_args g;
    g.batch = p.batch; g.M = p.M; g.N = p.N; g.K = p.K;
    g.A = p.A; g.lda = p.lda; g.sa = p.batch_stride_a; g.ta = p.trans_a;
    g.B = p.B; g.ldb = p.ldb; g.sb = p.batch_stride_b; g.tb = p.trans_b;
    g.Y = p.Y; g.ldy = p.ldy; g.sy = p.batch_stride_y;
    g.bias = p.bias; g.bias_per_row = p.bias_per_row;
    g.R = nullptr; g.ldr = 0; g.sr = 0;
    g.act = p.activation;
    g.beta = p.beta;
    return run_gemm(g, p.math, ctx, s, err, msg, msg_n);
}

int run_conv2d(const mvrt_conv2d_params_t &p, void *scratch, const mvrt_gpu_op_ctx_t *ctx, gpuStream_t s,
               gpuError_t *err, char *msg, size_t msg_n)
{
    const conv2d_plan c = make_conv2d_plan(p);
    if (p.batch <= 0 || p.out_channels <= 0 || c.nsp <= 0) return MVRT_GPU_OP_OK;
    if (c.scratch > 0 && !scratch) return MVRT_GPU_OP_NO_SCRATCH;
    const int64_t in_img = p.in_channels * p.in_h * p.in_w;
    const int64_t out_img = p.out_channels * c.nsp;
    if (c.direct) {
        /* 1x1: X is X_col; one batched GEMM with the epilogue fused */
        gemm_args g;
        g.batch = p.batch; g.M = p.out_channels; g.N = c.nsp; g.K = c.kdim;
        g.A = p.weight; g.lda = c.kdim; g.sa = 0; g.ta = 0;
        g.B = p.x; g.ldb = c.nsp; g.sb = in_img; g.tb = 0;
        g.Y = p.y; g.ldy = c.nsp; g.sy = out_img;
        g.bias = p.bias; g.bias_per_row = 1;
        g.R = p.residual; g.ldr = c.nsp; g.sr = out_img;
        g.act = p.activation;
        g.beta = 0.f;
        return run_gemm(g, p.math, ctx, s, err, msg, msg_n);
    }
    /* im2col_kernel indexes one image's pixels with 32-bit integers */
    if (c.nsp > INT32_MAX || p.in_h * p.in_w > INT32_MAX) {
        snprintf(msg, msg_n, "conv2d: images of 2^31 pixels or more are not supported");
        return MVRT_GPU_OP_TOO_LARGE;
    }
    float *col = (float *)scratch, *T = col + c.col_floats;
    for (int64_t b0 = 0; b0 < p.batch; b0 += c.chunk) {
        const int64_t nb = p.batch - b0 < c.chunk ? p.batch - b0 : c.chunk;
        gpuError_t e = launch_im2col(p, c, b0, nb, col, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
        gemm_args g;
        g.batch = 1; g.M = p.out_channels; g.N = nb * c.nsp; g.K = c.kdim;
        g.A = p.weight; g.lda = c.kdim; g.sa = 0; g.ta = 0;
        g.B = col; g.ldb = nb * c.nsp; g.sb = 0; g.tb = 0;
        g.Y = T; g.ldy = nb * c.nsp; g.sy = 0;
        g.bias = nullptr; g.bias_per_row = 1;
        g.R = nullptr; g.ldr = 0; g.sr = 0;
        g.act = MVRT_ACT_NONE;
        g.beta = 0.f;
        const int rc = run_gemm(g, p.math, ctx, s, err, msg, msg_n);
        if (rc != MVRT_GPU_OP_OK) return rc;
        e = launch_conv_gather(p, c, b0, nb, T, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
    }
    return MVRT_GPU_OP_OK;
}

} // namespace

extern "C" size_t mvrt_gpu_op_scratch(const mvrt_op_params_t *p)
{
    if (p->kind == MVRT_OP_CONV2D) return (size_t)make_conv2d_plan(p->u.conv2d).scratch;
    return 0;
}

extern "C" int mvrt_gpu_op_run(const mvrt_op_params_t *p, void *scratch, const mvrt_gpu_op_ctx_t *ctx, gpuStream_t s,
                               gpuError_t *out_err, char *msg, size_t msg_n)
{
    gpuError_t e = gpuSuccess;
    *out_err = gpuSuccess;
    if (msg_n) msg[0] = 0;
    switch (p->kind) {
    case MVRT_OP_LAYERNORM: e = launch_layernorm(p->u.layernorm, ctx->warp_size, s); break;
    case MVRT_OP_LINEAR: return run_linear(p->u.linear, ctx, s, out_err, msg, msg_n);
    case MVRT_OP_DWCONV1D_SILU: e = launch_dwconv1d(p->u.dwconv1d, s); break;
    case MVRT_OP_ATTENTION: e = launch_attention(p->u.attention, s); break;
    case MVRT_OP_CONV2D: return run_conv2d(p->u.conv2d, scratch, ctx, s, out_err, msg, msg_n);
    case MVRT_OP_WINDOW_PARTITION: e = launch_window(p->u.window, false, s); break;
    case MVRT_OP_WINDOW_REVERSE: e = launch_window(p->u.window, true, s); break;
    case MVRT_OP_AFFINE_AVGPOOL: e = launch_affine_avgpool(p->u.pool, ctx->warp_size, s); break;
    default: return MVRT_GPU_OP_UNSUPPORTED;
    }
    if (e != gpuSuccess) {
        *out_err = e;
        return MVRT_GPU_OP_LAUNCH;
    }
    return MVRT_GPU_OP_OK;
}
