/* GPU kernel of the depthwise conv1d + SiLU (ops/common/mv_op_params.h),
 * compiled by nvcc and by clang as HIP through
 * backends/gpu_common/mv_gpu_launch.cu.
 *
 * The op usually reads token-major (Bw, L, C) slices (channel stride 1) and
 * writes channel-major (Bw, C, L) rows (length stride 1) for the scan: a
 * transpose fused with the convolution. One block takes a tile of 32
 * channels x 64 positions of one batch element: it stages the input tile
 * plus the (width - 1) halo in shared memory, reading along whichever of
 * channel / length is contiguous in x, then computes and writes along
 * whichever is contiguous in y. Shared rows have an odd length, so lanes
 * walking down channels hit distinct banks. Where tiles of 64 positions
 * leave SMs idle (batch 1: 20 blocks for 160 channels x 196 tokens) the
 * tiles are 16 positions long: 4x the blocks, one round of staging loads
 * and 2 outputs per thread (about 7 -> 4 us per call, H100, ncu). Widths
 * above 32 (not used by MambaVision, whose width is 3) go through a direct
 * kernel.
 *
 * Which kernel serves which shape (launch_dwconv1d):
 *   token-major x, length-contiguous y (and y2), L <= 256, width <= 8,
 *   at least 2 blocks per SM                        -> dwconv1d_rows_kernel
 *     (a block stages 32 channels over the whole sequence, 128 where
 *     L + width - 1 <= 65, then a warp writes each channel's row of L
 *     outputs as 128-byte runs: MambaVision-B's stage-3 call (batch 256,
 *     C 512, L 196) 0.128 -> 0.096 ms against the tiled kernel, whose tail
 *     tile holds 4 of 64 positions and whose 16-byte stores land 784 bytes
 *     apart; a device copy of the same bytes takes 0.054 ms. H200); the
 *     16-bit forms (x16: a 16-bit in_proj output; y_copy16: a 16-bit copy
 *     of u for x_proj's 16-bit GEMM; y16: u and z written in 16 bits
 *     alone, the 16-bit mixer chain) run here only, elsewhere declined
 *   width <= 32, anything else                      -> dwconv1d_tiled_kernel
 *     (16-position tiles where 64-position ones leave SMs idle: batch 1)
 *   width > 32                                      -> dwconv1d_direct_kernel */
#ifndef MVRT_OPS_DWCONV1D_GPU_CUH
#define MVRT_OPS_DWCONV1D_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include <stdint.h>

namespace mvrt_mv_gpu {

#define MVRT_DW_TC 32
#define MVRT_DW_TL 64       /* positions per tile */
#define MVRT_DW_TL_SHORT 16 /* positions per tile where long tiles leave SMs idle */
#define MVRT_DW_MAXW 32
#define MVRT_DW_LOADS 4 /* staging loads in flight per thread */

/* SiLU with the hardware's exp2 and reciprocal (about 2 ulp each): the
 * accurate expf and IEEE division made the stage-4 conv of MambaVision-T
 * at batch 256 compute-bound (ncu: SM 78 %, memory 17 %, 74 us on an
 * H200). v -> -inf: the reciprocal of inf is 0, silu -> -0. */
static __device__ __forceinline__ float silu_f(float v)
{
    return v * mvrt_fast_rcp(1.f + mvrt_fast_exp2(v * -1.4426950408889634f));
}

/* Output element (b, c, l) and weight row of channel c: the first part, or
 * past p.split the second (y2, weight2). */
/* Output (b, c, l) in y or y2, elements of type E: float, or the 16-bit
 * bits of the y16 form (same strides in elements) */
template <typename E = float>
static __device__ __forceinline__ E *dw_out(const mvrt_dwconv1d_params_t &p, int64_t b, int64_t c, int64_t l)
{
    if (p.split > 0 && c >= p.split)
        return reinterpret_cast<E *>(p.y2) + b * p.y2_stride[0] + (c - p.split) * p.y2_stride[1] + l * p.y2_stride[2];
    return reinterpret_cast<E *>(p.y) + b * p.y_stride[0] + c * p.y_stride[1] + l * p.y_stride[2];
}
static __device__ __forceinline__ const float *dw_weight(const mvrt_dwconv1d_params_t &p, int64_t c)
{
    return p.split > 0 && c >= p.split ? p.weight2 + (c - p.split) * p.width : p.weight + c * p.width;
}

/* Grid: x = length tiles of TL, y = channel tiles, z = batch (grid-stride). */
template <int TL>
__global__ void __launch_bounds__(256) dwconv1d_tiled_kernel(mvrt_dwconv1d_params_t p)
{
    constexpr int ROW = TL + MVRT_DW_MAXW - 1; /* odd: 95 or 47 */
    static_assert(ROW % 2 == 1, "shared rows of odd length");
    __shared__ float tile[MVRT_DW_TC][ROW];
    const int W = p.width, pad = (W - 1) / 2;
    const int TLH = TL + W - 1;
    const int64_t c0 = (int64_t)blockIdx.y * MVRT_DW_TC;
    const int64_t l0 = (int64_t)blockIdx.x * TL;
    const bool x_cfast = p.x_stride[1] == 1 && p.x_stride[2] != 1;
    const bool y_cfast = p.y_stride[1] == 1 && p.y_stride[2] != 1;
    for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
        const float *x = p.x + b * p.x_stride[0];
        /* DW_LOADS loads in flight per thread before their shared stores: one
         * at a time, each waited for its global latency (batch 1: 20 blocks,
         * ~8 elements per thread, 7 us per call on an H200) */
        const int total = MVRT_DW_TC * TLH;
        for (int idx0 = threadIdx.x; idx0 < total; idx0 += MVRT_DW_LOADS * blockDim.x) {
            float v[MVRT_DW_LOADS];
            int cs[MVRT_DW_LOADS], ls[MVRT_DW_LOADS];
#pragma unroll
            for (int k = 0; k < MVRT_DW_LOADS; ++k) {
                const int idx = idx0 + k * (int)blockDim.x;
                int c, l;
                if (x_cfast) { c = idx % MVRT_DW_TC; l = idx / MVRT_DW_TC; } else { l = idx % TLH; c = idx / TLH; }
                const int64_t cg = c0 + c, lg = l0 - pad + l;
                cs[k] = c, ls[k] = l;
                v[k] = (idx < total && cg < p.channels && lg >= 0 && lg < p.length) ? x[cg * p.x_stride[1] + lg * p.x_stride[2]] : 0.f;
            }
#pragma unroll
            for (int k = 0; k < MVRT_DW_LOADS; ++k)
                if (idx0 + k * (int)blockDim.x < total) tile[cs[k]][ls[k]] = v[k];
        }
        __syncthreads();
        if (!y_cfast) {
            /* 8 consecutive positions of one channel per thread (lanes
             * over channels: distinct banks of the odd-length rows), each
             * weight loaded once for them, two 16-byte stores where the
             * row allows */
            for (int idx = threadIdx.x; idx < MVRT_DW_TC * (TL / 8); idx += blockDim.x) {
                const int c = idx % MVRT_DW_TC, lb = (idx / MVRT_DW_TC) * 8;
                const int64_t cg = c0 + c, lg = l0 + lb;
                if (cg >= p.channels || lg >= p.length) continue;
                const float *w = dw_weight(p, cg);
                float acc[8];
#pragma unroll
                for (int k = 0; k < 8; k++) acc[k] = 0.f;
                for (int j = 0; j < W; j++) {
                    const float wj = w[j];
#pragma unroll
                    for (int k = 0; k < 8; k++) acc[k] = fmaf(wj, tile[c][lb + k + j], acc[k]);
                }
                float *out = dw_out(p, b, cg, lg);
                if (lg + 8 <= p.length && p.y_stride[2] == 1 && ((uintptr_t)out & 15u) == 0) {
                    reinterpret_cast<float4 *>(out)[0] =
                        make_float4(silu_f(acc[0]), silu_f(acc[1]), silu_f(acc[2]), silu_f(acc[3]));
                    reinterpret_cast<float4 *>(out)[1] =
                        make_float4(silu_f(acc[4]), silu_f(acc[5]), silu_f(acc[6]), silu_f(acc[7]));
                } else {
                    for (int k = 0; k < 8 && lg + k < p.length; k++) *dw_out(p, b, cg, lg + k) = silu_f(acc[k]);
                }
            }
        } else {
            for (int idx = threadIdx.x; idx < MVRT_DW_TC * TL; idx += blockDim.x) {
                const int c = idx % MVRT_DW_TC, l = idx / MVRT_DW_TC; /* channels fastest */
                const int64_t cg = c0 + c, lg = l0 + l;
                if (cg >= p.channels || lg >= p.length) continue;
                const float *w = dw_weight(p, cg);
                float acc = 0.f;
                for (int j = 0; j < W; j++) acc = fmaf(w[j], tile[c][l + j], acc);
                *dw_out(p, b, cg, lg) = silu_f(acc);
            }
        }
        __syncthreads(); /* the tile is reloaded for the next batch element */
    }
}

/* Token-major x (channel stride 1) into length-contiguous rows of y (and
 * y2): block = TC channels x the whole sequence of one batch element
 * (grid x over channel tiles, y over the batch, grid-stride). The staging
 * loads read 32 consecutive channels of a token (128 bytes) per warp,
 * MVRT_DW_LOADS in flight per thread; each warp then computes TC / 8
 * channels, lanes over positions, so every store instruction writes 32
 * consecutive floats. */
#define MVRT_DW_ROWS_LMAX 256
#define MVRT_DW_ROWS_WMAX 8
/* short sequences (L + width - 1 <= 65: MambaVision's stage 4, L 49) take
 * 128 channels per block (0.086 -> 0.084 ms at B's stage 4, H200) */
#define MVRT_DW_ROWS_SHORT 65
/* Element i of x: a float, or (T16 != 0 and x16) a 16-bit value widened. */
template <int T16> static __device__ __forceinline__ float dw_x(const mvrt_dwconv1d_params_t &p, int64_t i)
{
    if constexpr (T16 != 0) {
        if (p.x16) return mvrt_h16_to_f32<T16>(reinterpret_cast<const unsigned short *>(p.x)[i]);
    }
    return p.x[i];
}

/* TC channels per block, ROW (odd) >= L + width - 1 staged positions;
 * T16: 0, or the 16-bit type of the op's x16 / y_copy16 / y16 forms (the only
 * kernel that runs them: mv_op_params.h) */
template <int TC, int ROW, int T16>
__global__ void __launch_bounds__(256) dwconv1d_rows_kernel(mvrt_dwconv1d_params_t p)
{
    static_assert(ROW % 2 == 1, "shared rows of odd length: distinct banks down a column");
    __shared__ float tile[TC][ROW];
    /* the tile's filter rows, staged once (read per channel from global
     * memory, each warp waited for them channel after channel: 0.102 ms
     * at B's stage 3 against 0.097) */
    __shared__ float wts[TC][MVRT_DW_ROWS_WMAX];
    const int W = p.width, pad = (W - 1) / 2, L = (int)p.length, LH = L + W - 1;
    const int64_t c0 = (int64_t)blockIdx.x * TC;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int i = threadIdx.x; i < TC * MVRT_DW_ROWS_WMAX; i += blockDim.x) {
        const int c = i / MVRT_DW_ROWS_WMAX, j = i % MVRT_DW_ROWS_WMAX;
        wts[c][j] = c0 + c < p.channels && j < W ? dw_weight(p, c0 + c)[j] : 0.f;
    }
    /* a 16-bit x read two channels per 4-byte load where pairs are aligned */
    bool pairs = false;
    if constexpr (T16 != 0)
        pairs = p.x16 && ((reinterpret_cast<uintptr_t>(p.x) & 3u) == 0) && (p.x_stride[0] % 2 == 0) &&
                (p.x_stride[2] % 2 == 0) && (p.channels % 2 == 0);
    for (int64_t b = blockIdx.y; b < p.batch; b += gridDim.y) {
        const int64_t xb = b * p.x_stride[0];
        const int total = TC * LH;
        if constexpr (T16 != 0) {
            if (pairs) {
                const uint32_t *x2 = reinterpret_cast<const uint32_t *>(p.x);
                const int total2 = total / 2; /* TC is even */
                for (int idx0 = threadIdx.x; idx0 < total2; idx0 += MVRT_DW_LOADS * blockDim.x) {
                    uint32_t v[MVRT_DW_LOADS];
#pragma unroll
                    for (int k = 0; k < MVRT_DW_LOADS; ++k) {
                        const int idx = idx0 + k * (int)blockDim.x;
                        const int c = 2 * (idx % (TC / 2)), l = idx / (TC / 2);
                        const int64_t cg = c0 + c, lg = (int64_t)l - pad;
                        v[k] = (idx < total2 && cg < p.channels && lg >= 0 && lg < L)
                                   ? x2[(xb + cg + lg * p.x_stride[2]) / 2]
                                   : 0u;
                    }
#pragma unroll
                    for (int k = 0; k < MVRT_DW_LOADS; ++k) {
                        const int idx = idx0 + k * (int)blockDim.x;
                        const int c = 2 * (idx % (TC / 2)), l = idx / (TC / 2);
                        if (idx < total2) {
                            tile[c][l] = mvrt_h16_to_f32<T16>((unsigned short)(v[k] & 0xffffu));
                            tile[c + 1][l] = mvrt_h16_to_f32<T16>((unsigned short)(v[k] >> 16));
                        }
                    }
                }
            }
        }
        for (int idx0 = pairs ? total : threadIdx.x; idx0 < total; idx0 += MVRT_DW_LOADS * blockDim.x) {
            float v[MVRT_DW_LOADS];
#pragma unroll
            for (int k = 0; k < MVRT_DW_LOADS; ++k) {
                const int idx = idx0 + k * (int)blockDim.x;
                const int c = idx % TC, l = idx / TC;
                const int64_t cg = c0 + c, lg = (int64_t)l - pad;
                v[k] = (idx < total && cg < p.channels && lg >= 0 && lg < L) ? dw_x<T16>(p, xb + cg + lg * p.x_stride[2])
                                                                              : 0.f;
            }
#pragma unroll
            for (int k = 0; k < MVRT_DW_LOADS; ++k) {
                const int idx = idx0 + k * (int)blockDim.x;
                if (idx < total) tile[idx % TC][idx / TC] = v[k];
            }
        }
        __syncthreads();
        for (int c = warp; c < TC; c += (int)blockDim.x / 32) {
            const int64_t cg = c0 + c;
            if (cg >= p.channels) break;
            float w[MVRT_DW_ROWS_WMAX];
#pragma unroll
            for (int j = 0; j < MVRT_DW_ROWS_WMAX; j++) w[j] = wts[c][j];
            /* y16: the 16-bit row replaces the float one */
            float *out = p.y16 ? nullptr : dw_out(p, b, cg, 0);
            unsigned short *copy = nullptr; /* the first part's 16-bit copy, or (y16) the row itself */
            if constexpr (T16 != 0) {
                if (p.y16) copy = dw_out<unsigned short>(p, b, cg, 0);
                else if (p.y_copy16 && (p.split <= 0 || cg < p.split))
                    copy = reinterpret_cast<unsigned short *>(p.y_copy) + b * p.y_stride[0] + cg * p.y_stride[1];
            }
            for (int l = lane; l < L; l += 32) {
                float acc = 0.f;
#pragma unroll
                for (int j = 0; j < MVRT_DW_ROWS_WMAX; j++)
                    if (j < W) acc = fmaf(w[j], tile[c][l + j], acc);
                const float v = silu_f(acc);
                if (out) out[l] = v;
                if constexpr (T16 != 0) {
                    if (copy) copy[l] = mvrt_f32_to_h16<T16>(v);
                }
            }
        }
        __syncthreads(); /* the tile is reloaded for the next batch element */
    }
}

/* Any width: one thread per output, grid-stride over all of them. */
__global__ void __launch_bounds__(256) dwconv1d_direct_kernel(mvrt_dwconv1d_params_t p)
{
    const int W = p.width, pad = (W - 1) / 2;
    const int64_t total = p.batch * p.channels * p.length;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t l = i % p.length, bc = i / p.length;
        const int64_t c = bc % p.channels, b = bc / p.channels;
        const float *x = p.x + b * p.x_stride[0] + c * p.x_stride[1];
        const float *w = dw_weight(p, c);
        float acc = 0.f;
        for (int j = 0; j < W; j++) {
            const int64_t s = l + j - pad;
            if (s >= 0 && s < p.length) acc = fmaf(w[j], x[s * p.x_stride[2]], acc);
        }
        *dw_out(p, b, c, l) = silu_f(acc);
    }
}

/* The whole-row kernel runs the op (the table above): token-major x,
 * length-contiguous y (and y2), L <= 256, width <= 8, at least 2 blocks
 * per SM. The 16-bit forms (x16, y_copy16, y16) run only there. */
static inline bool dwconv1d_rows_form(const mvrt_dwconv1d_params_t &p, int sm_count)
{
    const bool layout = p.x_stride[1] == 1 && p.y_stride[2] == 1 && (p.split <= 0 || p.y2_stride[2] == 1) &&
                        p.length <= MVRT_DW_ROWS_LMAX && p.width >= 1 && p.width <= MVRT_DW_ROWS_WMAX;
    const bool short_rows = p.length + p.width - 1 <= MVRT_DW_ROWS_SHORT;
    const int64_t rtiles = short_rows ? (p.channels + 127) / 128 : (p.channels + MVRT_DW_TC - 1) / MVRT_DW_TC;
    return layout && p.batch > 0 && rtiles * p.batch >= 2 * (int64_t)sm_count && rtiles <= 0x7fffffff;
}

template <int T16> static inline void launch_dwconv1d_rows(const mvrt_dwconv1d_params_t &p, mvrt_gpu_stream_t s)
{
    const bool short_rows = p.length + p.width - 1 <= MVRT_DW_ROWS_SHORT;
    const int64_t rtiles = short_rows ? (p.channels + 127) / 128 : (p.channels + MVRT_DW_TC - 1) / MVRT_DW_TC;
    dim3 grid((unsigned)rtiles, (unsigned)(p.batch < 65535 ? p.batch : 65535));
    if (short_rows) dwconv1d_rows_kernel<128, MVRT_DW_ROWS_SHORT, T16><<<grid, 256, 0, s>>>(p);
    else dwconv1d_rows_kernel<MVRT_DW_TC, MVRT_DW_ROWS_LMAX + MVRT_DW_ROWS_WMAX - 1, T16><<<grid, 256, 0, s>>>(p);
}

/* sm_count: the device's multiprocessors (picks the tile length). The
 * caller has checked that a 16-bit form (x16, y_copy16, y16) is in the rows
 * form (dwconv1d_rows_form). */
static inline mvrt_gpu_error_t launch_dwconv1d(const mvrt_dwconv1d_params_t &p, int sm_count, mvrt_gpu_stream_t s)
{
    if (p.batch <= 0 || p.channels <= 0 || p.length <= 0) return MVRT_GPU_SUCCESS;
    const int64_t ctiles = (p.channels + MVRT_DW_TC - 1) / MVRT_DW_TC;
    const int64_t ltiles = (p.length + MVRT_DW_TL - 1) / MVRT_DW_TL;
    const bool shorter = ltiles * ctiles * p.batch < sm_count;
    const int64_t stiles = (p.length + MVRT_DW_TL_SHORT - 1) / MVRT_DW_TL_SHORT;
    const int t16 = p.x16 ? p.x16 : p.y_copy16 ? p.y_copy16 : p.y16;
    if (dwconv1d_rows_form(p, sm_count)) {
        if (t16 == MVRT_STORAGE16_BF16) launch_dwconv1d_rows<MVRT_STORAGE16_BF16>(p, s);
        else if (t16 == MVRT_STORAGE16_F16) launch_dwconv1d_rows<MVRT_STORAGE16_F16>(p, s);
        else launch_dwconv1d_rows<0>(p, s);
    } else if (p.width >= 1 && p.width <= MVRT_DW_MAXW && ctiles <= 65535 && stiles <= 0x7fffffff) {
        dim3 grid((unsigned)(shorter ? stiles : ltiles), (unsigned)ctiles, (unsigned)(p.batch < 65535 ? p.batch : 65535));
        if (shorter) dwconv1d_tiled_kernel<MVRT_DW_TL_SHORT><<<grid, 256, 0, s>>>(p);
        else dwconv1d_tiled_kernel<MVRT_DW_TL><<<grid, 256, 0, s>>>(p);
    } else {
        const int64_t total = p.batch * p.channels * p.length;
        const int64_t blocks = (total + 255) / 256;
        dwconv1d_direct_kernel<<<(unsigned)(blocks < 1048576 ? blocks : 1048576), 256, 0, s>>>(p);
    }
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
