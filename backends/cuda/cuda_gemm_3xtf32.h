/* fp32 GEMMs on tensor cores through CUTLASS's 3xTF32 kernels, for the CUDA
 * backend's GEMM hook (cuda_blas.c). CUDA only; built when the CUTLASS
 * headers are found (MVRT_HAVE_CUTLASS) for the sm_80+ targets of the build.
 *
 * Why: the H100 runs fp32 SIMT math (cuBLAS SGEMM) at 41-50 TFLOP/s on the
 * MambaVision shapes, but TF32 tensor cores at 220-350. 3xTF32 splits each
 * fp32 operand x into a TF32 "big" part and a TF32 "small" remainder
 * (x - big) and sums big*big + big*small + small*big in fp32 on the tensor
 * cores: the dropped small*small term is below fp32 rounding, so the result
 * has fp32 accuracy (measured on an H100 against double: rms relative error
 * 0.8-1.5e-8, cuBLAS SGEMM 2.4e-8) at 65-71 TFLOP/s (1.4-1.7x SGEMM).
 * Limits: infinities in an operand become NaN (inf - inf in the split), as
 * in CUTLASS; finite overflow behaves as fp32.
 *
 * Contract of mvrt_cuda_gemm_3xtf32: the mvrt_gpu_gemm_t of
 * backends/gpu_common/mv_gpu_launch.h with fp32 operands and output
 * (bf16_operands = 0). Queues one kernel on `s`; allocates nothing, does
 * not synchronize (legal during graph capture). Returns MVRT_GPU_GEMM_OK,
 * MVRT_GPU_GEMM_FUSED when it also applied the call's epi_bias/epi_act (NT
 * layout, batch 1, a 16-byte aligned bias, and beta 0 with GELU (erf) or no
 * activation, or beta 1 with a bias and no activation), MVRT_GPU_GEMM_DECLINED when it does not serve the call (sizes beyond int,
 * leading dimensions, batch strides or pointers not multiples of 4 floats,
 * a device below sm_80, a build without CUTLASS): the caller then uses
 * cuBLAS SGEMM; or MVRT_GPU_GEMM_FAILED with a message in msg. Thread-safe
 * (no shared state). `sm_count` enters the tile choice (fewer than two
 * waves of blocks take a smaller tile; the table in the .cu). */
#ifndef MVRT_BACKENDS_CUDA_GEMM_3XTF32_H
#define MVRT_BACKENDS_CUDA_GEMM_3XTF32_H

#include <stddef.h>
#include "../gpu_common/mv_gpu_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build has the 3xTF32 kernels (CUTLASS found, an sm_80+
 * target); 0 otherwise (every call declines). */
int mvrt_cuda_gemm_3xtf32_built(void);
/* The architecture (major * 10 + minor) of the code of this file that the
 * driver loaded for the current device, or 0 when it carries none the
 * device can load: its kernels run only where this is 80 or more. */
int mvrt_cuda_gemm_3xtf32_code_arch(void);
int mvrt_cuda_gemm_3xtf32(cudaStream_t s, const mvrt_gpu_gemm_t *g, int sm_count, char *msg, size_t msg_n);

#ifdef __cplusplus
}
#endif
#endif
