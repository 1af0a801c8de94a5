/* 16-bit tensor-core building blocks (bf16 / fp16 operands, fp32
 * accumulation) shared by the NVIDIA-only kernels of the 16-bit modes
 * (the attention kernels): compiled only for NVIDIA sm_75+ device passes
 * (MVRT_MMA16_DEVICE); HIP and older targets see nothing. bf16 operands
 * need sm_80+ (MVRT_MMA16_BF16_DEVICE): below it the bf16 forms trap,
 * and host dispatch never launches them there (a bf16 graph is refused
 * without bf16 tensor cores). fp16 on sm_75 (a T4) runs each m16n8k16
 * product as the two m16n8k8 products of its k halves.
 *
 * Fragment layouts of the PTX ISA for mma.m16n8k16.row.col (lane = 4 g +
 * c; each register holds two 16-bit values, the lower column first):
 * A (g, 2c), (g + 8, 2c), (g, 2c + 8), (g + 8, 2c + 8); B (k = 2c, n = g),
 * (k = 2c + 8, n = g); C (g, 2c), (g, 2c + 1), (g + 8, 2c), (g + 8, 2c + 1).
 * For m16n8k8 (f16) A is (g, 2c), (g + 8, 2c) and B (k = 2c, n = g): the
 * first and second halves of the k16 fragments above.
 * T16 is MVRT_STORAGE16_BF16 or MVRT_STORAGE16_F16 (mv_op_params.h). */
#ifndef MVRT_OPS_GPU_MMA16_CUH
#define MVRT_OPS_GPU_MMA16_CUH

#include "gpu_vendor.h"
#include "mv_op_params.h"
#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750 && !defined(MVRT_GPU_HIP)
#define MVRT_MMA16_DEVICE 1
#if __CUDA_ARCH__ >= 800
#define MVRT_MMA16_BF16_DEVICE 1
#endif

/* two floats -> two 16-bit values of type T16 (round to nearest even) in
 * one 32-bit word, lo first: one cvt instruction on sm_80+; below it
 * (no packed cvt) gpu_vendor.h's mvrt_h16x2 */
template <int T16> static __device__ __forceinline__ uint32_t mvrt_pack16x2(float lo, float hi)
{
#ifdef MVRT_MMA16_BF16_DEVICE
    uint32_t r;
    if constexpr (T16 == MVRT_STORAGE16_F16)
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return mvrt_h16x2<T16>(lo, hi);
#endif
}
/* four 8x8 matrices of 16-bit values from shared memory (lanes 8 i .. 8 i
 * + 7 give the 16-byte aligned row addresses of matrix i; register i
 * holds this lane's share of matrix i); trans: each matrix transposed */
static __device__ __forceinline__ void mvrt_ldsm4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
static __device__ __forceinline__ void mvrt_ldsm4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
/* columns k, k + 1 of a 16-bit row as one word, lo first (zeros at or
 * past d); pair: d is even and the row 4-byte aligned, so one 4-byte
 * load (the attention's q rows, dt_proj's weight rows) */
static __device__ __forceinline__ uint32_t mvrt_load_pair16(const uint16_t *row, int k, int d, bool pair)
{
    if (pair) return k < d ? *reinterpret_cast<const uint32_t *>(row + k) : 0u;
    const uint32_t lo = k < d ? row[k] : 0u, hi = k + 1 < d ? row[k + 1] : 0u;
    return lo | hi << 16;
}
/* lo, hi rounded to T16 and stored at columns k, k + 1 of a row (those
 * below d); pair: as mvrt_load_pair16, one 4-byte store */
template <int T16>
static __device__ __forceinline__ void mvrt_store_pair16(uint16_t *row, int k, int d, bool pair, float lo, float hi)
{
    if (pair) {
        if (k < d) *reinterpret_cast<uint32_t *>(row + k) = mvrt_pack16x2<T16>(lo, hi);
        return;
    }
    if (k < d) row[k] = mvrt_f32_to_h16<T16>(lo);
    if (k + 1 < d) row[k + 1] = mvrt_f32_to_h16<T16>(hi);
}
/* c += a b on mma.sync m16n8k16 with 16-bit operands of type T16 */
template <int T16>
static __device__ __forceinline__ void mvrt_mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    if constexpr (T16 == MVRT_STORAGE16_F16) {
#ifdef MVRT_MMA16_BF16_DEVICE
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b0));
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[2]), "r"(a[3]), "r"(b1));
#endif
    } else {
#ifdef MVRT_MMA16_BF16_DEVICE
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
        (void)c; (void)a; (void)b0; (void)b1;
        mvrt_gpu_arch_missing(); /* no bf16 tensor cores below sm_80 */
#endif
    }
}
#endif

#endif
