/* GPU kernel of the per-channel affine + global average pool
 * (ops/common/mv_op_params.h), compiled by nvcc and by clang as HIP through
 * backends/gpu_common/mv_gpu_launch.cu.
 *
 * One warp (wavefront) per (batch, channel) row of `spatial` contiguous
 * floats: lanes read along the row (coalesced), the sum is reduced with
 * MVRT_SHFL_XOR over MVRT_WARP_SIZE lanes, lane 0 writes
 * scale * mean + shift. Rows in a grid-stride loop. */
#ifndef MVRT_OPS_POOL_GPU_CUH
#define MVRT_OPS_POOL_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include <stdint.h>

namespace mvrt_mv_gpu {

__global__ void __launch_bounds__(256) affine_avgpool_kernel(mvrt_affine_avgpool_params_t p)
{
    const int lane = threadIdx.x % MVRT_WARP_SIZE;
    const int wpb = blockDim.x / MVRT_WARP_SIZE;
    const int64_t rows = p.batch * p.channels;
    const float inv = 1.f / (float)p.spatial;
    for (int64_t row = (int64_t)blockIdx.x * wpb + threadIdx.x / MVRT_WARP_SIZE; row < rows;
         row += (int64_t)gridDim.x * wpb) {
        const float *x = p.x + row * p.spatial;
        float s0 = 0.f, s1 = 0.f; /* two chains: more loads in flight */
        int64_t i = lane;
        for (; i + MVRT_WARP_SIZE < p.spatial; i += 2 * MVRT_WARP_SIZE) {
            s0 += x[i];
            s1 += x[i + MVRT_WARP_SIZE];
        }
        if (i < p.spatial) s0 += x[i];
        float s = s0 + s1;
#pragma unroll
        for (int o = MVRT_WARP_SIZE / 2; o > 0; o /= 2) s += MVRT_SHFL_XOR(s, o, MVRT_WARP_SIZE);
        if (lane == 0) {
            const int64_t c = row % p.channels;
            p.y[row] = p.scale[c] * (s * inv) + p.shift[c];
        }
    }
}

/* The 16-bit NHWC form (p.x_nhwc16, of type T16): one thread per (image, channel),
 * walking the positions; neighbouring threads read neighbouring channels
 * (coalesced). */
template <int T16>
__global__ void __launch_bounds__(256) affine_avgpool_nhwc16_kernel(mvrt_affine_avgpool_params_t p)
{
    const unsigned short *x = (const unsigned short *)(const void *)p.x;
    const int64_t rows = p.batch * p.channels;
    const float inv = 1.f / (float)p.spatial;
    for (int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; row < rows;
         row += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = row / p.channels, c = row % p.channels;
        const unsigned short *xb = x + b * p.spatial * p.channels + c;
        float s0 = 0.f, s1 = 0.f;
        int64_t i = 0;
        for (; i + 1 < p.spatial; i += 2) {
            s0 += mvrt_h16_to_f32<T16>(xb[i * p.channels]);
            s1 += mvrt_h16_to_f32<T16>(xb[(i + 1) * p.channels]);
        }
        if (i < p.spatial) s0 += mvrt_h16_to_f32<T16>(xb[i * p.channels]);
        p.y[row] = p.scale[c] * ((s0 + s1) * inv) + p.shift[c];
    }
}

static inline mvrt_gpu_error_t launch_affine_avgpool(const mvrt_affine_avgpool_params_t &p, int warp_size,
                                                     mvrt_gpu_stream_t s)
{
    if (p.batch <= 0 || p.channels <= 0) return MVRT_GPU_SUCCESS;
    if (p.x_nhwc16) {
        const int64_t blocks = (p.batch * p.channels + 255) / 256;
        const unsigned grid = (unsigned)(blocks < 65535 * 16 ? blocks : 65535 * 16);
        if (p.x_nhwc16 == MVRT_STORAGE16_F16) affine_avgpool_nhwc16_kernel<MVRT_STORAGE16_F16><<<grid, 256, 0, s>>>(p);
        else affine_avgpool_nhwc16_kernel<MVRT_STORAGE16_BF16><<<grid, 256, 0, s>>>(p);
        return mvrt_gpu_get_last_error();
    }
    const int64_t wpb = 256 / warp_size;
    const int64_t blocks = (p.batch * p.channels + wpb - 1) / wpb;
    affine_avgpool_kernel<<<(unsigned)(blocks < 0x7fffffff ? blocks : 0x7fffffff), 256, 0, s>>>(p);
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
