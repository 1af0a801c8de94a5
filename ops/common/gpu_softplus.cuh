/* softplus(v) = log(1 + e^v) in fp32 on GPUs (CUDA and HIP): the selective
 * scan's step function (delta_softplus), shared by the scan kernels
 * (ops/selective_scan/selective_scan_gpu.cuh) and the fused mixer
 * projections that apply it for the scan after them
 * (ops/mv/mixer_proj_gpu.cuh, dt_softplus), so that both give bitwise the
 * same step. Accurate libm functions; linear above 20, where log1p(e^v)
 * rounds to v in fp32. */
#ifndef MVRT_OPS_COMMON_GPU_SOFTPLUS_CUH
#define MVRT_OPS_COMMON_GPU_SOFTPLUS_CUH

static __device__ __forceinline__ float mvrt_softplusf(float v) { return v <= 20.f ? log1pf(expf(v)) : v; }

#endif
