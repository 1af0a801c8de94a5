/* The few vendor names the GPU kernel sources use, mapped once so that the
 * same .cuh compiles with nvcc (CUDA) and hipcc/clang (HIP).
 *
 * MVRT_WARP_SIZE is a compile-time constant of the DEVICE pass: 32 on NVIDIA,
 * 64 on AMD CDNA (gfx9: MI200/MI300), 32 on AMD RDNA (wave32). Kernels use it
 * instead of the literal 32 or the run-time warpSize. Host code must not
 * rely on it for AMD (the host pass cannot know the target): ask the device
 * (warpSize property) there. */
#ifndef MVRT_OPS_GPU_VENDOR_H
#define MVRT_OPS_GPU_VENDOR_H

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#define MVRT_GPU_HIP 1
#if defined(__GFX9__)
#define MVRT_WARP_SIZE 64
#else
#define MVRT_WARP_SIZE 32
#endif
typedef __half mvrt_gpu_half;
/* Our own bf16 storage type: ROCm 5.x ships hip_bfloat16.h, ROCm 6+
 * hip_bf16.h, with different types; the kernels only need exact
 * conversions, which are a shift (and round-to-nearest-even on store). */
typedef struct mvrt_gpu_bf16 { unsigned short bits; } mvrt_gpu_bf16;
typedef hipStream_t mvrt_gpu_stream_t;
typedef hipError_t mvrt_gpu_error_t;
#define MVRT_GPU_SUCCESS hipSuccess
#define mvrt_gpu_get_last_error hipGetLastError
#define mvrt_gpu_func_set_max_dyn_smem(fn, bytes) \
    hipFuncSetAttribute((const void *)(fn), hipFuncAttributeMaxDynamicSharedMemorySize, (bytes))
/* HIP shuffles take no mask; the whole wavefront takes part. */
#define MVRT_SHFL_XOR(v, lanemask, width) __shfl_xor((v), (lanemask), (width))
#define MVRT_SHFL(v, src, width) __shfl((v), (src), (width))
/* Orders shared-memory accesses of the lanes of one wavefront. */
#define MVRT_SYNCWARP() __builtin_amdgcn_wave_barrier()
/* The body of a kernel compiled for an architecture that lacks its
 * instructions (see the CUDA definition below): never launched on HIP. */
static __device__ __forceinline__ void mvrt_gpu_arch_missing() { __builtin_trap(); }
/* HIP has no programmatic dependent launch: stream order only (see the
 * CUDA definitions below) */
static __device__ __forceinline__ void mvrt_grid_dep_wait() {}
static __device__ __forceinline__ void mvrt_grid_dep_launch_dependents() {}
/* The CUDA launcher's signature (below) for the kernels that may be
 * dependent launches there: on HIP a plain launch (`dependent` has no
 * meaning); no thread-block clusters (cz > 0 is refused). */
template <typename... P, typename... A>
static inline hipError_t mvrt_launch_ex(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, hipStream_t s,
                                        unsigned cz, bool dependent, A... args)
{
    (void)dependent;
    if (cz > 0) return hipErrorInvalidConfiguration;
    kernel<<<grid, block, smem, s>>>(args...);
    return hipGetLastError();
}
#else
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define MVRT_GPU_CUDA 1
#define MVRT_WARP_SIZE 32
typedef __half mvrt_gpu_half;
typedef __nv_bfloat16 mvrt_gpu_bf16;
typedef cudaStream_t mvrt_gpu_stream_t;
typedef cudaError_t mvrt_gpu_error_t;
#define MVRT_GPU_SUCCESS cudaSuccess
#define mvrt_gpu_get_last_error cudaGetLastError
#define mvrt_gpu_func_set_max_dyn_smem(fn, bytes) \
    cudaFuncSetAttribute((fn), cudaFuncAttributeMaxDynamicSharedMemorySize, (bytes))
/* Every lane of the warp executes the shuffles (kernels keep them out of
 * divergent code), so the full mask is right. */
#define MVRT_SHFL_XOR(v, lanemask, width) __shfl_xor_sync(0xffffffffu, (v), (lanemask), (width))
#define MVRT_SHFL(v, src, width) __shfl_sync(0xffffffffu, (v), (src), (width))
/* Orders shared-memory accesses of the lanes of one warp (a shuffle already
 * does in practice; this makes it explicit for the memory model and racecheck). */
#define MVRT_SYNCWARP() __syncwarp()
static __device__ __forceinline__ float mvrt_bf16_to_float(mvrt_gpu_bf16 x) { return __bfloat162float(x); }
static __device__ __forceinline__ mvrt_gpu_bf16 mvrt_float_to_bf16(float x) { return __float2bfloat16(x); }
/* The body of a kernel in code compiled for an architecture that lacks its
 * instructions (e.g. the sm_90 cluster kernels in code JIT-compiled from
 * compute_75 PTX). Host dispatch chooses by the loaded code's architecture
 * (mvrt_gpu_loaded_code_arch), so this never runs; if a launch ever
 * reaches it, the kernel traps and the stream reports an error instead of
 * leaving its output unwritten: never a silently wrong result. */
static __device__ __forceinline__ void mvrt_gpu_arch_missing() { __trap(); }
/* Programmatic dependent launch (sm_90+). A kernel launched with it
 * (mvrt_launch_ex's `dependent`) may be scheduled while the kernel before
 * it on the stream still runs, once every block of that kernel has called
 * mvrt_grid_dep_launch_dependents() (or exited): its blocks start, read
 * what no earlier work writes (weights), and must call
 * mvrt_grid_dep_wait() before they read anything earlier work wrote or
 * write anything earlier work reads; the wait returns when the kernels
 * before it have completed and their stores are visible. Without such a
 * launch, and before sm_90, both are no-ops. Measured at batch 1
 * (backends/cuda/PERF_NOTES.md): a kernel that signals right after its own
 * wait hides the next one's launch; one that signals before its wait let
 * whole chains of waiting kernels occupy the SMs. */
static __device__ __forceinline__ void mvrt_grid_dep_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ __forceinline__ void mvrt_grid_dep_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* A launch configuration, built in place (cfg points at attr): in
 * thread-block clusters of cz blocks along z (grid.z a multiple of cz;
 * NVIDIA sm_90+) unless cz is 0, and as a programmatic dependent launch
 * when `dependent` (sm_90+; the kernel calls mvrt_grid_dep_wait). */
struct mvrt_launch_config {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr[2];
    mvrt_launch_config(dim3 grid, dim3 block, size_t smem, cudaStream_t s, unsigned cz, bool dependent)
        : cfg(), attr()
    {
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = smem;
        cfg.stream = s;
        unsigned n = 0;
        if (cz > 0) {
            attr[n].id = cudaLaunchAttributeClusterDimension;
            attr[n].val.clusterDim.x = 1;
            attr[n].val.clusterDim.y = 1;
            attr[n].val.clusterDim.z = cz;
            ++n;
        }
        if (dependent) {
            attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[n].val.programmaticStreamSerializationAllowed = 1;
            ++n;
        }
        cfg.attrs = attr;
        cfg.numAttrs = n;
    }
    mvrt_launch_config(const mvrt_launch_config &) = delete;
};

/* Queues kernel(args...): in clusters of cz blocks along z (0: none), as a
 * programmatic dependent launch when `dependent`. A device that cannot
 * co-schedule such a cluster answers cudaErrorInvalidClusterSize; the
 * callers then clear it and take their unclustered path. */
template <typename... P, typename... A>
static inline cudaError_t mvrt_launch_ex(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                                         unsigned cz, bool dependent, A... args)
{
    const mvrt_launch_config c(grid, block, smem, s, cz, dependent);
    return cudaLaunchKernelEx(&c.cfg, kernel, args...);
}
/* The same in clusters of cz blocks, as a plain launch. */
template <typename... P, typename... A>
static inline cudaError_t mvrt_launch_cluster_z(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
                                                cudaStream_t s, unsigned cz, A... args)
{
    return mvrt_launch_ex(kernel, grid, block, smem, s, cz, false, args...);
}

/* Whether the current device can co-schedule at least one of kernel's
 * clusters of cz blocks with this block size and shared memory (the
 * occupancy API; nothing is launched). */
template <typename... P>
static inline bool mvrt_cluster_z_fits(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, unsigned cz)
{
    const mvrt_launch_config c(grid, block, smem, 0, cz, false);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &c.cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return clusters > 0;
}
#endif

/* bf16 as raw bits (the uint16_t buffers of the bf16 math mode, and HIP's
 * bf16 type): exact widening; rounding to nearest even, NaN kept quiet. */
static __device__ __forceinline__ float mvrt_bf16_bits_to_f32(unsigned short h)
{
    return __uint_as_float((unsigned)h << 16);
}
static __device__ __forceinline__ unsigned short mvrt_f32_to_bf16_bits(float f)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(MVRT_GPU_HIP)
    /* one cvt (the same rounding; a NaN becomes the canonical one) */
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#endif
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}
/* two rounded values in one word, lo in the low half (4-byte stores) */
static __device__ __forceinline__ unsigned mvrt_bf16x2_bits(float lo, float hi)
{
    return (unsigned)mvrt_f32_to_bf16_bits(lo) | ((unsigned)mvrt_f32_to_bf16_bits(hi) << 16);
}
/* fp16 as raw bits: exact widening; rounding to nearest even (values
 * beyond 65504 become infinite: the graph's fp16 mode is checked for it). */
static __device__ __forceinline__ float mvrt_f16_bits_to_f32(unsigned short h)
{
    return __half2float(__ushort_as_half(h));
}
static __device__ __forceinline__ unsigned short mvrt_f32_to_f16_bits(float f)
{
    return __half_as_ushort(__float2half_rn(f));
}

/* The 16-bit storage of the bf16 and fp16 math modes, chosen at compile
 * time: T16 is MVRT_STORAGE16_BF16 (3) or MVRT_STORAGE16_F16 (2) of
 * ops/common/mv_op_params.h (the values of mvrt_dtype_t). Kernels that
 * read or write 16-bit activations take it as a template argument. */
template <int T16> static __device__ __forceinline__ float mvrt_h16_to_f32(unsigned short h)
{
    static_assert(T16 == 2 || T16 == 3, "T16: MVRT_STORAGE16_F16 or MVRT_STORAGE16_BF16");
    return T16 == 2 ? mvrt_f16_bits_to_f32(h) : mvrt_bf16_bits_to_f32(h);
}
template <int T16> static __device__ __forceinline__ unsigned short mvrt_f32_to_h16(float f)
{
    static_assert(T16 == 2 || T16 == 3, "T16: MVRT_STORAGE16_F16 or MVRT_STORAGE16_BF16");
    return T16 == 2 ? mvrt_f32_to_f16_bits(f) : mvrt_f32_to_bf16_bits(f);
}
/* two rounded values in one word, lo in the low half */
template <int T16> static __device__ __forceinline__ unsigned mvrt_h16x2(float lo, float hi)
{
    return (unsigned)mvrt_f32_to_h16<T16>(lo) | ((unsigned)mvrt_f32_to_h16<T16>(hi) << 16);
}

#if defined(MVRT_GPU_HIP)
static __device__ __forceinline__ float mvrt_bf16_to_float(mvrt_gpu_bf16 x) { return mvrt_bf16_bits_to_f32(x.bits); }
static __device__ __forceinline__ mvrt_gpu_bf16 mvrt_float_to_bf16(float x)
{
    mvrt_gpu_bf16 r;
    r.bits = mvrt_f32_to_bf16_bits(x);
    return r;
}
#endif

/* Fast special functions of the hardware unit (about 2 ulp, flush-to-zero):
 * the scan's per-step exponentials go through these, never through the
 * accurate multi-instruction libm versions. */
#if defined(MVRT_GPU_HIP)
static __device__ __forceinline__ float mvrt_fast_exp2(float x) { return __builtin_amdgcn_exp2f(x); }
static __device__ __forceinline__ float mvrt_fast_log2(float x) { return __builtin_amdgcn_logf(x); }
static __device__ __forceinline__ float mvrt_fast_rcp(float x) { return __builtin_amdgcn_rcpf(x); }
#else
static __device__ __forceinline__ float mvrt_fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
static __device__ __forceinline__ float mvrt_fast_log2(float x)
{
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
static __device__ __forceinline__ float mvrt_fast_rcp(float x)
{
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#endif

/* Makes a 64-bit value opaque to the optimizer (so that it cannot hoist many
 * products of it out of a loop and keep them live in registers). */
#if defined(MVRT_GPU_HIP)
#define MVRT_OPAQUE64(x) ((void)0)
#define MVRT_OPAQUE32(x) ((void)0)
#else
#define MVRT_OPAQUE64(x) asm("" : "+l"(x))
#define MVRT_OPAQUE32(x) asm("" : "+r"(x))
#endif

static __device__ __forceinline__ float mvrt_half_to_float(mvrt_gpu_half x) { return __half2float(x); }
static __device__ __forceinline__ mvrt_gpu_half mvrt_float_to_half(float x) { return __float2half(x); }

#endif
