/* GPU kernels of the window partition and reverse (ops/common/
 * mv_op_params.h), compiled by nvcc and by clang as HIP through
 * backends/gpu_common/mv_gpu_launch.cu.
 *
 * For one image row y, the map holds (C, W) with W contiguous and the
 * tokens of that row hold (W, C) with C contiguous (consecutive x inside a
 * window are consecutive tokens; the next window starts ws*ws tokens
 * later). Both directions are therefore a (C, W) <-> (W, C) transpose per
 * (image, row): 32 x 32 tiles through shared memory (rows padded to 33
 * floats), reads and writes coalesced. Partition walks the padded rows and
 * columns (Hp = nh*ws, Wp = nw*ws) and writes zeros outside the image;
 * reverse walks the image only (the padding tokens are dropped). */
#ifndef MVRT_OPS_WINDOW_GPU_CUH
#define MVRT_OPS_WINDOW_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include <stdint.h>

namespace mvrt_mv_gpu {

/* Block (32, 8). Grid: x = column tiles, y = channel tiles, z = rows of all
 * images (b * rows + y); y and z grid-stride. */
template <bool REVERSE>
__global__ void __launch_bounds__(256) window_kernel(mvrt_window_params_t p)
{
    __shared__ float tile[32][33];
    const int ws = p.window;
    const int64_t nh = (p.height + ws - 1) / ws, nw = (p.width + ws - 1) / ws;
    const int64_t rows = REVERSE ? p.height : nh * ws;
    const int64_t cols = REVERSE ? p.width : nw * ws;
    const int64_t C = p.channels;
    const int64_t x0 = (int64_t)blockIdx.x * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (int64_t by = blockIdx.z; by < p.batch * rows; by += gridDim.z)
    for (int64_t c0 = (int64_t)blockIdx.y * 32; c0 < C; c0 += (int64_t)gridDim.y * 32) {
        const int64_t b = by / rows, y = by - b * rows;
        const int64_t wh = y / ws, r = y - wh * ws;
        /* token row of (y, x) = tok0 + (x / ws) * ws*ws + x % ws */
        const int64_t tok0 = (b * nh + wh) * nw * ws * ws + r * ws;
        const float *map = REVERSE ? nullptr : p.src + b * C * p.height * p.width + y * p.width;
        float *mapo = REVERSE ? p.dst + b * C * p.height * p.width + y * p.width : nullptr;
        if (!REVERSE) {
            for (int i = ty; i < 32; i += 8) {
                const int64_t c = c0 + i, x = x0 + tx;
                tile[i][tx] = (c < C && x < p.width && y < p.height) ? map[c * p.height * p.width + x] : 0.f;
            }
            __syncthreads();
            for (int i = ty; i < 32; i += 8) {
                const int64_t x = x0 + i, c = c0 + tx;
                if (x < cols && c < C) {
                    const int64_t ww = x / ws;
                    p.dst[(tok0 + ww * ws * ws + (x - ww * ws)) * C + c] = tile[tx][i];
                }
            }
        } else {
            for (int i = ty; i < 32; i += 8) {
                const int64_t x = x0 + i, c = c0 + tx;
                if (x < cols && c < C) {
                    const int64_t ww = x / ws;
                    tile[tx][i] = p.src[(tok0 + ww * ws * ws + (x - ww * ws)) * C + c];
                }
            }
            __syncthreads();
            for (int i = ty; i < 32; i += 8) {
                const int64_t c = c0 + i, x = x0 + tx;
                if (c < C && x < cols) mapo[c * p.height * p.width + x] = tile[i][tx];
            }
        }
        __syncthreads(); /* the tile is refilled for the next (row, channel tile) */
    }
}

static inline mvrt_gpu_error_t launch_window(const mvrt_window_params_t &p, bool reverse, mvrt_gpu_stream_t s)
{
    if (p.batch <= 0 || p.channels <= 0 || p.height <= 0 || p.width <= 0 || p.window <= 0) return MVRT_GPU_SUCCESS;
    const int64_t ws = p.window;
    const int64_t rows = reverse ? p.height : (p.height + ws - 1) / ws * ws;
    const int64_t cols = reverse ? p.width : (p.width + ws - 1) / ws * ws;
    const int64_t ctiles = (p.channels + 31) / 32;
    const int64_t z = p.batch * rows;
    dim3 grid((unsigned)((cols + 31) / 32), (unsigned)(ctiles < 65535 ? ctiles : 65535), (unsigned)(z < 65535 ? z : 65535));
    dim3 block(32, 8);
    if (reverse) window_kernel<true><<<grid, block, 0, s>>>(p);
    else window_kernel<false><<<grid, block, 0, s>>>(p);
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
