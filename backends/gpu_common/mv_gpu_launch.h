/* C interface between a GPU plugin's host code (gpu_backend_impl.h) and the
 * MambaVision op kernels (ops/<op>/<op>_gpu.cuh) launched by
 * mv_gpu_launch.cu (nvcc for CUDA, clang for HIP). Everything is queued on
 * the given stream: nothing here allocates, frees or synchronizes, so the
 * calls are legal while the stream is being captured into a graph.
 * Parameters are already validated by the runtime. */
#ifndef MVRT_BACKENDS_GPU_MV_GPU_LAUNCH_H
#define MVRT_BACKENDS_GPU_MV_GPU_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include "gpu_host_api.h"
#include "ops/common/mv_op_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One batched GEMM, row-major, as the linear describes it:
 *   Y_b = beta * Y_b + op(A_b) op(B_b)      (no bias or activation)
 * with the linear's conventions for trans/ld/batch strides (stride 0 shares
 * a matrix over the batch). */
typedef struct mvrt_gpu_gemm {
    int64_t batch, M, N, K;
    const void *A; int64_t lda, sa; int ta;   /* float, or 16-bit bits with ab16 */
    const void *B; int64_t ldb, sb; int tb;
    float *Y; int64_t ldy, sy;   /* float, or 16-bit bits with y16 */
    float beta; /* 0 or 1 */
    int math;   /* mvrt_math_mode_t */
    /* 0, or the 16-bit type (MVRT_STORAGE16_BF16 / _F16, the math's) that
     * A and B hold as uint16 bits instead of floats */
    int ab16;
    int y16;    /* 0 (Y fp32), or ab16's type: Y holds 16-bit bits (with ab16 only) */
    /* An epilogue the hook may fuse (set only with batch 1 and fp32, and
     * beta 0, or beta 1 with epi_bias and no activation):
     * Y = epi_act(op(A) op(B) + epi_bias[col]) (+ Y with beta 1). A hook that applies it
     * returns MVRT_GPU_GEMM_FUSED; one that returns MVRT_GPU_GEMM_OK left Y
     * = op(A) op(B) and the caller applies them. */
    const float *epi_bias; /* per column (N entries) or NULL */
    int epi_act;           /* mvrt_activation_t */
} mvrt_gpu_gemm_t;

/* A vendor BLAS GEMM behind a hook (the CUDA backend's cuBLAS,
 * backends/cuda/cuda_blas.h). Returns MVRT_GPU_GEMM_OK when queued,
 * MVRT_GPU_GEMM_FUSED when queued with epi_bias/epi_act applied,
 * MVRT_GPU_GEMM_DECLINED when it cannot take these sizes (our own kernel
 * runs instead), or MVRT_GPU_GEMM_FAILED with a message in msg. */
enum { MVRT_GPU_GEMM_OK = 0, MVRT_GPU_GEMM_DECLINED = 1, MVRT_GPU_GEMM_FAILED = 2, MVRT_GPU_GEMM_FUSED = 3 };
typedef int (*mvrt_gpu_gemm_fn)(void *blas, gpuStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n);

/* One 16-bit GEMM with the linear's epilogue (the gemm16 hook: CUDA on
 * Hopper, backends/cuda/cuda_gemm16_sm90.h), row-major:
 *   Y (M, N) = act(A (M, K) B^T + bias) + R
 * A and B hold 16-bit bits of type ab16 (MVRT_STORAGE16_BF16 / _F16; B:
 * (N, K) rows, a PyTorch weight); bias: N floats or NULL; act:
 * MVRT_ACT_NONE or MVRT_ACT_GELU_ERF; Y: floats, or 16-bit bits of the
 * same type with y16; R: NULL, or (M, N) of Y's type (floats, or y16's
 * 16-bit type: a 16-bit residual stream) with row stride ldr, possibly Y
 * itself, only with act NONE. sm_count: the
 * device's multiprocessors (the hook's tile choice depends on them). */
typedef struct mvrt_gpu_gemm16 {
    int64_t M, N, K;
    int sm_count;
    int ab16;
    const void *A; int64_t lda;
    const void *B; int64_t ldb;
    void *Y; int64_t ldy; int y16;
    const void *R; int64_t ldr; /* of Y's type: floats, or y16's */
    const float *bias;
    int act;
} mvrt_gpu_gemm16_t;
typedef int (*mvrt_gpu_gemm16_fn)(gpuStream_t s, const mvrt_gpu_gemm16_t *g, char *msg, size_t msg_n);

/* What the launchers need to know of the device. */
typedef struct mvrt_gpu_op_ctx {
    int warp_size;          /* the device's warp width (32 or 64) */
    int sm_count;           /* multiprocessors: sizes the split-K of small GEMMs */
    int mma16;              /* NVIDIA sm_80+: the bf16 / fp16 tensor-core attention kernels run
                             * (with 16-bit q, k, v: attention_io16_kernel) */
    int mma_f16;            /* NVIDIA sm_75+: those kernels run in fp16 (sm_75: m16n8k8 products) */
    size_t smem_limit;      /* shared memory a block may opt in to (the capped architecture's) */
    int mma_tf32x3;         /* NVIDIA sm_80+: fp32 attention runs on 3xTF32 tensor cores */
    /* NVIDIA sm_90+: fp32 GEMMs with fewer 64x64 output tiles than SMs run
     * as one cluster kernel (split-K summed in distributed shared memory)
     * with at most this many K slices; 0: never */
    int cluster_gemm;
    /* NVIDIA sm_90+: fp32 convs with fewer 64x64 output tiles than SMs run
     * as one cluster kernel (implicit GEMM, split-K summed in distributed
     * shared memory: conv2d_gpu_cluster.cuh) with at most this many K
     * slices; 0: never */
    int cluster_conv;
    /* NVIDIA sm_90+: fp32/fast attention with few blocks splits the keys
     * over a cluster (attention_tf32x3_kernel) */
    int split_attention;
    /* NVIDIA: MVRT_OP_MIXER_PROJ runs for at most this many tokens (0:
     * the op is declined; the graph runner emits the three ops it fuses):
     * MVRT_GPU_MIXER_PROJ_TOKENS */
    long mixer_proj_tokens;
    /* NVIDIA sm_90+: a linear with a folded LayerNorm (ln_weight) runs
     * where the cluster GEMM takes it; 0 (MVRT_CUDA_LN_FOLD=0, HIP): the
     * op is declined and the graph runner emits LayerNorm + linear */
    int ln_fold;
    /* NVIDIA sm_90+: MVRT_OP_MLP runs where its cluster kernel covers the
     * sizes (ops/mv/mlp_gpu_cluster.cuh); 0 (MVRT_CUDA_FUSED_MLP=0, HIP):
     * the op is declined and the graph runner emits LayerNorm, fc1, fc2 */
    int fused_mlp;
    /* NVIDIA sm_90+: the fused mixer projections and MLP, and the mixer's
     * out_proj on the cluster GEMM, are queued as programmatic dependent
     * launches (ops/common/gpu_vendor.h: they start while the kernel
     * before them ends and wait for its results); 0 (MVRT_CUDA_PDL=0,
     * HIP, older GPUs): plain launches */
    int dependent_launch;
    void *blas;             /* handle for `gemm` */
    mvrt_gpu_gemm_fn gemm;  /* NULL: every GEMM runs our own kernel */
    /* A vendor conv2d for whole ops (CUDA: backends/cuda/cuda_conv_3xtf32.h);
     * NULL: every conv runs im2col + GEMM. conv_scratch(p) is its scratch
     * (-1: it declines p; 0: it needs none); conv returns MVRT_GPU_GEMM_OK / _DECLINED (y
     * untouched) / _FAILED. */
    int64_t (*conv_scratch)(const mvrt_conv2d_params_t *p);
    int (*conv)(gpuStream_t s, const mvrt_conv2d_params_t *p, void *scratch, char *msg, size_t msg_n);
    /* bf16 linears with their epilogue fused (mvrt_gpu_gemm16_t; returns
     * MVRT_GPU_GEMM_OK / _DECLINED (nothing written) / _FAILED); NULL:
     * cuBLAS and a separate epilogue pass */
    mvrt_gpu_gemm16_fn gemm16;
} mvrt_gpu_op_ctx_t;

/* The default token limit of the fused mixer projections (beyond it each
 * block's full read of x_proj and dt_proj costs more than the GEMMs). */
#define MVRT_GPU_MIXER_PROJ_TOKENS 1024

/* Results of mvrt_gpu_op_run. */
enum {
    MVRT_GPU_OP_OK = 0,
    MVRT_GPU_OP_UNSUPPORTED = 1, /* unknown kind or form (msg says why when set) */
    MVRT_GPU_OP_NO_SCRATCH = 2,  /* scratch needed but NULL */
    MVRT_GPU_OP_LAUNCH = 3,      /* a launch failed: *out_err holds the vendor error */
    MVRT_GPU_OP_BLAS = 4,        /* the vendor BLAS failed: msg says how */
    MVRT_GPU_OP_TOO_LARGE = 5    /* sizes beyond what the kernels index: msg says which */
};

/* Bytes of scratch mvrt_gpu_op_run needs for p with this context (a pure
 * function of the sizes and of whether ctx has a vendor GEMM: bf16 math
 * needs one; pointers in p may be NULL). */
size_t mvrt_gpu_op_scratch(const mvrt_op_params_t *p, const mvrt_gpu_op_ctx_t *ctx);

/* 1 when mvrt_gpu_op_run takes p with this context: every kind always but
 * the mixer projections, the fused MLP and linears with a folded
 * LayerNorm, which run for the sizes and devices their kernels cover (the
 * graph runner asks before emitting them). */
int mvrt_gpu_op_takes(const mvrt_op_params_t *p, const mvrt_gpu_op_ctx_t *ctx);

/* Queues op p on stream s. scratch holds at least mvrt_gpu_op_scratch(p)
 * bytes. Returns MVRT_GPU_OP_*; on failure *out_err and/or msg say why. */
int mvrt_gpu_op_run(const mvrt_op_params_t *p, void *scratch, const mvrt_gpu_op_ctx_t *ctx, gpuStream_t s,
                    gpuError_t *out_err, char *msg, size_t msg_n);

/* The architecture of the code this plugin loaded for the current device,
 * as major * 10 + minor of the virtual architecture it was compiled from
 * (CUDA: 75 when the driver JIT-compiled compute_75 PTX on an H100, 90 for
 * sm_90 machine code). The kernels compile their sm_80 / sm_90 paths only
 * where that architecture has them, so host dispatch must choose by this,
 * not by the device's compute capability. Returns 0 with *out_err set when
 * the plugin carries no code the device can load; -1 on HIP (code objects
 * are per gfx target: the device's own, or none). */
int mvrt_gpu_loaded_code_arch(gpuError_t *out_err);

#ifdef __cplusplus
}
#endif
#endif
