/* GPU kernels of the window partition and reverse (ops/common/
 * mv_op_params.h), compiled by nvcc and by clang as HIP through
 * backends/gpu_common/mv_gpu_launch.cu.
 *
 * Per image the map holds (C, H*W) with positions contiguous and the
 * tokens hold (tokens, C) with channels contiguous, so both directions are
 * a (C, positions) <-> (positions, C) transpose per image with the token of
 * each position remapped: 32 x 32 tiles (32 positions in row-major order of
 * the image, 32 channels) through shared memory (rows padded to 33 floats),
 * loads and stores coalesced on both sides (128 bytes per warp access).
 * Partition walks the padded grid (Hp = nh*ws, Wp = nw*ws; positions of
 * Hp x Wp in row-major order) and writes zeros outside the image; reverse
 * walks the image only (the padding tokens are dropped). An earlier kernel
 * transposed per image row: with MambaVision's 14- and 7-pixel rows most of
 * its 32-wide tiles were idle (stage 3 of MambaVision-T at batch 256: 0.24
 * ms per partition on an H100, ~0.5 TB/s). Positions within an image are
 * 32-bit (the launcher checks). */
#ifndef MVRT_OPS_WINDOW_GPU_CUH
#define MVRT_OPS_WINDOW_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include <stdint.h>

namespace mvrt_mv_gpu {

/* The token of pixel (y, x) of an image whose first token is tok_img:
 * windows in row-major (wh, ww) order, tokens row-major inside one. */
static __device__ __forceinline__ int64_t window_token(int64_t tok_img, int y, int x, int ws, int nw)
{
    const int wh = y / ws, ww = x / ws;
    return tok_img + ((int64_t)wh * nw + ww) * ws * ws + (y - wh * ws) * ws + (x - ww * ws);
}

/* Block (32, 8). Grid: x = tiles of 32 positions (of the padded grid for
 * the partition, of the image for the reverse), y = channel tiles, z =
 * images; y and z grid-stride. */
template <bool REVERSE>
__global__ void __launch_bounds__(256) window_kernel(mvrt_window_params_t p)
{
    __shared__ float tile[32][33];
    const int ws = p.window;
    const int H = (int)p.height, W = (int)p.width;
    const int nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    const int gw = REVERSE ? W : nw * ws;                  /* width of the walked grid */
    const int npos = REVERSE ? H * W : nh * ws * gw;       /* positions walked per image */
    const int64_t C = p.channels, HW = (int64_t)H * W;
    const int pos0 = blockIdx.x * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
        const int64_t map0 = b * C * HW;                          /* this image in the map */
        const int64_t tok_img = b * (int64_t)nh * nw * ws * ws;  /* its first token */
        for (int64_t c0 = (int64_t)blockIdx.y * 32; c0 < C; c0 += (int64_t)gridDim.y * 32) {
            /* position pos of the grid -> (y, x) and its token */
            if (!REVERSE) {
                for (int i = ty; i < 32; i += 8) {
                    const int pos = pos0 + tx;
                    const int64_t c = c0 + i;
                    float v = 0.f;
                    if (pos < npos && c < C) {
                        const int y = pos / gw, x = pos - y * gw;
                        if (y < H && x < W) v = p.src[map0 + c * HW + (int64_t)y * W + x];
                    }
                    tile[i][tx] = v;
                }
                __syncthreads();
                for (int i = ty; i < 32; i += 8) {
                    const int pos = pos0 + i;
                    const int64_t c = c0 + tx;
                    if (pos < npos && c < C) {
                        const int y = pos / gw, x = pos - y * gw;
                        p.dst[window_token(tok_img, y, x, ws, nw) * C + c] = tile[tx][i];
                    }
                }
            } else {
                for (int i = ty; i < 32; i += 8) {
                    const int pos = pos0 + i;
                    const int64_t c = c0 + tx;
                    if (pos < npos && c < C) {
                        const int y = pos / gw, x = pos - y * gw;
                        tile[tx][i] = p.src[window_token(tok_img, y, x, ws, nw) * C + c];
                    }
                }
                __syncthreads();
                for (int i = ty; i < 32; i += 8) {
                    const int pos = pos0 + tx;
                    const int64_t c = c0 + i;
                    if (pos < npos && c < C) p.dst[map0 + c * HW + pos] = tile[i][tx];
                }
            }
            __syncthreads(); /* the tile is refilled for the next channel tile / image */
        }
    }
}

/* The 16-bit NHWC map form (p.map_nhwc16, of type T16): map rows of C 16-bit channels
 * <-> token rows of C floats, one thread per (position, channel) of the
 * walked grid (the padded grid for the partition, the image for the
 * reverse), channels fastest: both sides are contiguous along C, so loads
 * and stores coalesce without a shared-memory transpose. */
template <bool REVERSE, int T16>
__global__ void __launch_bounds__(256) window_nhwc16_kernel(mvrt_window_params_t p)
{
    const int ws = p.window;
    const int H = (int)p.height, W = (int)p.width;
    const int nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    const int gw = REVERSE ? W : nw * ws;
    const int64_t npos = REVERSE ? (int64_t)H * W : (int64_t)nh * ws * gw;
    const int64_t C = p.channels, total = p.batch * npos * C;
    unsigned short *map16 = (unsigned short *)(void *)(REVERSE ? p.dst : (float *)p.src);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = i % C, rest = i / C;
        const int pos = (int)(rest % npos);
        const int64_t b = rest / npos;
        const int y = pos / gw, x = pos - y * gw;
        const int64_t tok = window_token(b * (int64_t)nh * nw * ws * ws, y, x, ws, nw);
        const int64_t m = ((b * H + y) * W + x) * C + c;
        if (REVERSE) {
            map16[m] = mvrt_f32_to_h16<T16>(p.src[tok * C + c]);
        } else {
            p.dst[tok * C + c] = y < H && x < W ? mvrt_h16_to_f32<T16>(map16[m]) : 0.f;
        }
    }
}

/* The same with 8 channels per thread (C % 8 == 0, 16-byte aligned
 * pointers): one 16-byte load or store of 16-bit values and two of floats, and the
 * token of a (row, chunk) found with 32-bit arithmetic (the launcher
 * checks that batch * positions * C / 8 fits). The one-channel kernel
 * above spent its time in 64-bit divisions, 3 per element: MambaVision-T
 * at batch 256 moved its stage-3 maps (32 MB bf16 <-> 64 MB fp32) at
 * 0.15 ms per call on an H200, about 0.6 TB/s. */
template <bool REVERSE, int T16>
__global__ void __launch_bounds__(256) window_nhwc16_vec8_kernel(mvrt_window_params_t p)
{
    const int ws = p.window;
    const int H = (int)p.height, W = (int)p.width;
    const int nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    const int gw = REVERSE ? W : nw * ws;
    const unsigned npos = REVERSE ? (unsigned)(H * W) : (unsigned)(nh * ws * gw);
    const unsigned C8 = (unsigned)(p.channels / 8), total = (unsigned)p.batch * npos * C8;
    const unsigned tok_per_img = (unsigned)(nh * nw * ws * ws);
    uint4 *map16 = (uint4 *)(void *)(REVERSE ? p.dst : (float *)p.src);
    float4 *tok = (float4 *)(void *)(REVERSE ? (float *)p.src : p.dst);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const unsigned c8 = i % C8, row = i / C8;
        const unsigned b = row / npos, pos = row - b * npos;
        const int y = (int)(pos / (unsigned)gw), x = (int)(pos - (unsigned)y * (unsigned)gw);
        const int wh = y / ws, ww = x / ws;
        const unsigned t = b * tok_per_img + (unsigned)((wh * nw + ww) * ws * ws + (y - wh * ws) * ws + (x - ww * ws));
        const size_t tq = ((size_t)t * C8 + c8) * 2; /* float4 index of the token's chunk */
        if (REVERSE) {
            const float4 lo = tok[tq], hi = tok[tq + 1];
            map16[((size_t)(b * (unsigned)H + (unsigned)y) * (unsigned)W + (unsigned)x) * C8 + c8] =
                make_uint4(mvrt_h16x2<T16>(lo.x, lo.y), mvrt_h16x2<T16>(lo.z, lo.w), mvrt_h16x2<T16>(hi.x, hi.y),
                           mvrt_h16x2<T16>(hi.z, hi.w));
        } else {
            uint4 v = make_uint4(0u, 0u, 0u, 0u); /* padding positions: zeros */
            if (y < H && x < W) v = map16[((size_t)(b * (unsigned)H + (unsigned)y) * (unsigned)W + (unsigned)x) * C8 + c8];
            tok[tq] = make_float4(mvrt_h16_to_f32<T16>((unsigned short)v.x), mvrt_h16_to_f32<T16>((unsigned short)(v.x >> 16)),
                                  mvrt_h16_to_f32<T16>((unsigned short)v.y), mvrt_h16_to_f32<T16>((unsigned short)(v.y >> 16)));
            tok[tq + 1] = make_float4(mvrt_h16_to_f32<T16>((unsigned short)v.z), mvrt_h16_to_f32<T16>((unsigned short)(v.z >> 16)),
                                      mvrt_h16_to_f32<T16>((unsigned short)v.w), mvrt_h16_to_f32<T16>((unsigned short)(v.w >> 16)));
        }
    }
}
static inline bool window_vec8(const mvrt_window_params_t &p, int64_t npos)
{
    return p.channels % 8 == 0 && ((uintptr_t)p.src & 15u) == 0 && ((uintptr_t)p.dst & 15u) == 0 &&
           p.batch * npos * (p.channels / 8) < (int64_t)INT32_MAX && p.batch * p.height * p.width <= INT32_MAX;
}

/* The kernel's 32-bit positions: the padded grid of one image below 2^31
 * positions (the caller reports larger ones as unsupported). */
static inline bool window_fits(const mvrt_window_params_t &p)
{
    if (p.window <= 0 || p.height <= 0 || p.width <= 0) return true; /* nothing to do */
    const int64_t ws = p.window, hp = (p.height + ws - 1) / ws * ws, wp = (p.width + ws - 1) / ws * ws;
    return hp <= INT32_MAX / 2 && wp <= INT32_MAX / 2 && hp * wp <= INT32_MAX - 64;
}

/* The 16-bit map forms of type T16: 8 channels per thread where
 * window_vec8 holds, else one. */
template <int T16>
static inline void launch_window16(const mvrt_window_params_t &p, bool reverse, int64_t npos, mvrt_gpu_stream_t s)
{
    const bool vec8 = window_vec8(p, npos);
    const int64_t blocks = (p.batch * npos * (vec8 ? p.channels / 8 : p.channels) + 255) / 256;
    const unsigned grid = (unsigned)(blocks < 65535 * 16 ? blocks : 65535 * 16);
    if (vec8 && reverse) window_nhwc16_vec8_kernel<true, T16><<<grid, 256, 0, s>>>(p);
    else if (vec8) window_nhwc16_vec8_kernel<false, T16><<<grid, 256, 0, s>>>(p);
    else if (reverse) window_nhwc16_kernel<true, T16><<<grid, 256, 0, s>>>(p);
    else window_nhwc16_kernel<false, T16><<<grid, 256, 0, s>>>(p);
}

/* p must satisfy window_fits. */
static inline mvrt_gpu_error_t launch_window(const mvrt_window_params_t &p, bool reverse, mvrt_gpu_stream_t s)
{
    if (p.batch <= 0 || p.channels <= 0 || p.height <= 0 || p.width <= 0 || p.window <= 0) return MVRT_GPU_SUCCESS;
    const int64_t ws = p.window;
    const int64_t npos = reverse ? p.height * p.width : (p.height + ws - 1) / ws * ws * ((p.width + ws - 1) / ws * ws);
    const int64_t ctiles = (p.channels + 31) / 32;
    dim3 grid((unsigned)((npos + 31) / 32), (unsigned)(ctiles < 65535 ? ctiles : 65535),
              (unsigned)(p.batch < 65535 ? p.batch : 65535));
    if (p.map_nhwc16) {
        if (p.map_nhwc16 == MVRT_STORAGE16_F16) launch_window16<MVRT_STORAGE16_F16>(p, reverse, npos, s);
        else launch_window16<MVRT_STORAGE16_BF16>(p, reverse, npos, s);
        return mvrt_gpu_get_last_error();
    }
    dim3 block(32, 8);
    if (reverse) window_kernel<true><<<grid, block, 0, s>>>(p);
    else window_kernel<false><<<grid, block, 0, s>>>(p);
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
