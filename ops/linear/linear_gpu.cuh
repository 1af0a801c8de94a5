/* GPU kernels of the linear op (ops/common/mv_op_params.h), compiled by nvcc
 * (CUDA backend) and clang as HIP (HIP backend) through
 * backends/gpu_common/mv_gpu_launch.cu. Only names from
 * ops/common/gpu_vendor.h are vendor-specific.
 *
 * - sgemm_kernel: our own batched fp32 GEMM with a fused epilogue
 *       Y = beta * Y + act(op(A) op(B) + bias) + R
 *   (R: an optional residual, used by conv2d). It is the linear of the HIP
 *   backend (Debian's ROCm has no hipBLAS/rocBLAS) and the fallback of the
 *   CUDA backend when cuBLAS is not usable. Tiles of 128 x 128 x 8, 256
 *   threads, 8 x 8 outputs per thread in registers (two 4 x 4 quadrants 64
 *   apart, so that shared-memory reads are 16-byte vectors without bank
 *   conflicts), the next k-tile prefetched into registers while the current
 *   one is multiplied from the other shared-memory buffer (one barrier per
 *   k-tile). trans_a / trans_b are template parameters so that each of the
 *   four global-load patterns reads along the contiguous dimension. Global
 *   loads are scalar and bounds-checked: leading dimensions and offsets are
 *   arbitrary, so 16-byte alignment cannot be assumed.
 * - epilogue_kernel: bias + activation + residual over a Y already holding
 *   the product (the cuBLAS path of the CUDA backend).
 *
 * Nothing here depends on the warp width: only block-wide barriers. */
#ifndef MVRT_OPS_LINEAR_GPU_CUH
#define MVRT_OPS_LINEAR_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include "../common/gpu_activation.cuh"
#include "../common/gpu_mma16.cuh"
#include <stdint.h>

namespace mvrt_mv_gpu {

/* A batched GEMM with epilogue, row-major (the linear's contract plus a
 * residual R with its own leading dimension and batch stride). */
struct gemm_args {
    int64_t batch, M, N, K;
    const float *A; int64_t lda, sa;
    const float *B; int64_t ldb, sb;
    float *Y; int64_t ldy, sy;
    const float *bias; int bias_per_row;
    const float *R; int64_t ldr, sr;  /* NULL: none */
    int ta, tb;                       /* op(A) = A^T, op(B) = B^T */
    int act;
    float beta;                       /* 0 or 1 */
    int y16 = 0;                      /* epilogues: Y, and R when set, hold 16-bit bits of this type
                                         (MVRT_STORAGE16_*); not sgemm_kernel */
    /* the cluster GEMM only (linear_gpu_cluster.cuh): a LayerNorm of A's
     * rows folded in, as mvrt_linear_params_t's ln_weight / ln_colsum /
     * ln_eps (NULL: none) */
    const float *ln_w = nullptr, *ln_colsum = nullptr;
    float ln_eps = 0.f;
    int b_const = 0; /* B is constant (mvrt_linear_params_t.b_constant) */
};

/* Epilogue of one element: v is the product, y points at Y's element. */
static __device__ __forceinline__ void epilogue_store(const gemm_args &g, float v, int64_t m, int64_t n,
                                                      float *y, const float *r)
{
    if (g.bias) v += g.bias[g.bias_per_row ? m : n];
    v = act_apply(g.act, v);
    if (r) v += *r;
    if (g.beta != 0.f) v += g.beta * *y; /* never read Y when beta = 0 (it may hold garbage) */
    *y = v;
}

#define MVRT_GEMM_BM 128
#define MVRT_GEMM_BN 128
#define MVRT_GEMM_BK 8
#define MVRT_GEMM_THREADS 256
#define MVRT_GEMM_PAD 4 /* keeps 16-byte alignment of shared rows, spreads transposed stores over banks */

/* Grid: x = M tiles, y = N tiles, z = batch (grid-stride over z). */
template <bool TA, bool TB>
__global__ void __launch_bounds__(MVRT_GEMM_THREADS) sgemm_kernel(gemm_args g)
{
    __shared__ __align__(16) float As[2][MVRT_GEMM_BK][MVRT_GEMM_BM + MVRT_GEMM_PAD];
    __shared__ __align__(16) float Bs[2][MVRT_GEMM_BK][MVRT_GEMM_BN + MVRT_GEMM_PAD];
    const int t = threadIdx.x;
    const int tx = t % 16, ty = t / 16;
    const int64_t m0 = (int64_t)blockIdx.x * MVRT_GEMM_BM;
    const int64_t n0 = (int64_t)blockIdx.y * MVRT_GEMM_BN;

    /* What this thread loads of each k-tile: 4 elements along the
     * contiguous dimension of the operand. */
    int a_row, a_col; /* !TA: (m, k0) with 4 k's;  TA: (k, m0) with 4 m's */
    int b_row, b_col; /* !TB: (k, n0) with 4 n's;  TB: (n, k0) with 4 k's */
    if (!TA) { a_row = t / 2; a_col = (t % 2) * 4; } else { a_row = t / 32; a_col = (t % 32) * 4; }
    if (!TB) { b_row = t / 32; b_col = (t % 32) * 4; } else { b_row = t / 2; b_col = (t % 2) * 4; }

    for (int64_t bz = blockIdx.z; bz < g.batch; bz += gridDim.z) {
        const float *A = g.A + bz * g.sa;
        const float *B = g.B + bz * g.sb;
        float acc[8][8];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = 0.f;

        float ra[4], rb[4];
        auto load_tile = [&](int64_t k0) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                int64_t m, k;
                if (!TA) { m = m0 + a_row; k = k0 + a_col + i; } else { k = k0 + a_row; m = m0 + a_col + i; }
                ra[i] = (m < g.M && k < g.K) ? (TA ? A[k * g.lda + m] : A[m * g.lda + k]) : 0.f;
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
                int64_t n, k;
                if (!TB) { k = k0 + b_row; n = n0 + b_col + i; } else { n = n0 + b_row; k = k0 + b_col + i; }
                rb[i] = (n < g.N && k < g.K) ? (TB ? B[n * g.ldb + k] : B[k * g.ldb + n]) : 0.f;
            }
        };
        auto store_tile = [&](int buf) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                if (!TA) As[buf][a_col + i][a_row] = ra[i]; else As[buf][a_row][a_col + i] = ra[i];
                if (!TB) Bs[buf][b_row][b_col + i] = rb[i]; else Bs[buf][b_col + i][b_row] = rb[i];
            }
        };

        const int64_t ktiles = (g.K + MVRT_GEMM_BK - 1) / MVRT_GEMM_BK;
        int buf = 0;
        if (ktiles > 0) {
            load_tile(0);
            store_tile(0);
        }
        __syncthreads();
        for (int64_t kt = 0; kt < ktiles; kt++) {
            const bool more = kt + 1 < ktiles;
            if (more) load_tile((kt + 1) * MVRT_GEMM_BK); /* in flight during the FMAs below */
#pragma unroll
            for (int k = 0; k < MVRT_GEMM_BK; k++) {
                const float4 a0 = *reinterpret_cast<const float4 *>(&As[buf][k][ty * 4]);
                const float4 a1 = *reinterpret_cast<const float4 *>(&As[buf][k][64 + ty * 4]);
                const float4 b0 = *reinterpret_cast<const float4 *>(&Bs[buf][k][tx * 4]);
                const float4 b1 = *reinterpret_cast<const float4 *>(&Bs[buf][k][64 + tx * 4]);
                const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int j = 0; j < 8; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
            if (more) {
                /* the other buffer was last read before the previous barrier */
                store_tile(buf ^ 1);
                __syncthreads();
                buf ^= 1;
            }
        }

        float *Y = g.Y + bz * g.sy;
        const float *R = g.R ? g.R + bz * g.sr : nullptr;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int64_t m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
            if (m >= g.M) continue;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int64_t n = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + (j - 4));
                if (n >= g.N) continue;
                epilogue_store(g, acc[i][j], m, n, Y + m * g.ldy + n, R ? R + m * g.ldr + n : nullptr);
            }
        }
        /* the next batch element overwrites buffer 0 */
        __syncthreads();
    }
}

/* Y holds the product (the cuBLAS path, which also applied beta): add the
 * bias, the activation and the residual. Block (64, 4): x over columns,
 * y over rows of the flattened (batch * M) rows; grid-stride over rows. */
template <int T16>
__global__ void __launch_bounds__(256) epilogue_kernel(gemm_args g)
{
    const int64_t rows = g.batch * g.M;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
        const int64_t b = r / g.M, m = r - b * g.M;
        float *y = g.Y + b * g.sy + m * g.ldy; /* not dereferenced when y16 */
        const float *res = !T16 && g.R ? g.R + b * g.sr + m * g.ldr : nullptr;
        const float brow = (g.bias && g.bias_per_row) ? g.bias[m] : 0.f;
        uint16_t *y16 = T16 ? reinterpret_cast<uint16_t *>(g.Y) + b * g.sy + m * g.ldy : nullptr;
        const uint16_t *res16 = T16 && g.R ? reinterpret_cast<const uint16_t *>(g.R) + b * g.sr + m * g.ldr : nullptr;
        for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < g.N; n += (int64_t)gridDim.x * blockDim.x) {
            float v;
            if constexpr (T16 != 0) v = mvrt_h16_to_f32<T16>(y16[n]);
            else v = y[n];
            if (g.bias) v += g.bias_per_row ? brow : g.bias[n];
            v = act_apply(g.act, v);
            if (res) v += res[n];
            if constexpr (T16 != 0)
                if (res16) v += mvrt_h16_to_f32<T16>(res16[n]);
            if constexpr (T16 != 0) y16[n] = mvrt_f32_to_h16<T16>(v);
            else y[n] = v;
        }
    }
}

/* Four columns n*4.. of a row: + bias (per column: bcol[n]; per row: brow,
 * 0 without bias), then the activation; shared by the vector epilogues. */
static __device__ __forceinline__ float4 bias_act4(float4 v, const float4 *bcol, float brow, int64_t n, int act)
{
    if (bcol) {
        const float4 c = bcol[n];
        v.x += c.x, v.y += c.y, v.z += c.z, v.w += c.w;
    } else {
        v.x += brow, v.y += brow, v.z += brow, v.w += brow;
    }
    v.x = act_apply(act, v.x), v.y = act_apply(act, v.y);
    v.z = act_apply(act, v.z), v.w = act_apply(act, v.w);
    return v;
}

/* The epilogue four columns at a time (16-byte loads and stores), for Y,
 * R and a per-column bias whose rows start 16-byte aligned (the launcher
 * checks): a quarter of the instructions of the scalar kernel. */
__global__ void __launch_bounds__(256) epilogue_vec4_kernel(gemm_args g)
{
    const int64_t rows = g.batch * g.M, n4 = g.N / 4;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
        const int64_t b = r / g.M, m = r - b * g.M;
        float4 *y = (float4 *)(g.Y + b * g.sy + m * g.ldy);
        const float4 *res = g.R ? (const float4 *)(g.R + b * g.sr + m * g.ldr) : nullptr;
        const float brow = (g.bias && g.bias_per_row) ? g.bias[m] : 0.f;
        const float4 *bcol = (g.bias && !g.bias_per_row) ? (const float4 *)g.bias : nullptr;
        for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < n4; n += (int64_t)gridDim.x * blockDim.x) {
            float4 v = y[n];
            v = bias_act4(v, bcol, brow, n, g.act);
            if (res) {
                const float4 q = res[n];
                v.x += q.x, v.y += q.y, v.z += q.z, v.w += q.w;
            }
            y[n] = v;
        }
    }
}

/* Four 16-bit values (two 32-bit words, lower element first) as floats: exact. */
template <int T16> static __device__ __forceinline__ float4 h16x4_to_float4(unsigned lo, unsigned hi)
{
    if constexpr (T16 == 3) /* bf16: a shift */
        return make_float4(__uint_as_float(lo << 16), __uint_as_float(lo & 0xffff0000u), __uint_as_float(hi << 16),
                           __uint_as_float(hi & 0xffff0000u));
    return make_float4(mvrt_h16_to_f32<T16>((unsigned short)lo), mvrt_h16_to_f32<T16>((unsigned short)(lo >> 16)),
                       mvrt_h16_to_f32<T16>((unsigned short)hi), mvrt_h16_to_f32<T16>((unsigned short)(hi >> 16)));
}

/* epilogue_vec4_kernel over a 16-bit Y (the 16-bit GEMM wrote it) and a
 * 16-bit R: 8-byte loads and stores of 4 values; bias, activation and
 * residual in fp32, rounded once. */
template <int T16>
__global__ void __launch_bounds__(256) epilogue16_vec4_kernel(gemm_args g)
{
    const int64_t rows = g.batch * g.M, n4 = g.N / 4;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
        const int64_t b = r / g.M, m = r - b * g.M;
        uint2 *y = reinterpret_cast<uint2 *>(reinterpret_cast<uint16_t *>(g.Y) + b * g.sy + m * g.ldy);
        const uint2 *res =
            g.R ? reinterpret_cast<const uint2 *>(reinterpret_cast<const uint16_t *>(g.R) + b * g.sr + m * g.ldr)
                : nullptr;
        const float brow = (g.bias && g.bias_per_row) ? g.bias[m] : 0.f;
        const float4 *bcol = (g.bias && !g.bias_per_row) ? (const float4 *)g.bias : nullptr;
        for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < n4; n += (int64_t)gridDim.x * blockDim.x) {
            const uint2 h = y[n];
            float4 v = bias_act4(h16x4_to_float4<T16>(h.x, h.y), bcol, brow, n, g.act);
            if (res) {
                const uint2 rh = res[n];
                const float4 q = h16x4_to_float4<T16>(rh.x, rh.y);
                v.x += q.x, v.y += q.y, v.z += q.z, v.w += q.w;
            }
            y[n] = make_uint2(mvrt_h16x2<T16>(v.x, v.y), mvrt_h16x2<T16>(v.z, v.w));
        }
    }
}

/* The 16-bit-Y epilogue of a batch-1 GEMM (the graph's MLP hidden) eight
 * columns at a time (16-byte loads and stores). Block (32, 8). The
 * four-column form above took 0.22 ms for fc1's 50176 x 1280 bias + GELU
 * on an H200 (ncu, 2026-11-27), 1.2 TB/s for 256 MB moved; this one made
 * MambaVision-T at batch 256 in bf16 17.86 -> 17.37 ms (same run). */
template <int T16>
__global__ void __launch_bounds__(256) epilogue16_vec8_kernel(gemm_args g)
{
    const int64_t rows = g.M, n8 = g.N / 8;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
        const int64_t m = r;
        uint4 *y = reinterpret_cast<uint4 *>(reinterpret_cast<uint16_t *>(g.Y) + m * g.ldy);
        const float brow = (g.bias && g.bias_per_row) ? g.bias[m] : 0.f;
        const float4 *bcol = (g.bias && !g.bias_per_row) ? (const float4 *)g.bias : nullptr;
        for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < n8; n += (int64_t)gridDim.x * blockDim.x) {
            const uint4 h = y[n];
            const float4 lo = bias_act4(h16x4_to_float4<T16>(h.x, h.y), bcol, brow, 2 * n, g.act);
            const float4 hi = bias_act4(h16x4_to_float4<T16>(h.z, h.w), bcol, brow, 2 * n + 1, g.act);
            y[n] = make_uint4(mvrt_h16x2<T16>(lo.x, lo.y), mvrt_h16x2<T16>(lo.z, lo.w), mvrt_h16x2<T16>(hi.x, hi.y),
                              mvrt_h16x2<T16>(hi.z, hi.w));
        }
    }
}

/* Split-K: the vendor GEMM wrote S dense M x N partial products (batch 1,
 * K cut into S equal slices) to P; sum them in slice order (fixed:
 * bitwise reproducible), then the full epilogue (bias, activation,
 * residual, beta * Y). Block (64, 4) as epilogue_kernel. */
#define MVRT_SPLITK_MAX 16 /* slices at most (gemm_splits) */
__global__ void __launch_bounds__(256) splitk_epilogue_kernel(gemm_args g, const float *P, int S)
{
    const int64_t MN = g.M * g.N;
    for (int64_t m = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; m < g.M; m += (int64_t)gridDim.y * blockDim.y) {
        float *y = g.Y + m * g.ldy;
        const float *res = g.R ? g.R + m * g.ldr : nullptr;
        const float *pm = P + m * g.N;
        for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < g.N; n += (int64_t)gridDim.x * blockDim.x) {
            /* all S loads in flight before the (slice-ordered) sum: one
             * dependent load per slice made this kernel latency-bound */
            float part[MVRT_SPLITK_MAX];
#pragma unroll
            for (int s = 0; s < MVRT_SPLITK_MAX; ++s) part[s] = s < S ? pm[s * MN + n] : 0.f;
            float v = part[0];
#pragma unroll
            for (int s = 1; s < MVRT_SPLITK_MAX; ++s)
                if (s < S) v += part[s];
            epilogue_store(g, v, m, n, y + n, res ? res + n : nullptr);
        }
    }
}

static inline unsigned mvrt_min_u64(uint64_t a, uint64_t b) { return (unsigned)(a < b ? a : b); }

static inline bool mvrt_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* One element between fp32 and 16-bit bits (uint16_t) of type T16. */
template <int T16> static __device__ __forceinline__ uint16_t convert_value(float v, uint16_t *)
{
    return mvrt_f32_to_h16<T16>(v);
}
template <int T16> static __device__ __forceinline__ float convert_value(uint16_t v, float *)
{
    return mvrt_h16_to_f32<T16>(v);
}

/* dst[b * dstride + r * dld + c] = src[b * sstride + r * sld + c] converted
 * between fp32 and 16-bit bits of type T16, for (batch, rows, cols); x over
 * c, y over r, z over b; grid-stride. The operand copies of the 16-bit
 * math modes, and the 16-bit storage operands of a linear computed in fp32. */
template <int T16, typename S, typename D>
__global__ void __launch_bounds__(256) convert_kernel(const S *src, int64_t sld, int64_t sstride, D *dst, int64_t dld,
                                                      int64_t dstride, int64_t rows, int64_t cols, int64_t batch)
{
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
        for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
            const S *q = src + b * sstride + r * sld;
            D *d = dst + b * dstride + r * dld;
            for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += (int64_t)gridDim.x * blockDim.x)
                d[c] = convert_value<T16>(q[c], d);
        }
}

/* fp32 -> 16-bit, four columns at a time (16-byte loads, 8-byte stores)
 * into a dense dst; cols, ld and sstride multiples of 4, src 16-byte and
 * dst 8-byte aligned: the hot case of the operand copies. */
template <int T16>
__global__ void __launch_bounds__(256) to16_vec4_kernel(const float *src, int64_t rows, int64_t cols, int64_t ld,
                                                           int64_t sstride, int64_t batch, uint16_t *dst)
{
    const int64_t c4 = cols / 4;
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
        for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += (int64_t)gridDim.y * blockDim.y) {
            const float4 *s = (const float4 *)(src + b * sstride + r * ld);
            uint2 *d = (uint2 *)(dst + (b * rows + r) * cols);
            for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < c4; c += (int64_t)gridDim.x * blockDim.x) {
                const float4 v = s[c];
                d[c] = make_uint2(mvrt_h16x2<T16>(v.x, v.y), mvrt_h16x2<T16>(v.z, v.w));
            }
        }
}

/* Queues convert_kernel (nothing for an empty shape); t16: the 16-bit
 * side's type (MVRT_STORAGE16_BF16 or _F16). */
template <typename S, typename D>
static inline mvrt_gpu_error_t launch_convert(int t16, const S *src, int64_t sld, int64_t sstride, D *dst, int64_t dld,
                                              int64_t dstride, int64_t rows, int64_t cols, int64_t batch,
                                              mvrt_gpu_stream_t s)
{
    if (rows <= 0 || cols <= 0 || batch <= 0) return MVRT_GPU_SUCCESS;
    dim3 grid(mvrt_min_u64(((uint64_t)cols + 63) / 64, 64), mvrt_min_u64(((uint64_t)rows + 3) / 4, 65535),
              mvrt_min_u64((uint64_t)batch, 65535));
    if (t16 == MVRT_STORAGE16_F16)
        convert_kernel<MVRT_STORAGE16_F16, S, D><<<grid, dim3(64, 4), 0, s>>>(src, sld, sstride, dst, dld, dstride, rows,
                                                                               cols, batch);
    else
        convert_kernel<MVRT_STORAGE16_BF16, S, D><<<grid, dim3(64, 4), 0, s>>>(src, sld, sstride, dst, dld, dstride,
                                                                                rows, cols, batch);
    return mvrt_gpu_get_last_error();
}

/* dst[b][r][c] (dense) = t16(src[b * sstride + r * ld + c]), t16 the
 * 16-bit type (MVRT_STORAGE16_BF16 or _F16). */
static inline mvrt_gpu_error_t launch_to16(int t16, const float *src, int64_t rows, int64_t cols, int64_t ld,
                                              int64_t sstride, int64_t batch, uint16_t *dst, mvrt_gpu_stream_t s)
{
    if (rows <= 0 || cols <= 0 || batch <= 0) return MVRT_GPU_SUCCESS;
    if (cols % 4 == 0 && ld % 4 == 0 && sstride % 4 == 0 && ((uintptr_t)src & 15u) == 0 && ((uintptr_t)dst & 7u) == 0) {
        dim3 grid(mvrt_min_u64(((uint64_t)cols / 4 + 63) / 64, 64), mvrt_min_u64(((uint64_t)rows + 3) / 4, 65535),
                  mvrt_min_u64((uint64_t)batch, 65535));
        if (t16 == MVRT_STORAGE16_F16)
            to16_vec4_kernel<MVRT_STORAGE16_F16><<<grid, dim3(64, 4), 0, s>>>(src, rows, cols, ld, sstride, batch, dst);
        else
            to16_vec4_kernel<MVRT_STORAGE16_BF16><<<grid, dim3(64, 4), 0, s>>>(src, rows, cols, ld, sstride, batch, dst);
        return mvrt_gpu_get_last_error();
    }
    return launch_convert(t16, src, ld, sstride, dst, cols, rows * cols, rows, cols, batch, s);
}

/* Per matrix b of `batch`: src_b (rows, cols) floats, or 16-bit values
 * of dst's type (then copied exactly), at row stride ld, matrices
 * sstride apart -> dst (batch * cols, rows) 16-bit bits, dense and
 * transposed: dst[(b * cols + c) * rows + r] = src_b[r, c], rounded to
 * nearest even. The mixer's out_proj input: src_b is a window's (C, L)
 * scan output, dst its (L, C) rows. Two kernels (launch_to16_transposed
 * chooses; outputs bitwise equal):
 *
 * | shape | kernel | why (H200, batch 256, same process) |
 * |---|---|---|
 * | dense windows of <= 256 columns, 16-byte aligned, rows x cols a multiple of 4 (the scan's output), at least one block of 64 rows per SM | to16_transposed_windows_kernel | B's stage-3 windows (C 512 x L 196) 0.0705 -> 0.0508 ms (2.2 -> 3.0 TB/s; a copy of the same bytes 0.045), stage 4 (1024 x 49) 0.0419 -> 0.0324 |
 * | any other (padded rows, longer rows, unaligned; few windows: batch 1) | to16_transposed_tiles_kernel | the windows kernel's element-wise form was slower there: 512 x 196 at row stride 200 0.0709 vs 0.0772 ms, 100 x 300 (batch 64) 0.0117 vs 0.0179; at batch 1 (B's stage 3, one window) the windows kernel had 8 blocks on 132 SMs: 6.0 us (ncu, H200, session 61) against 56 tiles |
 *
 * Tiles: 64 rows x 32 columns through shared memory: a warp reads 32
 * consecutive floats of a row and writes one dst row's 64 values as 32
 * 4-byte pairs (128 contiguous bytes). Grid: x over column tiles, y over
 * row tiles, z over matrices (y and z grid-stride). */
#define MVRT_T16T_ROWS 64
#define MVRT_T16T_COLS 32
/* An element of a transposed copy's source: a float, or 16-bit bits of
 * the copy's own type T16 (widened exactly, so rounding back returns them) */
template <int T16> static __device__ __forceinline__ float t16t_load(const float *p) { return *p; }
template <int T16> static __device__ __forceinline__ float t16t_load(const uint16_t *p)
{
    return mvrt_h16_to_f32<T16>(*p);
}
/* Elements [4i, 4i + 4) of a source aligned to 4 elements, rounded to T16 */
template <int T16> static __device__ __forceinline__ void t16t_load4(const float *s, int64_t i, uint16_t out[4])
{
    const float4 v = reinterpret_cast<const float4 *>(s)[i];
    out[0] = mvrt_f32_to_h16<T16>(v.x), out[1] = mvrt_f32_to_h16<T16>(v.y);
    out[2] = mvrt_f32_to_h16<T16>(v.z), out[3] = mvrt_f32_to_h16<T16>(v.w);
}
template <int T16> static __device__ __forceinline__ void t16t_load4(const uint16_t *s, int64_t i, uint16_t out[4])
{
    const uint2 w = reinterpret_cast<const uint2 *>(s)[i];
    out[0] = (uint16_t)(w.x & 0xffffu), out[1] = (uint16_t)(w.x >> 16);
    out[2] = (uint16_t)(w.y & 0xffffu), out[3] = (uint16_t)(w.y >> 16);
}
/* S: float, or uint16_t (a 16-bit source of type T16: the 16-bit mixer
 * chain's scan output; the copy is then exact) */
template <int T16, typename S>
__global__ void __launch_bounds__(256) to16_transposed_tiles_kernel(const S *__restrict__ src, int64_t rows,
                                                                       int64_t cols, int64_t ld, int64_t sstride,
                                                                       int64_t batch, uint16_t *__restrict__ dst)
{
    /* [column][row], rows padded to 66: the pair reads below are 8-byte
     * aligned and conflict-free; the staging writes at most 2-way */
    __shared__ float tile[MVRT_T16T_COLS][MVRT_T16T_ROWS + 2];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t c0 = (int64_t)blockIdx.x * MVRT_T16T_COLS;
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
        for (int64_t r0 = (int64_t)blockIdx.y * MVRT_T16T_ROWS; r0 < rows; r0 += (int64_t)gridDim.y * MVRT_T16T_ROWS) {
            const S *sb = src + b * sstride;
#pragma unroll
            for (int i = ty; i < MVRT_T16T_ROWS; i += 8) {
                const int64_t r = r0 + i, c = c0 + tx;
                tile[tx][i] = r < rows && c < cols ? t16t_load<T16>(sb + r * ld + c) : 0.f;
            }
            __syncthreads();
            const int64_t r = r0 + 2 * tx;
#pragma unroll
            for (int k = ty; k < MVRT_T16T_COLS; k += 8) {
                const int64_t c = c0 + k;
                if (c >= cols || r >= rows) continue;
                const float2 v = *reinterpret_cast<const float2 *>(&tile[k][2 * tx]);
                uint16_t *d = dst + (b * cols + c) * rows + r;
                if (r + 1 < rows && ((uintptr_t)d & 3u) == 0) {
                    *reinterpret_cast<unsigned *>(d) = mvrt_h16x2<T16>(v.x, v.y);
                } else {
                    d[0] = mvrt_f32_to_h16<T16>(v.x);
                    if (r + 1 < rows) d[1] = mvrt_f32_to_h16<T16>(v.y);
                }
            }
            __syncthreads();
        }
}

/* Windows: a block takes 64 rows of one matrix whose rows are dense
 * (ld == cols), at most MVRT_T16T_WIN_COLS long, 16-byte aligned (src
 * and sstride * 4) and rows * cols a multiple of 4, so the block's rows
 * are one aligned run of whole 16-byte pieces: it
 * reads the run as 16-byte pieces (four per thread in flight), rounds
 * them into a [column][row] tile of 16-bit values, then writes each
 * column's 64 values as one 128-byte run of dst (a thread per pair).
 * Grid: x over row tiles, z over matrices (grid-stride). Block: 256
 * threads whatever the warp width. */
#define MVRT_T16T_WIN_COLS 256
template <int T16, typename S>
__global__ void __launch_bounds__(256) to16_transposed_windows_kernel(const S *__restrict__ src, int64_t rows,
                                                                         int64_t cols, int64_t sstride, int64_t batch,
                                                                         uint16_t *__restrict__ dst)
{
    /* [column][row]; a column's row pairs are 4-byte words (66 keeps them
     * aligned; the staging stores are at most 4-way in conflict) */
    __shared__ uint16_t tile[MVRT_T16T_WIN_COLS][MVRT_T16T_ROWS + 2];
    const int64_t r0 = (int64_t)blockIdx.x * MVRT_T16T_ROWS;
    const int rt = (int)(rows - r0 < MVRT_T16T_ROWS ? rows - r0 : MVRT_T16T_ROWS);
    const int ct = (int)cols, n4 = rt * ct / 4, nth = (int)blockDim.x, t = (int)threadIdx.x;
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
        const S *sb = src + b * sstride + r0 * cols;
        for (int i0 = t; i0 < n4; i0 += 4 * nth) {
            uint16_t v[4][4];
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (i0 + k * nth < n4) t16t_load4<T16>(sb, i0 + k * nth, v[k]);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int i = i0 + k * nth;
                if (i >= n4) break;
                int r = 4 * i / ct, c = 4 * i - r * ct;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    tile[c][r] = v[k][j];
                    if (++c == ct) c = 0, ++r;
                }
            }
        }
        __syncthreads();
        const int r = 2 * (t % (MVRT_T16T_ROWS / 2)), lanes = nth / (MVRT_T16T_ROWS / 2);
        if (r < rt) {
            for (int c = t / (MVRT_T16T_ROWS / 2); c < ct; c += lanes) {
                uint16_t *d = dst + (b * cols + c) * rows + r0 + r;
                if (r + 1 < rt && ((uintptr_t)d & 3u) == 0) {
                    *reinterpret_cast<unsigned *>(d) = *reinterpret_cast<const unsigned *>(&tile[c][r]);
                } else {
                    d[0] = tile[c][r];
                    if (r + 1 < rt) d[1] = tile[c][r + 1];
                }
            }
        }
        __syncthreads();
    }
}

/* sm_count: the device's SMs (the windows kernel only where its grid of
 * 64-row blocks has one per SM). S: float, or uint16_t bits of type t16. */
template <typename S>
static inline mvrt_gpu_error_t launch_to16_transposed(int t16, const S *src, int64_t rows, int64_t cols, int64_t ld,
                                                         int64_t sstride, int64_t batch, uint16_t *dst, int sm_count,
                                                         mvrt_gpu_stream_t s)
{
    if (rows <= 0 || cols <= 0 || batch <= 0) return MVRT_GPU_SUCCESS;
    const int64_t window_blocks = batch * ((rows + MVRT_T16T_ROWS - 1) / MVRT_T16T_ROWS);
    const bool windows = ld == cols && cols <= MVRT_T16T_WIN_COLS && rows * cols % 4 == 0 &&
                         ((uintptr_t)src & (4 * sizeof(S) - 1)) == 0 && (batch == 1 || sstride % 4 == 0) &&
                         window_blocks >= sm_count;
    if (windows) {
        const dim3 grid(mvrt_min_u64(((uint64_t)rows + MVRT_T16T_ROWS - 1) / MVRT_T16T_ROWS, 0x7fffffffu), 1,
                        mvrt_min_u64((uint64_t)batch, 65535));
        if (t16 == MVRT_STORAGE16_F16)
            to16_transposed_windows_kernel<MVRT_STORAGE16_F16, S><<<grid, 256, 0, s>>>(src, rows, cols, sstride, batch,
                                                                                      dst);
        else
            to16_transposed_windows_kernel<MVRT_STORAGE16_BF16, S><<<grid, 256, 0, s>>>(src, rows, cols, sstride, batch,
                                                                                       dst);
        return mvrt_gpu_get_last_error();
    }
    const dim3 grid(mvrt_min_u64(((uint64_t)cols + MVRT_T16T_COLS - 1) / MVRT_T16T_COLS, 0x7fffffffu),
                    mvrt_min_u64(((uint64_t)rows + MVRT_T16T_ROWS - 1) / MVRT_T16T_ROWS, 65535),
                    mvrt_min_u64((uint64_t)batch, 65535));
    if (t16 == MVRT_STORAGE16_F16)
        to16_transposed_tiles_kernel<MVRT_STORAGE16_F16, S><<<grid, dim3(32, 8), 0, s>>>(src, rows, cols, ld, sstride,
                                                                                         batch, dst);
    else
        to16_transposed_tiles_kernel<MVRT_STORAGE16_BF16, S><<<grid, dim3(32, 8), 0, s>>>(src, rows, cols, ld, sstride,
                                                                                          batch, dst);
    return mvrt_gpu_get_last_error();
}

/* Queues our own GEMM (all of gemm_args applied). */
static inline mvrt_gpu_error_t launch_sgemm(const gemm_args &g, mvrt_gpu_stream_t s)
{
    if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return MVRT_GPU_SUCCESS;
    dim3 grid((unsigned)((g.M + MVRT_GEMM_BM - 1) / MVRT_GEMM_BM), (unsigned)((g.N + MVRT_GEMM_BN - 1) / MVRT_GEMM_BN),
              mvrt_min_u64((uint64_t)g.batch, 65535));
    if (!g.ta && !g.tb) sgemm_kernel<false, false><<<grid, MVRT_GEMM_THREADS, 0, s>>>(g);
    else if (!g.ta && g.tb) sgemm_kernel<false, true><<<grid, MVRT_GEMM_THREADS, 0, s>>>(g);
    else if (g.ta && !g.tb) sgemm_kernel<true, false><<<grid, MVRT_GEMM_THREADS, 0, s>>>(g);
    else sgemm_kernel<true, true><<<grid, MVRT_GEMM_THREADS, 0, s>>>(g);
    return mvrt_gpu_get_last_error();
}

/* GEMMs with a short K (<= MVRT_SMALLK_GEMM_K) and few outputs, e.g. the
 * dt_proj of batch-1 MambaVision (160 x 196, K = 20; 320 x 49, K = 40
 * in stage 4): one thread per
 * output, a plain fp32 FMA chain (as accurate as any GEMM path, every
 * math mode), the epilogue fused. The vendor path ran a GEMM and an
 * epilogue kernel, ~8 us for ~0.6 M FMAs (H100, ncu, 2026-11-26). Block
 * (64, 4): x over columns, y over rows; grid z over the batch. */
#define MVRT_SMALLK_GEMM_K 64
#define MVRT_SMALLK_GEMM_OUTPUTS ((int64_t)1 << 20) /* batch * M * N */
static inline bool gemm_smallk_takes(const gemm_args &g)
{
    return g.K > 0 && g.K <= MVRT_SMALLK_GEMM_K && !g.y16 && g.batch <= 65535 && g.M <= 4 * (int64_t)65535 &&
           g.batch * g.M * g.N <= MVRT_SMALLK_GEMM_OUTPUTS;
}
__global__ void __launch_bounds__(256) gemm_smallk_kernel(gemm_args g)
{
    const int64_t n = (int64_t)blockIdx.x * 64 + threadIdx.x, m = (int64_t)blockIdx.y * 4 + threadIdx.y;
    const int64_t bz = blockIdx.z;
    if (m >= g.M || n >= g.N) return;
    const float *A = g.A + bz * g.sa, *B = g.B + bz * g.sb;
    const int64_t a_step = g.ta ? g.lda : 1, b_step = g.tb ? 1 : g.ldb;
    const float *a = A + (g.ta ? m : m * g.lda), *b = B + (g.tb ? n * g.ldb : n);
    float acc = 0.f;
    for (int64_t k = 0; k < g.K; ++k) acc = fmaf(a[k * a_step], b[k * b_step], acc);
    float *Y = g.Y + bz * g.sy + m * g.ldy;
    const float *R = g.R ? g.R + bz * g.sr + m * g.ldr : nullptr;
    epilogue_store(g, acc, m, n, Y + n, R ? R + n : nullptr);
}
static inline mvrt_gpu_error_t launch_gemm_smallk(const gemm_args &g, mvrt_gpu_stream_t s)
{
    if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return MVRT_GPU_SUCCESS;
    dim3 grid((unsigned)((g.N + 63) / 64), (unsigned)((g.M + 3) / 4), (unsigned)g.batch);
    gemm_smallk_kernel<<<grid, dim3(64, 4), 0, s>>>(g);
    return mvrt_gpu_get_last_error();
}

/* The same short K at many outputs, A shared by the batch: the mixer's
 * dt_proj over windows (MambaVision-B at batch 256: stage 3, 256 x (256 x
 * 196) outputs, K = 32; stage 4, 256 x (512 x 49), K = 64; a per-row
 * bias). The vendor path ran a 16-bit copy of B (16-bit modes), a batched
 * GEMM of 256 small products and an epilogue pass over the fp32 output:
 * 0.093 ms per stage-3 call on an H200. Here one block takes item b's
 * rows [m0, m0 + rows) and all N columns: B_b (K x N) and the block's
 * rows of A (read as fp32 or widened from 16 bits, a16) are staged in
 * shared memory, each thread computes 8 rows x 4 adjacent columns as fp32
 * FMA chains (as accurate as the fp32 GEMM, in every math mode), then bias
 * and activation are applied and each row's 4 columns stored as one float4
 * where Y's rows allow (vec4). Staging keeps MVRT_SMALLKB_LOADS loads in
 * flight per thread (16-byte ones for B where its rows allow). The first
 * form loaded one element at a time and computed 4 x 4 tiles (2 shared
 * vectors per 16 FMAs) in two passes: stage 3 0.069 -> 0.059 ms with this
 * one, stage 4 0.069 -> 0.070 (H200, same build, two rounds; ncu at stage
 * 3: SM 69 %, memory 46 %, 64 registers, so 4 blocks per SM). Takes N <=
 * 4 * 64 columns (threads of a row group), K <= MVRT_SMALLK_GEMM_K, beta
 * 0, no residual and more than MVRT_SMALLK_GEMM_OUTPUTS outputs
 * (gemm_smallk_kernel keeps fewer: batch 1). Not kept (session 42): K in
 * chunks for x_proj (K 256: 0.112 ms against the vendor path's 0.058). */
#define MVRT_SMALLKB_THREADS 256
#define MVRT_SMALLKB_ROWS 8  /* rows per thread */
#define MVRT_SMALLKB_LOADS 8 /* staging loads in flight per thread */
struct smallkb_plan {
    int col_groups, row_groups, rows; /* threads per row group, row groups, rows per block */
    size_t smem;                      /* bytes: B_b (K x 4 col_groups) then A^T (K x rows) */
};
static inline smallkb_plan smallkb_plan_for(const gemm_args &g)
{
    smallkb_plan pl = {0, 0, 0, 0};
    if (g.N <= 0 || g.N > 4 * 64 || g.K <= 0 || g.K > MVRT_SMALLK_GEMM_K) return pl;
    pl.col_groups = (int)((g.N + 3) / 4);
    /* as many row groups as the threads allow and the staging fits 48 KB
     * (stage 4 above: 19 -> 17) */
    for (pl.row_groups = MVRT_SMALLKB_THREADS / pl.col_groups; pl.row_groups > 0; pl.row_groups--) {
        pl.rows = MVRT_SMALLKB_ROWS * pl.row_groups;
        pl.smem = sizeof(float) * (size_t)g.K * (size_t)(4 * pl.col_groups + pl.rows);
        if (pl.smem <= 48u * 1024u) return pl;
    }
    return smallkb_plan{0, 0, 0, 0};
}
/* a16: 0 (A floats) or A's 16-bit type (mvrt_linear_params_t.a16);
 * io16: 0 (B and Y floats) or the 16-bit type both B and Y are stored in
 * (b16 == y16: the 16-bit mixer chain's dbl -> dt), A then floats or of
 * the same type */
static inline bool gemm_smallk_batched_takes(const gemm_args &g, int a16, int io16)
{
    if (g.ta || g.tb || g.sa != 0 || g.y16 || g.R || g.beta != 0.f || g.batch > 0x7fffffff ||
        g.batch * g.M * g.N <= MVRT_SMALLK_GEMM_OUTPUTS)
        return false;
    if (a16 != 0 && a16 != MVRT_STORAGE16_BF16 && a16 != MVRT_STORAGE16_F16) return false;
    if (io16 != 0 && ((io16 != MVRT_STORAGE16_BF16 && io16 != MVRT_STORAGE16_F16) || (a16 != 0 && a16 != io16)))
        return false;
    const smallkb_plan pl = smallkb_plan_for(g);
    return pl.smem > 0 && (g.M + pl.rows - 1) / pl.rows <= 65535;
}
/* b_vec4: B's rows are runs of 4 elements (N and ldb multiples of 4,
 * items aligned to 4 elements), so NP == N and the staging loads 4
 * elements at a time (16 bytes, or 8 of IO16). IO16: 0, or the 16-bit
 * type B and Y are stored in (widened on staging, rounded once on the
 * store; vec4 then stores 8 bytes per row). */
template <int A16, int IO16>
__global__ void __launch_bounds__(MVRT_SMALLKB_THREADS)
    gemm_smallk_batched_kernel(gemm_args g, smallkb_plan pl, bool vec4, bool b_vec4)
{
    constexpr int T16 = IO16 ? IO16 : MVRT_STORAGE16_BF16; /* a valid type where IO16 is 0 */
    constexpr int T = MVRT_SMALLKB_THREADS, U = MVRT_SMALLKB_LOADS, RT = MVRT_SMALLKB_ROWS;
    extern __shared__ float4 smallkb_buf4[];
    float *Bs = reinterpret_cast<float *>(smallkb_buf4);
    const int K = (int)g.K, N = (int)g.N, NP = 4 * pl.col_groups, RP = pl.rows;
    float *As = Bs + K * NP; /* As[k * RP + r]: A's row m0 + r, column k */
    const int64_t b = blockIdx.x, m0 = (int64_t)blockIdx.y * RP;
    const int rows = (int)(g.M - m0 < RP ? g.M - m0 : RP);
    const float *B = g.B + b * g.sb;
    const unsigned short *B16 = reinterpret_cast<const unsigned short *>(g.B) + b * g.sb;
    if (b_vec4) {
        const int NQ = NP / 4, total = K * NQ;
        for (int i0 = threadIdx.x; i0 < total; i0 += U * T) {
            float4 v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * T, k = i / NQ, q = i - k * NQ;
                if (i < total) {
                    if (IO16) {
                        const uint2 w = *reinterpret_cast<const uint2 *>(B16 + (int64_t)k * g.ldb + 4 * q);
                        v[u] = make_float4(mvrt_h16_to_f32<T16>((unsigned short)(w.x & 0xffffu)),
                                           mvrt_h16_to_f32<T16>((unsigned short)(w.x >> 16)),
                                           mvrt_h16_to_f32<T16>((unsigned short)(w.y & 0xffffu)),
                                           mvrt_h16_to_f32<T16>((unsigned short)(w.y >> 16)));
                    } else {
                        v[u] = *reinterpret_cast<const float4 *>(B + (int64_t)k * g.ldb + 4 * q);
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                if (i0 + u * T < total) reinterpret_cast<float4 *>(Bs)[i0 + u * T] = v[u];
        }
    } else {
        const int total = K * NP;
        for (int i0 = threadIdx.x; i0 < total; i0 += U * T) {
            float v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * T, k = i / NP, n = i - k * NP;
                const int64_t at = (int64_t)k * g.ldb + n;
                v[u] = !(i < total && n < N) ? 0.f : IO16 ? mvrt_h16_to_f32<T16>(B16[at]) : B[at];
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                if (i0 + u * T < total) Bs[i0 + u * T] = v[u];
        }
    }
    {
        const int total = K * RP;
        for (int i0 = threadIdx.x; i0 < total; i0 += U * T) {
            float v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * T, r = i / K, k = i - r * K; /* consecutive threads along A's row */
                v[u] = 0.f;
                if (i < total && r < rows) {
                    const int64_t at = (m0 + r) * g.lda + k;
                    if (A16)
                        v[u] = mvrt_h16_to_f32<(A16 ? A16 : MVRT_STORAGE16_BF16)>(
                            reinterpret_cast<const unsigned short *>(g.A)[at]);
                    else
                        v[u] = g.A[at];
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * T, r = i / K, k = i - r * K;
                if (i < total) As[k * RP + r] = v[u];
            }
        }
    }
    __syncthreads();
    const int cg = threadIdx.x % pl.col_groups, rg = threadIdx.x / pl.col_groups;
    const int r0 = RT * rg;
    if (rg >= pl.row_groups || r0 >= rows) return;
    float acc[RT][4] = {};
    for (int k = 0; k < K; k++) {
        const float4 bv = *reinterpret_cast<const float4 *>(Bs + k * NP + 4 * cg);
        const float bb[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
        for (int h = 0; h < RT / 4; h++) {
            /* RP and r0 are multiples of 8: 16-byte aligned */
            const float4 av = *reinterpret_cast<const float4 *>(As + k * RP + r0 + 4 * h);
            const float a[4] = {av.x, av.y, av.z, av.w};
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[4 * h + i][j] = fmaf(a[i], bb[j], acc[4 * h + i][j]);
        }
    }
    float *Y = g.Y + b * g.sy;
    unsigned short *Y16 = reinterpret_cast<unsigned short *>(g.Y) + b * g.sy;
    const int n0 = 4 * cg;
#pragma unroll
    for (int i = 0; i < RT; i++) {
        if (r0 + i >= rows) break;
        const int64_t m = m0 + r0 + i;
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            v[j] = act_apply(g.act, acc[i][j] + (g.bias ? g.bias[g.bias_per_row ? m : n0 + j] : 0.f));
        if (IO16) {
            unsigned short *y = Y16 + m * g.ldy + n0;
            if (vec4 && n0 + 3 < N) {
                *reinterpret_cast<uint2 *>(y) = make_uint2(mvrt_h16x2<T16>(v[0], v[1]), mvrt_h16x2<T16>(v[2], v[3]));
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (n0 + j < N) y[j] = mvrt_f32_to_h16<T16>(v[j]);
            }
            continue;
        }
        float *y = Y + m * g.ldy + n0;
        if (vec4 && n0 + 3 < N) {
            *reinterpret_cast<float4 *>(y) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (n0 + j < N) y[j] = v[j];
        }
    }
}
/* a16, io16: as gemm_smallk_batched_takes, which said yes */
static inline mvrt_gpu_error_t launch_gemm_smallk_batched(const gemm_args &g, int a16, int io16, mvrt_gpu_stream_t s)
{
    if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return MVRT_GPU_SUCCESS;
    const smallkb_plan pl = smallkb_plan_for(g);
    const dim3 grid((unsigned)g.batch, (unsigned)((g.M + pl.rows - 1) / pl.rows));
    const unsigned esize = io16 ? 2u : 4u, run = 4u * esize - 1u; /* a run of 4 elements' alignment mask */
    const bool vec4 = g.ldy % 4 == 0 && g.sy % 4 == 0 && ((uintptr_t)g.Y & run) == 0;
    const bool b_vec4 = g.N % 4 == 0 && g.ldb % 4 == 0 && g.sb % 4 == 0 && ((uintptr_t)g.B & run) == 0;
#define SMALLKB_LAUNCH(A16, IO16) \
    gemm_smallk_batched_kernel<A16, IO16><<<grid, MVRT_SMALLKB_THREADS, pl.smem, s>>>(g, pl, vec4, b_vec4)
    if (io16 == MVRT_STORAGE16_BF16 && a16) SMALLKB_LAUNCH(MVRT_STORAGE16_BF16, MVRT_STORAGE16_BF16);
    else if (io16 == MVRT_STORAGE16_BF16) SMALLKB_LAUNCH(0, MVRT_STORAGE16_BF16);
    else if (io16 == MVRT_STORAGE16_F16 && a16) SMALLKB_LAUNCH(MVRT_STORAGE16_F16, MVRT_STORAGE16_F16);
    else if (io16 == MVRT_STORAGE16_F16) SMALLKB_LAUNCH(0, MVRT_STORAGE16_F16);
    else if (a16 == MVRT_STORAGE16_BF16) SMALLKB_LAUNCH(MVRT_STORAGE16_BF16, 0);
    else if (a16 == MVRT_STORAGE16_F16) SMALLKB_LAUNCH(MVRT_STORAGE16_F16, 0);
    else SMALLKB_LAUNCH(0, 0);
#undef SMALLKB_LAUNCH
    return mvrt_gpu_get_last_error();
}

/* The same products on tensor cores where A, B and Y are all 16-bit
 * values of one type (a16 == io16: the 16-bit mixer chain's dt_proj, whose
 * weight a 16-bit graph stores rounded): each product of two 16-bit
 * values is exact in fp32 and mma.sync accumulates in fp32, so the result
 * is the FMA kernel's up to the order of the sums. The FMA kernel issued
 * 32 FMAs per output and was bound by issue (ncu, MambaVision-B stage 3 at
 * batch 256, H200: SM 66 %, DRAM 1 %, 0.060 ms for 26 MB of output,
 * session 64). One block takes item b's rows [m0, m0 + 64), a warp per 16
 * rows: B_b (K x N) is staged in shared memory as it is stored (K rounded
 * up to 16 and N to 16 with zeros), the warp's A fragments come straight
 * from global memory (the weight, read by every item: L2), B fragments by
 * ldmatrix.trans, and each 64-column chunk of the output is finished
 * (bias, activation, one rounding) from the accumulators. Rows of the
 * staged B are N + 8..23 values apart: an odd number of 16-byte units, so
 * the 8 rows of an ldmatrix matrix fall in distinct bank groups. NVIDIA
 * only (sm_80+ for bf16, sm_75+ for fp16); elsewhere the FMA kernel.
 * Batch 256, H200, same build: B's stage 3 0.062 -> 0.049 ms, stage 4
 * (512 x 49, K 64) 0.072 -> 0.057; still ~6x the time its bytes need
 * (not profiled yet: each block restages its item's B, and the stores
 * are 4-byte pairs). */
#define MVRT_SMALLK_MMA_WARPS 4
static inline bool gemm_smallk_mma16_takes(const gemm_args &g, int a16, int io16, bool mma16, bool mma_f16)
{
#if defined(MVRT_GPU_CUDA)
    const bool cores = io16 == MVRT_STORAGE16_BF16 ? mma16 : io16 == MVRT_STORAGE16_F16 && (mma16 || mma_f16);
    return cores && a16 == io16 && gemm_smallk_batched_takes(g, a16, io16) &&
           (g.M + 16 * MVRT_SMALLK_MMA_WARPS - 1) / (16 * MVRT_SMALLK_MMA_WARPS) <= 65535;
#else
    (void)g, (void)a16, (void)io16, (void)mma16, (void)mma_f16;
    return false;
#endif
}
/* kp: K rounded up to 16; ns: the staged rows' stride (N rounded up to
 * 16, + 8); b_vec4: B's rows are runs of 4 aligned values (8-byte
 * staging loads); pair: Y's rows take 4-byte stores of column pairs */
template <int T16>
__global__ void __launch_bounds__(32 * MVRT_SMALLK_MMA_WARPS)
    gemm_smallk_mma16_kernel(gemm_args g, int kp, int ns, bool b_vec4, bool pair)
{
#ifdef MVRT_MMA16_DEVICE
    extern __shared__ __align__(16) uint16_t smallk_mma_buf[];
    uint16_t *Bs = smallk_mma_buf; /* Bs[k * ns + n] */
    const int K = (int)g.K, N = (int)g.N, NP = ns - 8;
    const int64_t b = blockIdx.x, m0 = (int64_t)blockIdx.y * (16 * MVRT_SMALLK_MMA_WARPS);
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31, gq = lane >> 2, c = lane & 3;
    const uint16_t *B = reinterpret_cast<const uint16_t *>(g.B) + b * g.sb;
    if (b_vec4) {
        const int NQ = NP / 4, items = kp * NQ;
#pragma unroll 4
        for (int i = t; i < items; i += 32 * MVRT_SMALLK_MMA_WARPS) {
            const int k = i / NQ, q = i - k * NQ;
            uint2 v = make_uint2(0u, 0u);
            if (k < K && 4 * q < N) v = *reinterpret_cast<const uint2 *>(B + (int64_t)k * g.ldb + 4 * q);
            *reinterpret_cast<uint2 *>(Bs + k * ns + 4 * q) = v;
        }
    } else {
        const int items = kp * NP;
#pragma unroll 4
        for (int i = t; i < items; i += 32 * MVRT_SMALLK_MMA_WARPS) {
            const int k = i / NP, n = i - k * NP;
            Bs[k * ns + n] = k < K && n < N ? B[(int64_t)k * g.ldb + n] : (uint16_t)0;
        }
    }
    /* this lane's A fragments: rows r0 and r0 + 8, columns 16 kk + 2 c (+ 1, + 8, + 9) */
    const int64_t r0 = m0 + 16 * warp + gq, r1 = r0 + 8;
    const uint16_t *A = reinterpret_cast<const uint16_t *>(g.A);
    const auto a_pair = [&](int64_t r, int k) -> uint32_t {
        return r < g.M ? mvrt_load_pair16(A + r * g.lda, k, K, false) : 0u;
    };
    const int ksteps = kp / 16;
    uint32_t af[MVRT_SMALLK_GEMM_K / 16][4];
#pragma unroll
    for (int kk = 0; kk < MVRT_SMALLK_GEMM_K / 16; kk++) {
        const int k = 16 * kk + 2 * c;
        const bool in = kk < ksteps;
        af[kk][0] = in ? a_pair(r0, k) : 0u;
        af[kk][1] = in ? a_pair(r1, k) : 0u;
        af[kk][2] = in ? a_pair(r0, k + 8) : 0u;
        af[kk][3] = in ? a_pair(r1, k + 8) : 0u;
    }
    const bool per_row = g.bias && g.bias_per_row;
    const float br0 = per_row && r0 < g.M ? g.bias[r0] : 0.f, br1 = per_row && r1 < g.M ? g.bias[r1] : 0.f;
    __syncthreads();
    if (m0 + 16 * warp >= g.M) return; /* warp-uniform: no rows */
    /* ldmatrix.trans row addresses (matrix mi = lane / 8, row mr): k rows 8
     * (mi % 2) + mr, columns 8 (mi / 2): b0, b1 of two 8-column blocks */
    const int mi = lane >> 3, mr = lane & 7;
    const uint32_t b_lane = (uint32_t)__cvta_generic_to_shared(Bs + (8 * (mi & 1) + mr) * ns + 8 * (mi >> 1));
    uint16_t *Y = reinterpret_cast<uint16_t *>(g.Y) + b * g.sy;
    for (int n0 = 0; n0 < NP; n0 += 64) {
        float acc[8][4];
#pragma unroll
        for (int j = 0; j < 8; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
#pragma unroll
        for (int jp = 0; jp < 4; jp++) {
            if (n0 + 16 * jp >= NP) break;
#pragma unroll
            for (int kk = 0; kk < MVRT_SMALLK_GEMM_K / 16; kk++) {
                if (kk >= ksteps) break;
                uint32_t bf[4];
                mvrt_ldsm4_trans(bf, b_lane + (uint32_t)((16 * kk * ns + n0 + 16 * jp) * 2));
                mvrt_mma16816<T16>(acc[2 * jp], af[kk], bf[0], bf[1]);
                mvrt_mma16816<T16>(acc[2 * jp + 1], af[kk], bf[2], bf[3]);
            }
        }
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int n = n0 + 8 * j + 2 * c;
            if (n >= N) continue;
            const bool two = n + 1 < N;
            const float bn0 = g.bias && !per_row ? g.bias[n] : 0.f;
            const float bn1 = g.bias && !per_row && two ? g.bias[n + 1] : 0.f;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int64_t r = h ? r1 : r0;
                if (r >= g.M) continue;
                const float br = h ? br1 : br0;
                const float v0 = act_apply(g.act, acc[j][2 * h] + br + bn0);
                const float v1 = act_apply(g.act, acc[j][2 * h + 1] + br + bn1);
                mvrt_store_pair16<T16>(Y + r * g.ldy, n, N, pair && two, v0, v1);
            }
        }
    }
#else
    (void)g; (void)kp; (void)ns; (void)b_vec4; (void)pair;
    mvrt_gpu_arch_missing();
#endif
}
/* io16: as gemm_smallk_mma16_takes, which said yes */
static inline mvrt_gpu_error_t launch_gemm_smallk_mma16(const gemm_args &g, int io16, mvrt_gpu_stream_t s)
{
    if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return MVRT_GPU_SUCCESS;
    const int kp = (int)((g.K + 15) / 16 * 16), ns = (int)((g.N + 15) / 16 * 16) + 8;
    const size_t smem = sizeof(uint16_t) * (size_t)kp * (size_t)ns; /* at most 64 x 264 values: 33 KB */
    const dim3 grid((unsigned)g.batch, (unsigned)((g.M + 16 * MVRT_SMALLK_MMA_WARPS - 1) / (16 * MVRT_SMALLK_MMA_WARPS)));
    const bool b_vec4 = g.N % 4 == 0 && g.ldb % 4 == 0 && g.sb % 4 == 0 && ((uintptr_t)g.B & 7u) == 0;
    const bool pair = g.ldy % 2 == 0 && g.sy % 2 == 0 && ((uintptr_t)g.Y & 3u) == 0;
    if (io16 == MVRT_STORAGE16_F16)
        gemm_smallk_mma16_kernel<MVRT_STORAGE16_F16>
            <<<grid, 32 * MVRT_SMALLK_MMA_WARPS, smem, s>>>(g, kp, ns, b_vec4, pair);
    else
        gemm_smallk_mma16_kernel<MVRT_STORAGE16_BF16>
            <<<grid, 32 * MVRT_SMALLK_MMA_WARPS, smem, s>>>(g, kp, ns, b_vec4, pair);
    return mvrt_gpu_get_last_error();
}

/* A few rows times a PyTorch weight (Y = A W^T: !ta, tb, M <= 8), e.g. the
 * classifier head at batch 1 (1 x 1000, K = 640): one warp per output
 * column n walks row n of B and the M rows of A along K (16-byte loads
 * where rows allow), keeps M sums per lane, reduces them across the warp
 * in a fixed order (deterministic) and stores with the epilogue. The
 * cluster GEMM took 9.3 us for the head (H100, ncu: 16 tiles of which one
 * row is used). Grid: x over columns (8 warps per block), z over the batch. */
#define MVRT_ROWS_GEMM_M 8
static inline bool gemm_rows_takes(const gemm_args &g)
{
    return !g.ta && g.tb && g.M <= MVRT_ROWS_GEMM_M && g.K >= 128 && !g.y16 && g.batch <= 65535 &&
           g.N <= (int64_t)8 * 0x7fffffff;
}
template <bool VEC>
__global__ void __launch_bounds__(256) gemm_rows_kernel(gemm_args g)
{
    const int lane = threadIdx.x % MVRT_WARP_SIZE;
    const int64_t n = (int64_t)blockIdx.x * (256 / MVRT_WARP_SIZE) + threadIdx.x / MVRT_WARP_SIZE, bz = blockIdx.z;
    if (n >= g.N) return;
    const float *A = g.A + bz * g.sa, *brow = g.B + bz * g.sb + n * g.ldb;
    float acc[MVRT_ROWS_GEMM_M];
#pragma unroll
    for (int m = 0; m < MVRT_ROWS_GEMM_M; ++m) acc[m] = 0.f;
    /* unrolled: several loads of the (cold) weight row in flight */
    if (VEC) {
#pragma unroll 4
        for (int64_t k = 4 * lane; k < g.K; k += 4 * MVRT_WARP_SIZE) {
            const float4 b = *reinterpret_cast<const float4 *>(brow + k);
#pragma unroll
            for (int m = 0; m < MVRT_ROWS_GEMM_M; ++m)
                if (m < g.M) {
                    const float4 a = *reinterpret_cast<const float4 *>(A + m * g.lda + k);
                    acc[m] = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, acc[m]))));
                }
        }
    } else {
#pragma unroll 4
        for (int64_t k = lane; k < g.K; k += MVRT_WARP_SIZE) {
            const float b = brow[k];
#pragma unroll
            for (int m = 0; m < MVRT_ROWS_GEMM_M; ++m)
                if (m < g.M) acc[m] = fmaf(A[m * g.lda + k], b, acc[m]);
        }
    }
#pragma unroll
    for (int m = 0; m < MVRT_ROWS_GEMM_M; ++m)
#pragma unroll
        for (int o = MVRT_WARP_SIZE / 2; o > 0; o /= 2) acc[m] += MVRT_SHFL_XOR(acc[m], o, MVRT_WARP_SIZE);
    if (lane != 0) return;
    float *Y = g.Y + bz * g.sy;
    const float *R = g.R ? g.R + bz * g.sr : nullptr;
#pragma unroll
    for (int m = 0; m < MVRT_ROWS_GEMM_M; ++m)
        if (m < g.M) epilogue_store(g, acc[m], m, n, Y + m * g.ldy + n, R ? R + m * g.ldr + n : nullptr);
}
/* warp_size: the device's (the device pass's MVRT_WARP_SIZE) */
static inline mvrt_gpu_error_t launch_gemm_rows(const gemm_args &g, int warp_size, mvrt_gpu_stream_t s)
{
    if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return MVRT_GPU_SUCCESS;
    const int64_t per_block = 256 / warp_size;
    dim3 grid((unsigned)((g.N + per_block - 1) / per_block), 1, (unsigned)g.batch);
    const bool vec = g.K % 4 == 0 && g.lda % 4 == 0 && g.ldb % 4 == 0 && g.sa % 4 == 0 && g.sb % 4 == 0 &&
                     mvrt_aligned16(g.A) && mvrt_aligned16(g.B);
    if (vec) gemm_rows_kernel<true><<<grid, 256, 0, s>>>(g);
    else gemm_rows_kernel<false><<<grid, 256, 0, s>>>(g);
    return mvrt_gpu_get_last_error();
}

/* Queues the epilogue over Y (nothing to do without bias, act, residual). */
static inline mvrt_gpu_error_t launch_epilogue(const gemm_args &g, mvrt_gpu_stream_t s)
{
    if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return MVRT_GPU_SUCCESS;
    if (!g.bias && g.act == MVRT_ACT_NONE && !g.R) return MVRT_GPU_SUCCESS;
    const uint64_t rows = (uint64_t)g.batch * (uint64_t)g.M;
    /* four columns at a time: 16-byte rows of an fp32 Y, 8-byte of a 16-bit Y */
    const bool y_aligned = g.y16 ? ((uintptr_t)g.Y & 7u) == 0 : mvrt_aligned16(g.Y);
    const bool r_aligned = g.y16 ? ((uintptr_t)g.R & 7u) == 0 : mvrt_aligned16(g.R);
    const bool vec4 = g.N % 4 == 0 && g.ldy % 4 == 0 && (g.batch == 1 || g.sy % 4 == 0) && y_aligned &&
                      (!g.R || (g.ldr % 4 == 0 && (g.batch == 1 || g.sr % 4 == 0) && r_aligned)) &&
                      (!g.bias || g.bias_per_row || mvrt_aligned16(g.bias));
    /* eight 16-bit columns at a time: 16-byte rows (bias per column read as
     * two float4) */
    const bool vec8 = g.y16 && g.batch == 1 && g.N % 8 == 0 && g.ldy % 8 == 0 &&
                      mvrt_aligned16(g.Y) && !g.R && (!g.bias || g.bias_per_row || mvrt_aligned16(g.bias));
    if (vec8) {
        const dim3 b8(32, 8);
        const dim3 g8(mvrt_min_u64(((uint64_t)g.N / 8 + 31) / 32, 16), mvrt_min_u64((rows + 7) / 8, 65535));
        if (g.y16 == MVRT_STORAGE16_F16) epilogue16_vec8_kernel<MVRT_STORAGE16_F16><<<g8, b8, 0, s>>>(g);
        else epilogue16_vec8_kernel<MVRT_STORAGE16_BF16><<<g8, b8, 0, s>>>(g);
        return mvrt_gpu_get_last_error();
    }
    dim3 block(64, 4);
    dim3 grid(mvrt_min_u64(((uint64_t)(vec4 ? g.N / 4 : g.N) + 63) / 64, 8), mvrt_min_u64((rows + 3) / 4, 65535));
    const bool f16 = g.y16 == MVRT_STORAGE16_F16;
    if (!vec4 && !g.y16) epilogue_kernel<0><<<grid, block, 0, s>>>(g);
    else if (!vec4) f16 ? epilogue_kernel<MVRT_STORAGE16_F16><<<grid, block, 0, s>>>(g)
                        : epilogue_kernel<MVRT_STORAGE16_BF16><<<grid, block, 0, s>>>(g);
    else if (g.y16) f16 ? epilogue16_vec4_kernel<MVRT_STORAGE16_F16><<<grid, block, 0, s>>>(g)
                        : epilogue16_vec4_kernel<MVRT_STORAGE16_BF16><<<grid, block, 0, s>>>(g);
    else epilogue_vec4_kernel<<<grid, block, 0, s>>>(g);
    return mvrt_gpu_get_last_error();
}

/* Queues the split-K sum + epilogue (g.batch == 1). */
static inline mvrt_gpu_error_t launch_splitk_epilogue(const gemm_args &g, const float *P, int S, mvrt_gpu_stream_t s)
{
    if (g.M <= 0 || g.N <= 0) return MVRT_GPU_SUCCESS;
    dim3 block(64, 4);
    dim3 grid(mvrt_min_u64(((uint64_t)g.N + 63) / 64, 64), mvrt_min_u64(((uint64_t)g.M + 3) / 4, 65535));
    splitk_epilogue_kernel<<<grid, block, 0, s>>>(g, P, S);
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
