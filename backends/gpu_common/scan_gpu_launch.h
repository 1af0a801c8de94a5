/* C interface between a GPU plugin's host code and the kernels of
 * scan_gpu_launch.cu (nvcc for CUDA, clang for HIP). All calls are
 * asynchronous on `s` and return the vendor error of the launch (gpuSuccess
 * when queued). Parameters are already
 * validated by the runtime. */
#ifndef MVRT_BACKENDS_GPU_SCAN_GPU_LAUNCH_H
#define MVRT_BACKENDS_GPU_SCAN_GPU_LAUNCH_H

#include <stddef.h>
#include "gpu_host_api.h"
#include "ops/selective_scan/scan_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-device tuning inputs: the launch configuration is a pure function of
 * these and the problem, so the workspace query and the launch agree. */
typedef struct mvrt_gpu_scan_tuning {
    size_t smem_limit; /* opt-in shared memory per block of the device */
    int tpr_override;  /* threads per channel row; 0 = automatic */
    /* The device's warp (wavefront) width: 32 on NVIDIA and AMD RDNA, 64 on
     * AMD CDNA (gfx9). Block sizes and shared memory are planned with it, to
     * match MVRT_WARP_SIZE of the kernels' device pass; the host pass cannot
     * know the AMD target, so its MVRT_WARP_SIZE must not be used here. */
    int warp_size;
    /* NVIDIA sm_90+: the fp32 warp-scan forward is queued as a
     * programmatic dependent launch (as mvrt_gpu_op_ctx_t's) */
    int dependent_launch;
} mvrt_gpu_scan_tuning_t;

gpuError_t mvrt_gpu_scan_fwd(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t, gpuStream_t s);
size_t mvrt_gpu_scan_bwd_workspace(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t);
/* p->workspace must hold at least mvrt_gpu_scan_bwd_workspace() bytes. */
gpuError_t mvrt_gpu_scan_bwd(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t, gpuStream_t s);
/* Repeats a 1-, 2- or 4-byte pattern over `bytes` (a multiple of psize). */
gpuError_t mvrt_gpu_fill_pattern(void *dst, size_t bytes, const void *pattern, size_t psize,
                                   gpuStream_t s);

#ifdef __cplusplus
}
#endif
#endif
