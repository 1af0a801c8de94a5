/* TF32 tensor-core building blocks shared by the NVIDIA-only fp32 kernels
 * (3xTF32 attention, the cluster GEMM): compiled only for NVIDIA sm_80+
 * device passes (MVRT_MMA_TF32_DEVICE); HIP and older targets see nothing.
 *
 * 3xTF32: an fp32 operand x is split into big = tf32(x) and small =
 * tf32(x - big); a.b is accumulated as small_a big_b + big_a small_b +
 * big_a big_b in fp32, which keeps about fp32's accuracy (the dropped
 * small_a small_b term is ~2^-22 relative).
 *
 * Fragment layouts of the PTX ISA for mma.m16n8k8.row.col tf32 (lane =
 * 4 g + c): A (g, c), (g + 8, c), (g, c + 4), (g + 8, c + 4); B (k = c,
 * n = g), (c + 4, g); C (g, 2c), (g, 2c + 1), (g + 8, 2c), (g + 8, 2c + 1). */
#ifndef MVRT_OPS_GPU_MMA_TF32_CUH
#define MVRT_OPS_GPU_MMA_TF32_CUH

#include "gpu_vendor.h"
#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(MVRT_GPU_HIP)
#define MVRT_MMA_TF32_DEVICE 1

/* mma_round_tf32: x rounded to TF32's 10 mantissa bits (its fp32 bits),
 * half away from zero, as mma_split_tf32's big part.
 * big: x rounded to TF32's 10 mantissa bits, half away from zero, by an
 * integer add on the bits (a carry into the exponent is the correct
 * rounding; infinities stay infinite). small: the exact rest x - big,
 * passed as fp32 bits: the tensor core reads only its top 19 bits
 * (truncation, ~2^-22 relative to x: the size of the dropped small_a
 * small_b term). Three instructions; ptxas expands cvt.rna.tf32.f32 on
 * sm_90 into ~6 (compares and selects for the special values), which
 * made the splits the largest part of the cluster kernels' instructions
 * (ncu, 2026-11-26). */
static __device__ __forceinline__ uint32_t mma_round_tf32(float x)
{
    return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
}
static __device__ __forceinline__ void mma_split_tf32(float x, uint32_t &big, uint32_t &small)
{
    big = mma_round_tf32(x);
    small = __float_as_uint(x - __uint_as_float(big)); /* exact */
}
/* c += a.b, one m16n8k8 TF32 product */
static __device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* c += a.b as 3xTF32 with both operands already split (the small
 * products first) */
static __device__ __forceinline__ void mma_3xtf32_split(float (&c)[4], const uint32_t (&ab)[4], const uint32_t (&as)[4],
                                                        const uint32_t (&bb)[2], const uint32_t (&bs)[2])
{
    mma_tf32(c, as, bb[0], bb[1]);
    mma_tf32(c, ab, bs[0], bs[1]);
    mma_tf32(c, ab, bb[0], bb[1]);
}
/* c += a.b as 3xTF32, B given as floats */
static __device__ __forceinline__ void mma_3xtf32(float (&c)[4], const uint32_t (&ab)[4], const uint32_t (&as)[4],
                                                  float b0, float b1)
{
    uint32_t bb[2], bs[2];
    mma_split_tf32(b0, bb[0], bs[0]);
    mma_split_tf32(b1, bb[1], bs[1]);
    mma_3xtf32_split(c, ab, as, bb, bs);
}
#endif

#endif
