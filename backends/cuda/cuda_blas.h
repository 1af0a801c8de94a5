/* cuBLAS behind the GEMM hook of the GPU ops (backends/gpu_common/
 * mv_gpu_launch.h), for the CUDA backend only; gpu_backend_impl.h reaches it
 * under MVRT_GPU_HOST_CUDA so that the shared host code stays
 * vendor-neutral.
 *
 * One handle per opened device, created at device_open with its workspace
 * (so nothing is allocated while a stream is captured into a graph).
 * Math: MVRT_MATH_FP32 keeps fp32 accuracy: on sm_80+ devices of a build
 * with CUTLASS it runs CUTLASS's 3xTF32 kernels (cuda_gemm_3xtf32.h: error
 * at or below SGEMM's, 1.4-1.7x its speed on an H100); otherwise, for
 * shapes those decline, or with MVRT_CUDA_FP32_GEMM=sgemm, plain fp32 cuBLAS
 * (CUBLAS_COMPUTE_32F with the default math mode: no TF32, as PyTorch with
 * TF32 off). MVRT_MATH_FAST uses CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor
 * cores). */
#ifndef MVRT_BACKENDS_CUDA_BLAS_H
#define MVRT_BACKENDS_CUDA_BLAS_H

#include <stddef.h>
#include "../gpu_common/mv_gpu_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates the handle for the current device. code_arch: the architecture
 * whose paths the backend dispatches (the device's, capped by the loaded
 * code): the 3xTF32 kernels are used only where it is 80 or more. Returns
 * 0, or nonzero with a message (the caller then runs every GEMM on its own
 * kernel). */
int mvrt_cuda_blas_create(void **out_blas, int code_arch, char *msg, size_t msg_n);
/* Releases it (the device must be current); NULL is a no-op. */
void mvrt_cuda_blas_destroy(void *blas);
/* 1 when this handle's fp32 GEMMs go to the 3xTF32 kernels (then the
 * backend also runs fp32 convs as 3xTF32 implicit GEMMs). */
int mvrt_cuda_blas_uses_3xtf32(const void *blas);
/* The mvrt_gpu_gemm_fn hook. Thread-safe. */
int mvrt_cuda_blas_gemm(void *blas, cudaStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n);

#ifdef __cplusplus
}
#endif
#endif
