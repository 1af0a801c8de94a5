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
#include <stdlib.h>
#include <string.h>

#include "ops/layernorm/layernorm_gpu.cuh"
#include "ops/linear/linear_gpu.cuh"
#include "ops/linear/linear_gpu_cluster.cuh"
#include "ops/conv2d/conv2d_gpu_cluster.cuh"
#include "ops/dwconv1d/dwconv1d_gpu.cuh"
#include "ops/attention/attention_gpu.cuh"
#include "ops/conv2d/conv2d_gpu.cuh"
#include "ops/window/window_gpu.cuh"
#include "ops/pool/pool_gpu.cuh"
#include "ops/mv/mixer_proj_gpu.cuh"
#include "ops/mv/mlp_gpu_cluster.cuh"

using namespace mvrt_mv_gpu;

namespace {

/* Split-K of small GEMMs on the vendor path. A GEMM whose output has few
 * tiles (batch 1: M = 196 tokens at MambaVision batch 1) leaves most SMs
 * idle while each of its blocks walks the whole K (measured on an H100:
 * M 196, N 320, K 1280 at 4.6 TFLOP/s). Cutting K into S equal slices,
 * computed as one strided-batched vendor GEMM into S dense partial products
 * that the epilogue sums in slice order, multiplies the blocks by S; the
 * sum order is fixed, so results stay bitwise reproducible. S is a pure
 * function of the shape and the SM count (the same on the scratch query
 * and the run; equal on equal devices): the largest power of two <= 16 with
 * (128x128 tiles) * S <= SMs, K / S >= 64 and S equal slices of K, and
 * at most 2^20 partial elements. */
int gemm_splits(int64_t batch, int64_t M, int64_t N, int64_t K, const mvrt_gpu_op_ctx_t *ctx)
{
    if (!ctx->gemm || batch != 1 || ctx->sm_count <= 0 || M <= 0 || N <= 0) return 1;
    const int64_t tiles = ((M + 127) / 128) * ((N + 127) / 128);
    int s = 1;
    while (2 * s <= MVRT_SPLITK_MAX && tiles * s * 2 <= ctx->sm_count && K % (2 * s) == 0 && K / (2 * s) >= 64 &&
           M * N * 2 * s <= ((int64_t)1 << 20))
        s *= 2;
    return s;
}
int64_t splitk_bytes(int64_t batch, int64_t M, int64_t N, int64_t K, const mvrt_gpu_op_ctx_t *ctx)
{
    const int s = gemm_splits(batch, M, N, K, ctx);
    return s > 1 ? (M * N * s * (int64_t)sizeof(float) + 255) / 256 * 256 : 0;
}

/* Y = beta*Y + act(op(A) op(B) + bias) + R. `partials`: scratch of
 * splitk_bytes() for this shape (NULL when that is 0). */
int run_gemm(const gemm_args &g, int math, const mvrt_gpu_op_ctx_t *ctx, float *partials, gpuStream_t s,
             gpuError_t *err, char *msg, size_t msg_n)
{
    if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return MVRT_GPU_OP_OK;
    /* a few rows against a PyTorch weight (the head at batch 1): one warp
     * per output column (linear_gpu.cuh) */
    if (gemm_rows_takes(g)) {
        const gpuError_t e = launch_gemm_rows(g, ctx->warp_size, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
        return MVRT_GPU_OP_OK;
    }
    /* a short K and few outputs: one fused SIMT kernel (linear_gpu.cuh) */
    if (gemm_smallk_takes(g)) {
        const gpuError_t e = launch_gemm_smallk(g, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
        return MVRT_GPU_OP_OK;
    }
#if defined(MVRT_GPU_CUDA)
    /* few output tiles (batch 1): split-K and its sum in one cluster
     * kernel instead of a split vendor GEMM plus a summing kernel */
    if (ctx->cluster_gemm > 0 && math == MVRT_MATH_FP32) {
        const cgemm_plan pl = cgemm_plan_for(g, ctx->sm_count, ctx->cluster_gemm);
        if (pl.S > 0) {
            /* a dependent launch only for a channel-major A against a
             * weight whose slices are staged whole: the mixer's out_proj at
             * batch 1, right after the scan (which lets it start early),
             * copies its weight slice while the scan ends (H100: block
             * 41.7 -> 41.2 us). As dependents the other cluster GEMMs (after
             * the MLP or attention) and the chunked form made MambaVision-T
             * at batch 1 slower or no faster (PERF_NOTES, 2026-11-27). */
            const bool dependent =
                ctx->dependent_launch && g.b_const && g.ta && !g.ln_w && pl.ks <= MVRT_CGEMM_KS_MAX;
            const gpuError_t e = launch_gemm_cluster(g, pl, dependent, s);
            if (e == cudaErrorInvalidClusterSize) {
                /* a device (or MIG slice) that cannot co-schedule the
                 * cluster: the vendor path below runs instead */
                (void)cudaGetLastError();
            } else {
                if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
                return MVRT_GPU_OP_OK;
            }
        }
    }
#endif
    if (ctx->gemm && g.K > 0) {
        const int S = partials ? gemm_splits(g.batch, g.M, g.N, g.K, ctx) : 1;
        mvrt_gpu_gemm_t v = {};
        v.batch = g.batch; v.M = g.M; v.N = g.N; v.K = g.K;
        v.A = g.A; v.lda = g.lda; v.sa = g.sa; v.ta = g.ta;
        v.B = g.B; v.ldb = g.ldb; v.sb = g.sb; v.tb = g.tb;
        v.Y = g.Y; v.ldy = g.ldy; v.sy = g.sy;
        v.beta = g.beta;
        v.math = math;
        v.ab16 = 0;
        v.y16 = 0;
        /* bias per column and GELU/none may be fused into the GEMM, and a
         * bias on top of the accumulated Y (the CUDA backend's 3xTF32
         * kernels do) */
        const bool fusable = S == 1 && g.batch == 1 && !g.R && !g.y16 && (!g.bias || !g.bias_per_row) &&
                             ((g.beta == 0.f && (g.act == MVRT_ACT_NONE || g.act == MVRT_ACT_GELU_ERF)) ||
                              (g.beta == 1.f && g.act == MVRT_ACT_NONE && g.bias));
        if (fusable) {
            v.epi_bias = g.bias;
            v.epi_act = g.act;
        }
        if (S > 1) {
            /* slice k of K: columns [k*Ks, (k+1)*Ks) of op(A), rows of op(B) */
            const int64_t Ks = g.K / S;
            v.batch = S; v.K = Ks;
            v.sa = g.ta ? Ks * g.lda : Ks;
            v.sb = g.tb ? Ks : Ks * g.ldb;
            v.Y = partials; v.ldy = g.N; v.sy = g.M * g.N;
            v.beta = 0.f;
        }
        const int rc = ctx->gemm(ctx->blas, s, &v, msg, msg_n);
        if (rc == MVRT_GPU_GEMM_FUSED) return MVRT_GPU_OP_OK;
        if (rc == MVRT_GPU_GEMM_OK) {
            const gpuError_t e = S > 1 ? launch_splitk_epilogue(g, partials, S, s) : launch_epilogue(g, s);
            if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
            return MVRT_GPU_OP_OK;
        }
        if (rc != MVRT_GPU_GEMM_DECLINED) return MVRT_GPU_OP_BLAS;
    }
    const gpuError_t e = launch_sgemm(g, s);
    if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
    return MVRT_GPU_OP_OK;
}

/* The 16-bit type of a math mode (MVRT_STORAGE16_*), 0 for fp32 / TF32. */
int math_type16(int math)
{
    return math == MVRT_MATH_BF16 ? MVRT_STORAGE16_BF16 : math == MVRT_MATH_FP16 ? MVRT_STORAGE16_F16 : 0;
}
/* The math of our own fp32 GEMMs for a mode (16-bit modes compute fp32 there). */
int math_fp32_gemm(int math) { return math_type16(math) ? MVRT_MATH_FP32 : math; }

/* bf16 / fp16 math: only where a vendor GEMM takes 16-bit operands
 * (cuBLAS); our own kernel computes fp32 for every mode. */
bool use_vendor16(int math, const mvrt_gpu_op_ctx_t *ctx) { return math_type16(math) && ctx->gemm != nullptr; }

/* The stored (rows, cols) of a linear's operand and how many distinct
 * matrices it has (1 when shared over the batch). */
struct operand_shape {
    int64_t rows, cols, count;
};
operand_shape linear_a(const mvrt_linear_params_t &p)
{
    return {p.trans_a ? p.K : p.M, p.trans_a ? p.M : p.K, p.batch_stride_a == 0 ? 1 : p.batch};
}
operand_shape linear_b(const mvrt_linear_params_t &p)
{
    return {p.trans_b ? p.N : p.K, p.trans_b ? p.K : p.N, p.batch_stride_b == 0 ? 1 : p.batch};
}
int64_t align256(int64_t n) { return (n + 255) / 256 * 256; }
gemm_args linear_gemm_args(const mvrt_linear_params_t &p);
bool linear_fold_batch(const mvrt_linear_params_t &p, const gemm_args &g);
/* 16-bit math on the vendor GEMM: dense 16-bit copies of A and of B,
 * unless they are stored in 16 bits already (a16, b16) and A is not
 * transposed into one matrix (linear_fold_batch). */
int64_t linear_vendor16_scratch(const mvrt_linear_params_t &p)
{
    const operand_shape a = linear_a(p), b = linear_b(p);
    const bool a_copy = !p.a16 || linear_fold_batch(p, linear_gemm_args(p));
    return (a_copy ? align256(a.rows * a.cols * a.count * 2) : 0) +
           (p.b16 ? 0 : align256(b.rows * b.cols * b.count * 2));
}
/* 16-bit storage without a 16-bit vendor GEMM: fp32 copies of A (a16) and
 * of the product (y16). */
int64_t linear_storage_scratch(const mvrt_linear_params_t &p)
{
    const operand_shape a = linear_a(p);
    return (p.a16 ? align256(a.rows * a.cols * a.count * 4) : 0) + (p.y16 ? align256(p.batch * p.M * p.N * 4) : 0);
}

/* A short K at many outputs, A shared by the batch, B and Y both fp32 or
 * both 16-bit (the mixer's dt_proj over windows, in the float or the
 * 16-bit chain), no scratch (linear_gpu.cuh says why). Which kernel:
 *   A, B and Y 16-bit of one type, the type's tensor cores (NVIDIA)
 *       gemm_smallk_mma16_kernel (exact products, fp32 sums; batch 256,
 *       H200, against the FMA kernel: B stage 3 0.062 -> 0.049 ms, stage
 *       4 0.072 -> 0.057; T's K 20 / 40 not timed op by op, its model
 *       rows within noise either way: PERF_NOTES, session 64)
 *   otherwise (float A or B, HIP)
 *       gemm_smallk_batched_kernel (fp32 FMA whatever the math) */
bool linear_smallk_batched(const mvrt_linear_params_t &p, const gemm_args &g)
{
    return p.b16 == p.y16 && !p.ln_weight && gemm_smallk_batched_takes(g, p.a16, p.y16);
}

/* A linear whose A is transposed per item (stored K x M) against one
 * shared B into a dense Y (and residual), no per-row bias: the mixer's
 * out_proj over windows (A_b = YZ_b^T). Its A is staged as one row-major
 * (batch * M, K) 16-bit matrix, so one GEMM of batch * M rows replaces
 * `batch` GEMMs of M rows (MambaVision-T, batch 256, H200: 4 GEMMs of
 * 256 x 196 rows took 0.65 ms, 2 of 256 x 49 rows 0.53 ms, at 39-64
 * TFLOP/s). At batch 1 too: a transposed A of M = 49 or 196 tokens along
 * its contiguous dimension sent cuBLAS to unaligned fallbacks (ncu, H200,
 * MambaVision-B: 9.3 us and 10.5 + 3.1 us) where the row-major product
 * takes 3.1 and 4.9 us (`bench_cuda_ops PLUGIN batch1`). */
bool linear_fold_batch(const mvrt_linear_params_t &p, const gemm_args &g)
{
    return p.trans_a && p.batch >= 1 && p.batch_stride_b == 0 && p.ldy == p.N &&
           p.batch_stride_y == p.M * p.N && (!g.R || (g.ldr == p.N && g.sr == p.M * p.N)) &&
           !(p.bias && p.bias_per_row);
}

/* The 16-bit linear (math bf16 or fp16, of type t16): both operands
 * 16-bit (A transposed into one 16-bit matrix in the scratch where
 * linear_fold_batch holds, else as stored when a16, else a dense rounded
 * copy; B as stored
 * when b16, else a rounded copy), one vendor GEMM with fp32 accumulation
 * into Y (fp32, or 16-bit when y16), then the epilogue. OK, or DECLINED
 * (-1: g untouched, the caller then runs fp32), or an error. */
int run_linear16(const gemm_args &g, const mvrt_linear_params_t &p, void *scratch, const mvrt_gpu_op_ctx_t *ctx,
                 gpuStream_t s, gpuError_t *err, char *msg, size_t msg_n)
{
    const int t16 = math_type16(p.math);
    const operand_shape a = linear_a(p), b = linear_b(p);
    const bool fold = linear_fold_batch(p, g);
    const bool a_copy = !p.a16 || fold; /* as linear_vendor16_scratch */
    const int64_t a_bytes = a_copy ? align256(a.rows * a.cols * a.count * 2) : 0;
    uint16_t *a16 = a_copy ? (uint16_t *)scratch : (uint16_t *)(const void *)p.A;
    uint16_t *b16 = p.b16 ? (uint16_t *)(const void *)p.B : (uint16_t *)((char *)scratch + a_bytes);
    const int64_t ldb = p.b16 ? p.ldb : b.cols;
    const int64_t sb = p.b16 ? p.batch_stride_b : b.count > 1 ? b.rows * b.cols : 0;
    gemm_args f = g; /* the product's shape as the GEMM and the epilogue see it */
    int64_t lda = a.cols, sa = a.count > 1 ? a.rows * a.cols : 0;
    gpuError_t e = gpuSuccess;
    if (fold) {
        /* a16: the 16-bit chain's scan output, copied exactly */
        e = p.a16 ? launch_to16_transposed(t16, (const uint16_t *)(const void *)p.A, a.rows, a.cols, p.lda,
                                           p.batch_stride_a, a.count, a16, ctx->sm_count, s)
                  : launch_to16_transposed(t16, p.A, a.rows, a.cols, p.lda, p.batch_stride_a, a.count, a16,
                                           ctx->sm_count, s);
        f.batch = 1; f.M = p.batch * p.M; f.ta = 0; f.sy = 0; f.sr = 0;
        lda = p.K; sa = 0;
    } else if (!p.a16) {
        e = launch_to16(t16, p.A, a.rows, a.cols, p.lda, p.batch_stride_a, a.count, a16, s);
    } else {
        lda = p.lda; sa = p.batch_stride_a;
    }
    if (e == gpuSuccess && !p.b16) e = launch_to16(t16, p.B, b.rows, b.cols, p.ldb, p.batch_stride_b, b.count, b16, s);
    if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
    /* one GEMM against a weight (N, K), with the epilogue fused where the
     * device has such a kernel (Hopper: cuda_gemm16_sm90.h, whose dispatch
     * says which shapes it takes); it declines the others before writing
     * anything, and cuBLAS plus the epilogue pass below run them */
    if (ctx->gemm16 && f.batch == 1 && !f.ta && f.tb && !(f.bias && f.bias_per_row)) {
        mvrt_gpu_gemm16_t q = {};
        q.M = f.M; q.N = f.N; q.K = f.K;
        q.sm_count = ctx->sm_count;
        q.A = a16; q.lda = lda;
        q.B = b16; q.ldb = ldb;
        q.ab16 = t16;
        q.Y = f.Y; q.ldy = f.ldy; q.y16 = p.y16;
        q.R = f.R ? (const void *)f.R : f.beta != 0.f ? (const void *)f.Y : nullptr; /* of Y's type */
        q.ldr = f.R ? f.ldr : f.ldy;
        q.bias = f.bias;
        q.act = f.act;
        const int rc = ctx->gemm16(s, &q, msg, msg_n);
        if (rc == MVRT_GPU_GEMM_OK) return MVRT_GPU_OP_OK;
        if (rc != MVRT_GPU_GEMM_DECLINED) return MVRT_GPU_OP_BLAS;
    }
    mvrt_gpu_gemm_t v = {};
    v.batch = f.batch; v.M = f.M; v.N = f.N; v.K = f.K;
    v.A = a16; v.lda = lda; v.sa = sa; v.ta = f.ta;
    v.B = b16; v.ldb = ldb; v.sb = sb; v.tb = f.tb;
    v.Y = f.Y; v.ldy = f.ldy; v.sy = f.sy;
    v.beta = f.beta;
    v.math = p.math;
    v.ab16 = t16;
    v.y16 = p.y16;
    const int rc = ctx->gemm(ctx->blas, s, &v, msg, msg_n);
    if (rc == MVRT_GPU_GEMM_DECLINED) return -1;
    if (rc != MVRT_GPU_GEMM_OK) return MVRT_GPU_OP_BLAS;
    f.y16 = p.y16;
    e = launch_epilogue(f, s);
    if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
    return MVRT_GPU_OP_OK;
}

/* 16-bit storage computed in fp32 (no vendor 16-bit GEMM): A widened into the
 * scratch, the product and epilogue into a dense fp32 scratch, then
 * rounded into Y. */
int run_linear_storage_fp32(gemm_args g, const mvrt_linear_params_t &p, void *scratch, const mvrt_gpu_op_ctx_t *ctx,
                            gpuStream_t s, gpuError_t *err, char *msg, size_t msg_n)
{
    if (!scratch) return MVRT_GPU_OP_NO_SCRATCH;
    const operand_shape a = linear_a(p);
    char *next = (char *)scratch;
    gpuError_t e = gpuSuccess;
    if (p.a16) {
        float *a32 = (float *)next;
        next += align256(a.rows * a.cols * a.count * 4);
        e = launch_convert(p.a16, (const uint16_t *)(const void *)p.A, p.lda, p.batch_stride_a, a32, a.cols, a.rows * a.cols,
                           a.rows, a.cols, a.count, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
        g.A = a32; g.lda = a.cols; g.sa = a.count > 1 ? a.rows * a.cols : 0;
    }
    float *y32 = nullptr;
    if (p.y16) {
        y32 = (float *)next;
        if (p.beta != 0.f) {
            /* the 16-bit residual (Y's own or `residual`) widened into the
             * fp32 product, which accumulates onto it: one rounding */
            const uint16_t *r16 = (const uint16_t *)(const void *)(p.residual ? p.residual : p.Y);
            e = launch_convert(p.y16, r16, p.ldy, p.batch_stride_y, y32, g.N, g.M * g.N, g.M, g.N, g.batch, s);
            if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
        }
        g.Y = y32; g.ldy = g.N; g.sy = g.M * g.N; g.beta = p.beta; g.R = nullptr;
    }
    const int rc = run_gemm(g, math_fp32_gemm(p.math), ctx, nullptr, s, err, msg, msg_n);
    if (rc != MVRT_GPU_OP_OK || !p.y16) return rc;
    e = launch_convert(p.y16, y32, g.N, g.M * g.N, (uint16_t *)(void *)p.Y, p.ldy, p.batch_stride_y, g.M, g.N, g.batch, s);
    if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
    return MVRT_GPU_OP_OK;
}

int64_t linear_splitk_bytes(const mvrt_linear_params_t &p, const mvrt_gpu_op_ctx_t *ctx)
{
    return splitk_bytes(p.batch, p.M, p.N, p.K, ctx);
}

gemm_args linear_gemm_args(const mvrt_linear_params_t &p)
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
    if (p.beta != 0.f && p.residual && p.residual != p.Y) {
        /* Y = residual + product + bias: the epilogues' residual term
         * (added after the bias, as beta Y is: the same sums) */
        g.R = p.residual; g.ldr = p.ldy; g.sr = p.batch_stride_y;
        g.beta = 0.f;
    }
    g.ln_w = p.ln_weight; g.ln_colsum = p.ln_colsum; g.ln_eps = p.ln_eps;
    g.b_const = p.b_constant;
    return g;
}

#if defined(MVRT_GPU_CUDA)
/* A linear with a folded LayerNorm (p.ln_weight) runs only on the cluster
 * GEMM (CUDA, sm_90+, fp32, few output tiles): its plan there, {0, 0}
 * where that kernel does not run it (MVRT_CUDA_LN_FOLD=0: nowhere). A pure
 * function of the shape and the device: planning and running agree. */
cgemm_plan linear_ln_plan(const gemm_args &g, const mvrt_linear_params_t &p, const mvrt_gpu_op_ctx_t *ctx)
{
    if (!ctx->ln_fold || p.math != MVRT_MATH_FP32 || p.a16 || p.b16 || p.y16 || !cgemm_ln_layout(g))
        return cgemm_plan{0, 0};
    return cgemm_plan_for(g, ctx->sm_count, ctx->cluster_gemm);
}
#endif

/* The backend takes a linear with a folded LayerNorm where it has a plan
 * and the device can run it (asked once, when the graph is planned); the
 * graph runner emits LayerNorm + linear elsewhere. */
bool linear_ln_takes(const mvrt_linear_params_t &p, const mvrt_gpu_op_ctx_t *ctx)
{
#if defined(MVRT_GPU_CUDA)
    if (p.batch <= 0 || p.M <= 0 || p.N <= 0) return false;
    const gemm_args g = linear_gemm_args(p);
    const cgemm_plan pl = linear_ln_plan(g, p, ctx);
    return pl.S > 0 && cgemm_ln_fits(g, pl);
#else
    (void)p, (void)ctx;
    return false;
#endif
}

/* A 16-bit B (b16) is read only by the vendor's 16-bit GEMM (and the
 * Hopper kernels behind ctx->gemm16), or with a 16-bit Y by the short-K
 * kernel (linear_smallk_batched, checked beside this): math bf16 / fp16 of b16's type
 * (mvrt_op_storage16 checked that), no folded LayerNorm, a K the GEMM
 * runs. Elsewhere the op is declined and the graph runner keeps fp32
 * weights. */
bool linear_b16_takes(const mvrt_linear_params_t &p, const mvrt_gpu_op_ctx_t *ctx)
{
    return use_vendor16(p.math, ctx) && !p.ln_weight && p.K > 0;
}

int run_linear(const mvrt_linear_params_t &p, void *scratch, const mvrt_gpu_op_ctx_t *ctx, gpuStream_t s,
               gpuError_t *err, char *msg, size_t msg_n)
{
    gemm_args g = linear_gemm_args(p);
    const bool storage16 = p.a16 || p.b16 || p.y16;
    if (p.batch <= 0 || p.M <= 0 || p.N <= 0) return MVRT_GPU_OP_OK;
    if (p.b16 && !linear_b16_takes(p, ctx) && !linear_smallk_batched(p, g)) return MVRT_GPU_OP_UNSUPPORTED;
    if (p.ln_weight) {
        /* linear_ln_takes said yes when the op was planned (the occupancy
         * query stays off this path) */
#if defined(MVRT_GPU_CUDA)
        const cgemm_plan pl = linear_ln_plan(g, p, ctx);
        if (pl.S > 0) {
            const gpuError_t e = launch_gemm_cluster(g, pl, false, s);
            if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
            return MVRT_GPU_OP_OK;
        }
#endif
        return MVRT_GPU_OP_UNSUPPORTED;
    }
    if (linear_smallk_batched(p, g)) {
        const gpuError_t e = gemm_smallk_mma16_takes(g, p.a16, p.y16, ctx->mma16 != 0, ctx->mma_f16 != 0)
                                 ? launch_gemm_smallk_mma16(g, p.y16, s)
                                 : launch_gemm_smallk_batched(g, p.a16, p.y16, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
        return MVRT_GPU_OP_OK;
    }
    if (use_vendor16(p.math, ctx) && p.K > 0) {
        if (!scratch && linear_vendor16_scratch(p) > 0) return MVRT_GPU_OP_NO_SCRATCH;
        const int rc = run_linear16(g, p, scratch, ctx, s, err, msg, msg_n);
        if (rc >= 0) return rc;
        if (storage16) {
            /* its scratch was planned for the 16-bit GEMM */
            snprintf(msg, msg_n, "linear: the 16-bit GEMM (M %lld, N %lld, K %lld, batch %lld) was declined",
                     (long long)p.M, (long long)p.N, (long long)p.K, (long long)p.batch);
            return MVRT_GPU_OP_TOO_LARGE;
        }
    }
    if (storage16) return run_linear_storage_fp32(g, p, scratch, ctx, s, err, msg, msg_n);
    /* fp32 / TF32; split only into a scratch planned for it (a 16-bit linear
     * the vendor GEMM declined, or a caller without scratch, runs unsplit) */
    float *partials = !use_vendor16(p.math, ctx) && linear_splitk_bytes(p, ctx) > 0 ? (float *)scratch : nullptr;
    return run_gemm(g, math_fp32_gemm(p.math), ctx, partials, s, err, msg, msg_n);
}

/* Split-K partials of a conv's GEMM follow the plan's scratch; the largest
 * GEMM of the op (a full chunk, or the 1x1 conv's batched GEMM) sizes them. */
int64_t conv_splitk_offset(const conv2d_plan &c) { return align256(c.scratch); }
int64_t conv_splitk_bytes(const mvrt_conv2d_params_t &p, const conv2d_plan &c, const mvrt_gpu_op_ctx_t *ctx)
{
    if (c.t16 || p.batch <= 0 || c.nsp <= 0) return 0;
    if (c.direct) return splitk_bytes(p.batch, p.out_channels, c.nsp, c.kdim, ctx);
    const int64_t nb = p.batch < c.chunk ? p.batch : c.chunk, last = p.batch % nb;
    const int64_t full = splitk_bytes(1, p.out_channels, nb * c.nsp, c.kdim, ctx);
    const int64_t tail = last > 0 ? splitk_bytes(1, p.out_channels, last * c.nsp, c.kdim, ctx) : 0;
    return full > tail ? full : tail;
}

/* The 16-bit map forms of a conv (x_nhwc16 / y_nhwc16): the stem's few
 * NCHW float input channels on conv_stem_tc_kernel (TF32 tensor cores,
 * sm_80+ code, the RGB stride-2 stems) or conv_smallk_kernel (direct, fp32
 * math; conv2d_gpu.cuh's table says which), NHWC 16-bit stores; every
 * other conv only as the vendor's whole-op conv (CUDA: CUTLASS's 16-bit
 * implicit GEMM with its epilogue); elsewhere the op is declined and the
 * graph keeps float maps. */
bool conv_nhwc16(const mvrt_conv2d_params_t &p) { return p.x_nhwc16 || p.y_nhwc16; }
bool conv_nhwc16_smallk(const mvrt_conv2d_params_t &p)
{
    return p.y_nhwc16 && !p.x_nhwc16 && mvrt_conv2d_y_stored(&p) == p.out_channels && conv2d_smallk(p);
}
bool conv_nhwc16_takes(const mvrt_conv2d_params_t &p, const mvrt_gpu_op_ctx_t *ctx)
{
    return conv_nhwc16_smallk(p) || (ctx->conv && ctx->conv_scratch(&p) >= 0);
}

int run_conv2d(const mvrt_conv2d_params_t &p, void *scratch, const mvrt_gpu_op_ctx_t *ctx, gpuStream_t s,
               gpuError_t *err, char *msg, size_t msg_n)
{
    if (conv_nhwc16(p)) {
        if (!conv_nhwc16_takes(p, ctx)) return MVRT_GPU_OP_UNSUPPORTED;
        if (conv_nhwc16_smallk(p)) {
            /* the stem: on TF32 tensor cores where the loaded code has
             * them and the shape fits (conv2d_gpu.cuh), else direct fp32 */
            const gpuError_t e =
                ctx->mma16 && conv_stem_tc_shape(p) ? launch_conv_stem_tc(p, s) : launch_conv_smallk(p, s);
            if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
            return MVRT_GPU_OP_OK;
        }
        if (!scratch && ctx->conv_scratch(&p) > 0) return MVRT_GPU_OP_NO_SCRATCH;
        return ctx->conv(s, &p, scratch, msg, msg_n) == MVRT_GPU_GEMM_OK ? MVRT_GPU_OP_OK : MVRT_GPU_OP_BLAS;
    }
    const conv2d_plan c = make_conv2d_plan(p, use_vendor16(p.math, ctx) ? math_type16(p.math) : 0);
    const int math = math_fp32_gemm(p.math); /* of fp32 GEMMs */
    if (p.batch <= 0 || p.out_channels <= 0 || c.nsp <= 0) return MVRT_GPU_OP_OK;
    if (c.smallk) {
        const gpuError_t e = launch_conv_smallk(p, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
        return MVRT_GPU_OP_OK;
    }
#if defined(MVRT_GPU_CUDA)
    /* few output tiles (batch 1): the implicit GEMM, its split-K and the
     * epilogue in one cluster kernel instead of im2col + a split GEMM + a
     * summing kernel */
    if (ctx->cluster_conv > 0 && math == MVRT_MATH_FP32 && !c.direct && !c.t16) {
        const cgemm_plan pl = cconv_plan_for(p, ctx->sm_count, ctx->cluster_conv);
        if (pl.S > 0) {
            const gpuError_t e = launch_conv_cluster(p, pl, s);
            if (e == cudaErrorInvalidClusterSize) {
                (void)cudaGetLastError(); /* cannot co-schedule the cluster: the paths below run */
            } else {
                if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
                return MVRT_GPU_OP_OK;
            }
        }
    }
#endif
    /* the vendor's whole-op conv where it takes p (CUDA: implicit GEMM) */
    if (ctx->conv && ctx->conv_scratch(&p) >= 0 && (scratch || ctx->conv_scratch(&p) == 0)) {
        const int rc = ctx->conv(s, &p, scratch, msg, msg_n);
        if (rc == MVRT_GPU_GEMM_OK) return MVRT_GPU_OP_OK;
        if (rc != MVRT_GPU_GEMM_DECLINED) return MVRT_GPU_OP_BLAS;
    }
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
        float *partials = scratch && splitk_bytes(g.batch, g.M, g.N, g.K, ctx) > 0
                              ? (float *)((char *)scratch + conv_splitk_offset(c)) : nullptr;
        return run_gemm(g, math, ctx, partials, s, err, msg, msg_n);
    }
    /* im2col_kernel indexes one image's pixels with 32-bit integers */
    if (c.nsp > INT32_MAX || p.in_h * p.in_w > INT32_MAX) {
        snprintf(msg, msg_n, "conv2d: images of 2^31 pixels or more are not supported");
        return MVRT_GPU_OP_TOO_LARGE;
    }
    float *T = (float *)((char *)scratch + c.col_bytes);
    uint16_t *w16 = (uint16_t *)((char *)T + align256(c.t_bytes));
    if (c.t16) {
        const gpuError_t e = launch_to16(c.t16, p.weight, p.out_channels, c.kdim, c.kdim, 0, 1, w16, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
    }
    for (int64_t b0 = 0; b0 < p.batch; b0 += c.chunk) {
        const int64_t nb = p.batch - b0 < c.chunk ? p.batch - b0 : c.chunk;
        gpuError_t e = c.t16 ? launch_im2col(p, c, b0, nb, (uint16_t *)scratch, s)
                              : launch_im2col(p, c, b0, nb, (float *)scratch, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
        if (c.t16) {
            /* T = W16 . X_col16 on the vendor GEMM (sizes are bounded by
             * the chunk cap, far below its int limits) */
            mvrt_gpu_gemm_t v = {};
            v.batch = 1; v.M = p.out_channels; v.N = nb * c.nsp; v.K = c.kdim;
            v.A = w16; v.lda = c.kdim; v.sa = 0; v.ta = 0;
            v.B = scratch; v.ldb = nb * c.nsp; v.sb = 0; v.tb = 0;
            v.Y = T; v.ldy = nb * c.nsp; v.sy = 0;
            v.beta = 0.f;
            v.math = p.math;
            v.ab16 = c.t16;
            v.y16 = 0;
            const int rc = ctx->gemm(ctx->blas, s, &v, msg, msg_n);
            if (rc == MVRT_GPU_GEMM_DECLINED) {
                snprintf(msg, msg_n, "conv2d: the 16-bit GEMM (M %lld, N %lld, K %lld) was declined",
                         (long long)v.M, (long long)v.N, (long long)v.K);
                return MVRT_GPU_OP_TOO_LARGE;
            }
            if (rc != MVRT_GPU_GEMM_OK) return MVRT_GPU_OP_BLAS;
            e = launch_conv_gather(p, c, b0, nb, T, s);
            if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
            continue;
        }
        float *col = (float *)scratch;
        gemm_args g;
        g.batch = 1; g.M = p.out_channels; g.N = nb * c.nsp; g.K = c.kdim;
        g.A = p.weight; g.lda = c.kdim; g.sa = 0; g.ta = 0;
        g.B = col; g.ldb = nb * c.nsp; g.sb = 0; g.tb = 0;
        g.Y = T; g.ldy = nb * c.nsp; g.sy = 0;
        g.bias = nullptr; g.bias_per_row = 1;
        g.R = nullptr; g.ldr = 0; g.sr = 0;
        g.act = MVRT_ACT_NONE;
        g.beta = 0.f;
        /* One image: T (Cout, Hout*Wout) is the image's y, so the GEMM
         * writes y with the bias, activation and residual in its epilogue
         * (no gather pass; batch 1). The residual never aliases y (the
         * conv2d contract), so a vendor GEMM writing Y before the epilogue
         * reads R loses nothing. */
        const bool to_y = nb == 1;
        if (to_y) {
            g.Y = p.y + b0 * out_img; g.ldy = c.nsp;
            g.bias = p.bias;
            g.R = p.residual ? p.residual + b0 * out_img : nullptr; g.ldr = c.nsp;
            g.act = p.activation;
        }
        float *partials = splitk_bytes(1, g.M, g.N, g.K, ctx) > 0 ? (float *)((char *)scratch + conv_splitk_offset(c))
                                                                   : nullptr;
        const int rc = run_gemm(g, math, ctx, partials, s, err, msg, msg_n);
        if (rc != MVRT_GPU_OP_OK) return rc;
        if (to_y) continue;
        e = launch_conv_gather(p, c, b0, nb, T, s);
        if (e != gpuSuccess) { *err = e; return MVRT_GPU_OP_LAUNCH; }
    }
    return MVRT_GPU_OP_OK;
}

/* one block per token (mixer_proj_fits bounds the count); `dependent`: as
 * a programmatic dependent launch (CUDA sm_90+, gpu_vendor.h) */
gpuError_t launch_mixer_proj(const mvrt_mixer_proj_params_t &p, bool dependent, gpuStream_t s)
{
    const unsigned blocks = (unsigned)(p.batch * p.length);
    /* the weights in registers where they fit (mixer_proj_gpu.cuh's table) */
    const int pre = mixer_proj_preload(p);
    void (*fn)(mvrt_mixer_proj_params_t) =
        p.width == 3 ? (pre == MPROJ_PRE_WIDE    ? mixer_proj_kernel<3, MPROJ_PRE_WIDE>
                        : pre == MPROJ_PRE_SMALL ? mixer_proj_kernel<3, MPROJ_PRE_SMALL>
                                                 : mixer_proj_kernel<3, MPROJ_PRE_NONE>)
                     : (pre == MPROJ_PRE_WIDE    ? mixer_proj_kernel<0, MPROJ_PRE_WIDE>
                        : pre == MPROJ_PRE_SMALL ? mixer_proj_kernel<0, MPROJ_PRE_SMALL>
                                                 : mixer_proj_kernel<0, MPROJ_PRE_NONE>);
    return mvrt_launch_ex(fn, dim3(blocks), dim3(MVRT_MPROJ_THREADS), 0, s, 0, dependent, p);
}

#if defined(MVRT_GPU_CUDA)
/* The fused MLP's plan where the context allows it ({0}: declined; fp32
 * only: the op has no bf16 or TF32 form). */
mlp_plan mlp_plan_ctx(const mvrt_mlp_params_t &p, const mvrt_gpu_op_ctx_t *ctx)
{
    if (!ctx->fused_mlp) return mlp_plan{0, 0, 0, 0, 0};
    return mlp_plan_for(p, ctx->sm_count);
}
#endif

} // namespace

extern "C" int mvrt_gpu_op_takes(const mvrt_op_params_t *p, const mvrt_gpu_op_ctx_t *ctx)
{
    if (mvrt_op_storage16(p) < 0) return 0; /* 16-bit fields against the rules of mv_op_params.h */
    if (p->kind == MVRT_OP_CONV2D && conv_nhwc16(p->u.conv2d)) return conv_nhwc16_takes(p->u.conv2d, ctx);
    if (p->kind == MVRT_OP_LINEAR && p->u.linear.ln_weight) return linear_ln_takes(p->u.linear, ctx);
    if (p->kind == MVRT_OP_LINEAR && p->u.linear.b16)
        return linear_b16_takes(p->u.linear, ctx) || linear_smallk_batched(p->u.linear, linear_gemm_args(p->u.linear));
    if (p->kind == MVRT_OP_ATTENTION && (p->u.attention.qkv16 || p->u.attention.out16))
        return attention_io16_takes(p->u.attention, ctx->mma16 != 0, ctx->mma_f16 != 0, ctx->smem_limit);
    if (p->kind == MVRT_OP_DWCONV1D_SILU && (p->u.dwconv1d.x16 || p->u.dwconv1d.y_copy16 || p->u.dwconv1d.y16))
        return dwconv1d_rows_form(p->u.dwconv1d, ctx->sm_count);
    if (p->kind == MVRT_OP_MLP) {
#if defined(MVRT_GPU_CUDA)
        const mlp_plan pl = mlp_plan_ctx(p->u.mlp, ctx);
        return pl.S > 0 && mlp_fits(pl);
#else
        return 0;
#endif
    }
    if (p->kind != MVRT_OP_MIXER_PROJ) return 1;
#if defined(MVRT_GPU_CUDA)
    return ctx->mixer_proj_tokens > 0 && mixer_proj_fits(p->u.mixer_proj, ctx->mixer_proj_tokens);
#else
    (void)ctx;
    return 0;
#endif
}

extern "C" size_t mvrt_gpu_op_scratch(const mvrt_op_params_t *p, const mvrt_gpu_op_ctx_t *ctx)
{
    if (p->kind == MVRT_OP_CONV2D && conv_nhwc16(p->u.conv2d))
        return conv_nhwc16_takes(p->u.conv2d, ctx) && !conv_nhwc16_smallk(p->u.conv2d)
                   ? (size_t)ctx->conv_scratch(&p->u.conv2d) : 0;
    if (p->kind == MVRT_OP_CONV2D) {
        const conv2d_plan c = make_conv2d_plan(
            p->u.conv2d, use_vendor16(p->u.conv2d.math, ctx) ? math_type16(p->u.conv2d.math) : 0);
        if (c.smallk) return 0; /* conv_smallk_kernel needs none */
        const int64_t split = conv_splitk_bytes(p->u.conv2d, c, ctx);
        const int64_t own = split > 0 ? conv_splitk_offset(c) + split : c.scratch;
        /* room for either path: the vendor conv may decline at run time */
        const int64_t vendor = ctx->conv ? ctx->conv_scratch(&p->u.conv2d) : -1;
        return (size_t)(vendor > own ? vendor : own);
    }
    if (p->kind == MVRT_OP_LINEAR) {
        const mvrt_linear_params_t &l = p->u.linear;
        if (l.ln_weight) return 0; /* the cluster GEMM only */
        if (linear_smallk_batched(l, linear_gemm_args(l))) return 0;
        const bool storage16 = l.a16 || l.b16 || l.y16;
        /* K = 0 never reaches the vendor GEMM: the storage path runs */
        if (use_vendor16(l.math, ctx) && (l.K > 0 || !storage16)) return (size_t)linear_vendor16_scratch(l);
        if (storage16) return (size_t)linear_storage_scratch(l);
        return (size_t)linear_splitk_bytes(l, ctx);
    }
    return 0;
}

extern "C" int mvrt_gpu_op_run(const mvrt_op_params_t *p, void *scratch, const mvrt_gpu_op_ctx_t *ctx, gpuStream_t s,
                               gpuError_t *out_err, char *msg, size_t msg_n)
{
    gpuError_t e = gpuSuccess;
    *out_err = gpuSuccess;
    if (msg_n) msg[0] = 0;
    if (mvrt_op_storage16(p) < 0) {
        snprintf(msg, msg_n, "op kind %d: 16-bit storage fields must hold 0, MVRT_STORAGE16_BF16 or "
                             "MVRT_STORAGE16_F16, one type per op, matching a bf16 / fp16 math; a conv's x / y_map_channels "
                             "0 or in [channels, 65536] with that map in 16 bits", p->kind);
        return MVRT_GPU_OP_UNSUPPORTED;
    }
    switch (p->kind) {
    case MVRT_OP_LAYERNORM: e = launch_layernorm(p->u.layernorm, ctx->warp_size, ctx->sm_count, s); break;
    case MVRT_OP_LINEAR: return run_linear(p->u.linear, scratch, ctx, s, out_err, msg, msg_n);
    case MVRT_OP_DWCONV1D_SILU:
        if ((p->u.dwconv1d.x16 || p->u.dwconv1d.y_copy16 || p->u.dwconv1d.y16) &&
            !dwconv1d_rows_form(p->u.dwconv1d, ctx->sm_count)) {
            snprintf(msg, msg_n, "dwconv1d: the 16-bit forms (x16, y_copy16, y16) need the whole-row kernel's shapes: "
                                 "channel-contiguous x, length-contiguous outputs, length <= %d, width <= %d, and at "
                                 "least 2 blocks per multiprocessor",
                     MVRT_DW_ROWS_LMAX, MVRT_DW_ROWS_WMAX);
            return MVRT_GPU_OP_UNSUPPORTED;
        }
        e = launch_dwconv1d(p->u.dwconv1d, ctx->sm_count, s);
        break;
    case MVRT_OP_ATTENTION:
        if ((p->u.attention.qkv16 || p->u.attention.out16) &&
            !attention_io16_takes(p->u.attention, ctx->mma16 != 0, ctx->mma_f16 != 0, ctx->smem_limit)) {
            snprintf(msg, msg_n, "attention: 16-bit qkv / output need both fields set, bf16 / fp16 math, the math's "
                                 "16-bit tensor-core kernels (NVIDIA sm_80+ code; fp16: sm_75+), length <= %d, "
                                 "head_dim <= 64 and K and V within the block's %zu bytes of shared memory",
                     MVRT_ATT16_MAXL, ctx->smem_limit);
            return MVRT_GPU_OP_UNSUPPORTED;
        }
        e = launch_attention(p->u.attention, ctx->sm_count, ctx->mma16 != 0, ctx->mma_f16 != 0,
                             ctx->mma_tf32x3 != 0, ctx->split_attention != 0, ctx->smem_limit, s);
        break;
    case MVRT_OP_CONV2D: return run_conv2d(p->u.conv2d, scratch, ctx, s, out_err, msg, msg_n);
    case MVRT_OP_WINDOW_PARTITION:
    case MVRT_OP_WINDOW_REVERSE:
        if (!window_fits(p->u.window)) {
            snprintf(msg, msg_n, "window partition/reverse: images of 2^31 padded positions or more are not supported");
            return MVRT_GPU_OP_TOO_LARGE;
        }
        e = launch_window(p->u.window, p->kind == MVRT_OP_WINDOW_REVERSE, s);
        break;
    case MVRT_OP_AFFINE_AVGPOOL: e = launch_affine_avgpool(p->u.pool, ctx->warp_size, s); break;
    case MVRT_OP_MIXER_PROJ:
        if (!mvrt_gpu_op_takes(p, ctx)) return MVRT_GPU_OP_UNSUPPORTED;
        e = launch_mixer_proj(p->u.mixer_proj,
                              ctx->dependent_launch != 0 && mixer_proj_one_wave(p->u.mixer_proj, ctx->sm_count), s);
        break;
    case MVRT_OP_MLP: {
#if defined(MVRT_GPU_CUDA)
        /* the plan only: the co-scheduling was asked when the op was taken */
        const mlp_plan pl = mlp_plan_ctx(p->u.mlp, ctx);
        if (!pl.S) return MVRT_GPU_OP_UNSUPPORTED;
        e = launch_mlp_cluster(p->u.mlp, pl, ctx->dependent_launch != 0, s);
        break;
#else
        return MVRT_GPU_OP_UNSUPPORTED;
#endif
    }
    default: return MVRT_GPU_OP_UNSUPPORTED;
    }
    if (e != gpuSuccess) {
        *out_err = e;
        return MVRT_GPU_OP_LAUNCH;
    }
    return MVRT_GPU_OP_OK;
}

/* ---- the architecture of the loaded code -------------------------------- */

/* An empty kernel of this file: its attributes say which of the plugin's
 * images the driver loaded for the current device. */
__global__ void mvrt_gpu_code_arch_probe_kernel() {}

int mvrt_gpu_loaded_code_arch(gpuError_t *out_err)
{
#if defined(MVRT_GPU_CUDA)
    cudaFuncAttributes a;
    memset(&a, 0, sizeof a);
    const cudaError_t e = cudaFuncGetAttributes(&a, mvrt_gpu_code_arch_probe_kernel);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *out_err = e;
        return 0;
    }
    /* ptxVersion: the virtual architecture the loaded code was compiled
     * from (what __CUDA_ARCH__ was): 75 for code the driver JIT-compiled
     * from compute_75 PTX, 90 for sm_90 machine code. */
    return a.ptxVersion;
#else
    (void)out_err;
    return -1; /* HIP: one code object per gfx target, no JIT across targets */
#endif
}
