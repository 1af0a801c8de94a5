/* GPU side of the 2-D convolution (ops/common/mv_op_params.h), compiled by
 * nvcc and by clang as HIP through backends/gpu_common/mv_gpu_launch.cu.
 *
 * A conv2d is im2col + GEMM: per image, the (Cin*k*k, Hout*Wout) patch
 * matrix X_col is written to the op's scratch, and
 *     Y_b (Cout, Hout*Wout) = W (Cout, Cin*k*k) . X_col_b
 * is one batched GEMM (cuBLAS on CUDA, our sgemm_kernel on HIP) whose
 * epilogue adds the bias (per row = output channel), the activation and the
 * residual. The images are processed in chunks whose patch matrices fit
 * MVRT_CONV_SCRATCH_CAP (one image at least), so the scratch stays bounded
 * at any batch; op_scratch_size reports chunk * per-image bytes. A 1x1,
 * stride-1, unpadded convolution needs no patch matrix: X itself is X_col.
 *
 * This header holds the im2col kernel and the chunk planning (a pure
 * function of the sizes, shared by the scratch query and the run). */
#ifndef MVRT_OPS_CONV2D_GPU_CUH
#define MVRT_OPS_CONV2D_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include <stdint.h>

namespace mvrt_mv_gpu {

#define MVRT_CONV_SCRATCH_CAP ((int64_t)256 << 20)

struct conv2d_plan {
    int64_t kdim;      /* Cin * k * k: the GEMM's K */
    int64_t nsp;       /* Hout * Wout: the GEMM's N */
    int direct;        /* 1x1, stride 1, pad 0: no patch matrix */
    int64_t chunk;     /* images per GEMM */
    int64_t scratch;   /* bytes */
};

static inline conv2d_plan make_conv2d_plan(const mvrt_conv2d_params_t &p)
{
    conv2d_plan c;
    c.kdim = p.in_channels * p.kernel * p.kernel;
    c.nsp = p.out_h * p.out_w;
    c.direct = p.kernel == 1 && p.stride == 1 && p.pad == 0 && p.out_h == p.in_h && p.out_w == p.in_w;
    if (c.direct || p.batch <= 0 || c.kdim <= 0 || c.nsp <= 0) {
        c.chunk = p.batch > 0 ? p.batch : 0;
        c.scratch = 0;
        return c;
    }
    const int64_t per_image = c.kdim * c.nsp * (int64_t)sizeof(float);
    int64_t chunk = MVRT_CONV_SCRATCH_CAP / per_image;
    if (chunk < 1) chunk = 1;
    if (chunk > p.batch) chunk = p.batch;
    if (chunk > 65535) chunk = 65535;
    c.chunk = chunk;
    c.scratch = chunk * per_image;
    return c;
}

/* col[(img, kk, sp)] for images b0 .. b0 + nb - 1: blockIdx.x/threadIdx.x
 * over output positions (coalesced stores), y over kk = (c*k + pi)*k + qi,
 * z over images; all grid-stride. */
__global__ void __launch_bounds__(256) im2col_kernel(mvrt_conv2d_params_t p, int64_t b0, int64_t nb, float *col)
{
    const int k = p.kernel;
    const int64_t kdim = p.in_channels * k * k;
    const int64_t nsp = p.out_h * p.out_w;
    for (int64_t img = blockIdx.z; img < nb; img += gridDim.z) {
        const float *x = p.x + (b0 + img) * p.in_channels * p.in_h * p.in_w;
        float *cimg = col + img * kdim * nsp;
        for (int64_t kk = blockIdx.y; kk < kdim; kk += gridDim.y) {
            const int64_t c = kk / (k * k);
            const int r = (int)(kk - c * k * k);
            const int pi = r / k, qi = r - pi * k;
            const float *xc = x + c * p.in_h * p.in_w;
            float *crow = cimg + kk * nsp;
            for (int64_t sp = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; sp < nsp; sp += (int64_t)gridDim.x * blockDim.x) {
                const int64_t i = sp / p.out_w, j = sp - i * p.out_w;
                const int64_t yy = i * p.stride + pi - p.pad, xx = j * p.stride + qi - p.pad;
                crow[sp] = (yy >= 0 && yy < p.in_h && xx >= 0 && xx < p.in_w) ? xc[yy * p.in_w + xx] : 0.f;
            }
        }
    }
}

static inline mvrt_gpu_error_t launch_im2col(const mvrt_conv2d_params_t &p, const conv2d_plan &c, int64_t b0,
                                             int64_t nb, float *col, mvrt_gpu_stream_t s)
{
    const int64_t bx = (c.nsp + 255) / 256;
    dim3 grid((unsigned)(bx < 4096 ? bx : 4096), (unsigned)(c.kdim < 65535 ? c.kdim : 65535),
              (unsigned)(nb < 65535 ? nb : 65535));
    im2col_kernel<<<grid, 256, 0, s>>>(p, b0, nb, col);
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
