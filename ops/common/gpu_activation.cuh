/* The activations of mv_op_params.h on GPUs (CUDA and HIP), shared by the
 * GEMM epilogues (ops/linear/linear_gpu.cuh), the conv gathers and the CUDA
 * backend's implicit-GEMM conv (backends/cuda/cuda_conv_3xtf32.cu). */
#ifndef MVRT_OPS_COMMON_GPU_ACTIVATION_CUH
#define MVRT_OPS_COMMON_GPU_ACTIVATION_CUH

#include "gelu_fit.h"
#include "gpu_vendor.h"
#include "mv_op_params.h"

namespace mvrt_mv_gpu {

/* The activations of mv_op_params.h in fp32 (accurate libm versions: the
 * references use erf / tanh / exp in double). */
static __device__ __forceinline__ float act_apply(int act, float x)
{
    switch (act) {
    case MVRT_ACT_RELU: return x > 0.f ? x : 0.f;
    case MVRT_ACT_GELU_ERF: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case MVRT_ACT_GELU_TANH: {
        const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return 0.5f * x * (1.f + tanhf(u));
    }
    case MVRT_ACT_SILU: return x / (1.f + expf(-x));
    default: return x;
    }
}

/* GELU's erf form from one hardware exponential, within 6e-7 of it
 * (gelu_fit.h): for epilogues that round their output to 16 bits, where
 * erff's instructions, not the product, bound the GEMM. */
static __device__ __forceinline__ float gelu_erf_fit(float x)
{
    float y;
    MVRT_GELU_ERF_FIT(y, x, mvrt_fast_exp2);
    return y;
}

} // namespace mvrt_mv_gpu

#endif
