/* 16-bit tensor-core building blocks (bf16 / fp16 operands, fp32
 * accumulation) shared by the NVIDIA-only kernels of the 16-bit modes
 * (attention, the stem conv): compiled only for NVIDIA sm_80+ device
 * passes (MVRT_MMA16_DEVICE); HIP and older targets see nothing.
 *
 * Fragment layouts of the PTX ISA for mma.m16n8k16.row.col (lane = 4 g +
 * c; each register holds two 16-bit values, the lower column first):
 * A (g, 2c), (g + 8, 2c), (g, 2c + 8), (g + 8, 2c + 8); B (k = 2c, n = g),
 * (k = 2c + 8, n = g); C (g, 2c), (g, 2c + 1), (g + 8, 2c), (g + 8, 2c + 1).
 * T16 is MVRT_STORAGE16_BF16 or MVRT_STORAGE16_F16 (mv_op_params.h). */
#ifndef MVRT_OPS_GPU_MMA16_CUH
#define MVRT_OPS_GPU_MMA16_CUH

#include "gpu_vendor.h"
#include "mv_op_params.h"
#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(MVRT_GPU_HIP)
#define MVRT_MMA16_DEVICE 1

/* two floats -> two 16-bit values of type T16 (round to nearest even) in
 * one 32-bit word, lo first: one cvt instruction */
template <int T16> static __device__ __forceinline__ uint32_t mvrt_pack16x2(float lo, float hi)
{
    uint32_t r;
    if constexpr (T16 == MVRT_STORAGE16_F16)
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
/* c += a b on mma.sync m16n8k16 with 16-bit operands of type T16 */
template <int T16>
static __device__ __forceinline__ void mvrt_mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    if constexpr (T16 == MVRT_STORAGE16_F16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

#endif
