/* bf16 / fp16 GEMMs with the whole linear epilogue fused, on Hopper's
 * wgmma and TMA (CUTLASS 3 warp-specialized kernels), for the CUDA
 * backend's 16-bit linears (the gemm16 hook of
 * backends/gpu_common/mv_gpu_launch.h).
 *
 *   Y (M, N) = act(A (M, K) B^T + bias) + R
 *
 * A: 16-bit (g->ab16: bf16 or fp16) row-major (lda); B: the same type,
 * (N, K) row-major (ldb), a PyTorch weight; fp32 accumulation; bias: N
 * floats or NULL; act: MVRT_ACT_NONE or MVRT_ACT_GELU_ERF; Y: fp32, or
 * 16-bit of A's type (rounded to nearest even once,
 * after the epilogue); R: (M, N) of Y's type with row stride ldr, may
 * equal Y (accumulate in place), only with act NONE; NULL: none.
 *
 * Why: cuBLAS plus a separate epilogue pass moved each MLP hidden through
 * HBM three times (MambaVision-T, batch 256, H200: the epilogues took 3.7
 * of the 14.2 ms per batch). Here bias, GELU and the residual are applied
 * to the accumulators before the one store.
 *
 * Built only for sm_90a (the wgmma / TMA instructions exist on compute
 * capability 9.0 alone) from the CUTLASS headers; without them, or on other
 * devices, mvrt_cuda_gemm16_sm90_usable() is 0 and the caller keeps cuBLAS.
 *
 * mvrt_cuda_gemm16_sm90: queued on `s`; allocates nothing and does not
 * synchronize (legal during graph capture). Returns MVRT_GPU_GEMM_OK,
 * MVRT_GPU_GEMM_DECLINED (nothing written: sizes, strides or alignment
 * the kernels do not take, outputs of fewer 128 x 128 tiles than
 * g->sm_count, products without an epilogue to fuse; the caller then runs
 * them another way) or
 * MVRT_GPU_GEMM_FAILED with a message in msg. Thread-safe. */
#ifndef MVRT_BACKENDS_CUDA_GEMM16_SM90_H
#define MVRT_BACKENDS_CUDA_GEMM16_SM90_H

#include <stddef.h>
#include <stdint.h>
#include "../gpu_common/mv_gpu_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the current device has compute capability 9.0, the only one
 * that runs sm_90a code (this file's and cuda_conv16_sm90.cu's kernels);
 * 0 otherwise or on an error (cleared). */
int mvrt_cuda_device_is_sm90a(void);
/* 1 when the sm_90a kernels are built and load on the current device. */
int mvrt_cuda_gemm16_sm90_usable(void);
int mvrt_cuda_gemm16_sm90(cudaStream_t s, const mvrt_gpu_gemm16_t *g, char *msg, size_t msg_n);

#ifdef __cplusplus
}
#endif
#endif
