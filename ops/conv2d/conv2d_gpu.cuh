/* GPU side of the 2-D convolution (ops/common/mv_op_params.h), compiled by
 * nvcc and by clang as HIP through backends/gpu_common/mv_gpu_launch.cu.
 *
 * A conv2d is im2col + one wide GEMM per chunk of images: the patch
 * matrices of the chunk's nb images sit side by side in the scratch,
 *     X_col (Cin*k*k, nb*Hout*Wout),  column img*Hout*Wout + sp,
 * so that
 *     T (Cout, nb*Hout*Wout) = W (Cout, Cin*k*k) . X_col
 * is a single well-shaped GEMM (cuBLAS on CUDA, our sgemm_kernel on HIP);
 * Cout is small in MambaVision (80..320), and a wide N keeps the GEMM
 * efficient (cuBLAS fp32: 47 TFLOP/s measured with ncu on an H100 for the
 * 160-channel convs of MambaVision-T at batch 256). T, channel-major, also lives in the scratch; a
 * gather kernel writes Y (nb, Cout, Hout*Wout) with the bias (per output
 * channel), the activation and the residual. A chunk of one image (batch
 * 1) needs no gather: T is that image's Y, and the GEMM writes it with
 * the bias, activation and residual in its epilogue. Chunks are sized so that
 * X_col + T fit MVRT_CONV_SCRATCH_CAP (one image at least), so the scratch
 * stays bounded at any batch (measured on an H100, MambaVision-T batch 256:
 * caps of 256 / 64 / 24 MiB give 81 / 82 / 94 ms per batch: large GEMMs win
 * over keeping X_col in L2); op_scratch_size reports chunk * per-image
 * bytes. A 1x1, stride-1, unpadded convolution needs no patch matrix: it is
 * one batched GEMM over X itself with the epilogue fused.
 *
 * Convolutions of few input channels (1..4, 3x3: an image stem) skip the
 * GEMM: with K = Cin * 9 <= 36 a GEMM tile would be mostly padding and the
 * patch matrix 9x the input (MambaVision's stem conv, 3 -> 32 channels at
 * 224x224, took 1.14 ms per batch of 256 on an H100 as im2col + GEMM).
 * conv_smallk_kernel computes them directly in fp32 (every math mode: it is
 * exact fp32 FMA, at least as accurate as any GEMM path). The same taps
 * gathered into mma.sync m16n8k16 fragments (16-bit operands, weights in
 * registers, the tile staged for 16-byte stores) were no faster: 3 -> 64
 * channels 0.75 -> 0.85 ms, 3 -> 32 0.36 -> 0.34 ms per batch of 256 on an
 * H200 (PERF_NOTES.md, session 35): the gathers, not the FMAs, bound it.
 * The 16-bit modes' stem (3 NCHW float channels at stride 2 into a 16-bit
 * NHWC map of 32 or 64 channels, ReLU or none) runs on sm_80+ code as
 * conv_stem_tc_kernel instead: the patches staged in shared memory once
 * per block and multiplied on TF32 tensor cores, 0.840 -> 0.319 ms for
 * MambaVision-B's stem at batch 256 (H200). Which stem kernel serves:
 *   16-bit NHWC out, 3 channels in, stride 2, 32 / 64 out, ReLU / none,
 *   sm_80+ code                                 -> conv_stem_tc_kernel
 *   other 3x3 convs of 1..4 input channels      -> conv_smallk_kernel
 *
 * This header holds the im2col kernel, the direct small-patch kernel and
 * the chunk planning (a pure function of the sizes, shared by the scratch
 * query and the run). */
#ifndef MVRT_OPS_CONV2D_GPU_CUH
#define MVRT_OPS_CONV2D_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include "../common/gpu_mma_tf32.cuh"
#include "../linear/linear_gpu.cuh" /* act_apply */
#include <stdint.h>

namespace mvrt_mv_gpu {

#define MVRT_CONV_SCRATCH_CAP ((int64_t)256 << 20)

/* conv_smallk_kernel takes 3x3 convs of 1..MVRT_CONV_SMALLK_CIN input
 * channels with images below 2^30 pixels (its 32-bit grid-stride position
 * loop stays below 2^31) */
#define MVRT_CONV_SMALLK_CIN 4
#define MVRT_CONV_SMALLK_CO 16 /* output channels per thread */
static inline bool conv2d_smallk(const mvrt_conv2d_params_t &p)
{
    return p.kernel == 3 && p.in_channels >= 1 && p.in_channels <= MVRT_CONV_SMALLK_CIN &&
           p.in_h * p.in_w <= INT32_MAX / 2 && p.out_h * p.out_w <= INT32_MAX / 2 && p.out_channels <= 65535 * 16;
}

struct conv2d_plan {
    int64_t kdim;      /* Cin * k * k: the GEMM's K */
    int64_t nsp;       /* Hout * Wout: the GEMM's N */
    int direct;        /* 1x1, stride 1, pad 0: no patch matrix */
    int smallk;        /* conv_smallk_kernel: no GEMM, no scratch */
    int64_t chunk;     /* images per GEMM */
    int64_t scratch;   /* bytes: X_col, then T, then (16-bit) W */
    int64_t col_bytes; /* X_col's size for a full chunk (T follows it) */
    int64_t t_bytes;   /* T's size for a full chunk (16-bit: W follows it) */
    /* 0, or the 16-bit type (MVRT_STORAGE16_*) of X_col and W (math bf16 /
     * fp16 with a vendor GEMM) */
    int t16;
};

/* t16: 0 (fp32 GEMMs) or the type of a 16-bit vendor GEMM's operands. */
static inline conv2d_plan make_conv2d_plan(const mvrt_conv2d_params_t &p, int t16)
{
    conv2d_plan c;
    c.t16 = 0;
    c.kdim = p.in_channels * p.kernel * p.kernel;
    c.nsp = p.out_h * p.out_w;
    c.direct = p.kernel == 1 && p.stride == 1 && p.pad == 0 && p.out_h == p.in_h && p.out_w == p.in_w;
    c.smallk = conv2d_smallk(p);
    if (c.direct || c.smallk || p.batch <= 0 || c.kdim <= 0 || c.nsp <= 0) {
        c.chunk = p.batch > 0 ? p.batch : 0;
        c.scratch = 0;
        c.col_bytes = c.t_bytes = 0;
        return c;
    }
    c.t16 = t16;
    const int64_t col_elem = t16 ? 2 : 4;
    const int64_t per_image = (c.kdim * col_elem + p.out_channels * 4) * c.nsp;
    int64_t chunk = MVRT_CONV_SCRATCH_CAP / per_image;
    if (chunk < 1) chunk = 1;
    if (chunk > p.batch) chunk = p.batch;
    if (chunk > 65535) chunk = 65535;
    c.chunk = chunk;
    c.col_bytes = (chunk * c.kdim * c.nsp * col_elem + 255) / 256 * 256;
    c.t_bytes = chunk * p.out_channels * c.nsp * 4;
    c.scratch = c.col_bytes + (c.t_bytes + 255) / 256 * 256 + (t16 ? p.out_channels * c.kdim * 2 : 0);
    return c;
}

/* col[kk * (nb * nsp) + img * nsp + sp] for images b0 .. b0 + nb - 1,
 * kk = (c*k + pi)*k + qi. One thread per (image, channel, output position)
 * writes the k*k patch rows of that channel (coalesced along sp), so the
 * position's (i, j) is found once per k*k elements. The row/column split
 * of sp avoids an integer division (slow on GPUs; the 64-bit one made this
 * kernel slower than the GEMM after it): i = sp * (1/out_w) in float, off
 * by at most one below 2^24 positions per image and corrected in any case.
 * 32-bit positions: the launcher declines images of 2^31 pixels or more. Grid: x over positions, y over channels, z over
 * images; all grid-stride. */
/* T16 0: float columns; else 16-bit ones of that type (MVRT_STORAGE16_*) */
template <int T16> static __device__ __forceinline__ auto col_value(float v)
{
    if constexpr (T16 == 0) return v;
    else return (uint16_t)mvrt_f32_to_h16<T16>(v);
}

template <typename T, int T16>
__global__ void __launch_bounds__(256) im2col_kernel(mvrt_conv2d_params_t p, int64_t b0, int64_t nb, T *col,
                                                     float inv_out_w)
{
    const int k = p.kernel, stride = p.stride, pad = p.pad;
    const int out_w = (int)p.out_w, in_h = (int)p.in_h, in_w = (int)p.in_w;
    const int nsp = (int)(p.out_h * p.out_w);
    const int64_t row = nb * (int64_t)nsp; /* leading dimension of col */
    for (int64_t img = blockIdx.z; img < nb; img += gridDim.z) {
        const float *ximg = p.x + (b0 + img) * p.in_channels * in_h * in_w;
        for (int64_t c = blockIdx.y; c < p.in_channels; c += gridDim.y) {
            const float *xc = ximg + c * in_h * in_w;
            T *cbase = col + c * k * k * row + img * nsp;
            for (int sp = blockIdx.x * blockDim.x + threadIdx.x; sp < nsp; sp += gridDim.x * blockDim.x) {
                int i = __float2int_rz((float)sp * inv_out_w);
                int j = sp - i * out_w;
                while (j < 0) { i--; j += out_w; }
                while (j >= out_w) { i++; j -= out_w; }
                const int y0 = i * stride - pad, x0 = j * stride - pad;
                T *dst = cbase + sp;
                for (int pi = 0; pi < k; pi++) {
                    const int yy = y0 + pi;
                    const bool yin = yy >= 0 && yy < in_h;
                    for (int qi = 0; qi < k; qi++) {
                        const int xx = x0 + qi;
                        *dst = col_value<T16>((yin && xx >= 0 && xx < in_w) ? xc[yy * in_w + xx] : 0.f);
                        dst += row;
                    }
                }
            }
        }
    }
}

/* col: floats, or 16-bit values of type c.t16 */
template <typename T>
static inline mvrt_gpu_error_t launch_im2col(const mvrt_conv2d_params_t &p, const conv2d_plan &c, int64_t b0,
                                             int64_t nb, T *col, mvrt_gpu_stream_t s)
{
    const int64_t bx = (c.nsp + 255) / 256;
    dim3 grid((unsigned)(bx < 4096 ? bx : 4096), (unsigned)(p.in_channels < 65535 ? p.in_channels : 65535),
              (unsigned)(nb < 65535 ? nb : 65535));
    if constexpr (sizeof(T) == 4)
        im2col_kernel<T, 0><<<grid, 256, 0, s>>>(p, b0, nb, col, 1.0f / (float)p.out_w);
    else if (c.t16 == MVRT_STORAGE16_F16)
        im2col_kernel<T, MVRT_STORAGE16_F16><<<grid, 256, 0, s>>>(p, b0, nb, col, 1.0f / (float)p.out_w);
    else
        im2col_kernel<T, MVRT_STORAGE16_BF16><<<grid, 256, 0, s>>>(p, b0, nb, col, 1.0f / (float)p.out_w);
    return mvrt_gpu_get_last_error();
}

/* One thread per output position of an image, for MVRT_CONV_SMALLK_CO
 * output channels (grid y: groups of them; grid z: images): the CIN * 9
 * inputs of the patch are loaded once into registers (zeros outside the
 * image), then each channel is bias + 9 CIN FMAs with the block's filter
 * rows read from shared memory as broadcasts, the activation and the
 * residual. Stores are coalesced along the positions of a channel. 32-bit
 * positions (conv2d_smallk checks). */
/* acc + the dot product of a filter row (KP floats as float4, shared
 * memory) with the patch v: the same sum order for both store forms. */
template <int KP>
static __device__ __forceinline__ float smallk_dot(const float4 *w4, const float *v, float acc)
{
#pragma unroll
    for (int r4 = 0; r4 < KP / 4; r4++) {
        const float4 w = w4[r4];
        acc = fmaf(w.x, v[4 * r4], acc);
        acc = fmaf(w.y, v[4 * r4 + 1], acc);
        acc = fmaf(w.z, v[4 * r4 + 2], acc);
        acc = fmaf(w.w, v[4 * r4 + 3], acc);
    }
    return acc;
}

/* NHWC16 (the 16-bit map form: y_nhwc16 with an NCHW float x, the
 * 3-channel stem; 0: NCHW floats): y and the residual are NHWC 16-bit of
 * that type, each thread's outputs are its pixel's nco neighbouring
 * channels. */
template <int CIN, int NHWC16>
__global__ void __launch_bounds__(256) conv_smallk_kernel(mvrt_conv2d_params_t p)
{
    /* filter rows padded to KP (a multiple of 4, zeros) and read as KP / 4
     * 16-byte shared loads instead of one load per FMA (alone this did not
     * move MambaVision-T's stem, 1.09 -> 1.11 ms on an H200: the NHWC
     * stores below were the limit; not measured apart since) */
    constexpr int KD = CIN * 9, KP = (KD + 3) / 4 * 4, CO = MVRT_CONV_SMALLK_CO;
    __shared__ float4 ws4[CO * KP / 4];
    __shared__ float bs[CO];
    float *ws = (float *)ws4;
    const int64_t co0 = (int64_t)blockIdx.y * CO;
    const int nco = p.out_channels - co0 < CO ? (int)(p.out_channels - co0) : CO;
    for (int i = threadIdx.x; i < CO * KP; i += blockDim.x) {
        const int o = i / KP, r = i - o * KP;
        ws[i] = o < nco && r < KD ? p.weight[(co0 + o) * KD + r] : 0.f;
    }
    if (threadIdx.x < CO) bs[threadIdx.x] = p.bias && (int)threadIdx.x < nco ? p.bias[co0 + threadIdx.x] : 0.f;
    __syncthreads();
    const int in_h = (int)p.in_h, in_w = (int)p.in_w, out_w = (int)p.out_w;
    const int nsp = (int)(p.out_h * p.out_w), stride = p.stride, pad = p.pad;
    for (int64_t img = blockIdx.z; img < p.batch; img += gridDim.z) {
        const float *x = p.x + img * CIN * (int64_t)in_h * in_w;
        const int64_t ybase = (img * p.out_channels + co0) * nsp;
        for (int sp = blockIdx.x * blockDim.x + threadIdx.x; sp < nsp; sp += gridDim.x * blockDim.x) {
            /* the filter rows are read from shared memory at every
             * position: without this barrier ptxas may hoist the loop-
             * invariant rows into registers (CO * KP of them) and spill
             * (it did for CIN 3 bf16 once the parameter struct grew by 16
             * bytes: 2.3 KB of spills per thread, MambaVision-B's stem
             * 0.76 -> 12 ms per batch of 256 on an H200, 2026-11-28) */
            asm volatile("" ::: "memory");
            const int i = sp / out_w, j = sp - i * out_w;
            const int y0 = i * stride - pad, x0 = j * stride - pad;
            float v[KP];
#pragma unroll
            for (int r = KD; r < KP; r++) v[r] = 0.f;
#pragma unroll
            for (int c = 0; c < CIN; c++)
#pragma unroll
                for (int pi = 0; pi < 3; pi++) {
                    const int yy = y0 + pi;
                    const bool yin = yy >= 0 && yy < in_h;
#pragma unroll
                    for (int qi = 0; qi < 3; qi++) {
                        const int xx = x0 + qi;
                        v[(c * 3 + pi) * 3 + qi] =
                            yin && xx >= 0 && xx < in_w ? x[((int64_t)c * in_h + yy) * in_w + xx] : 0.f;
                    }
                }
            const bool packed = NHWC16 != 0 && nco == CO && !p.residual && p.out_channels % 8 == 0;
            if constexpr (NHWC16 != 0) if (packed) {
                /* the pixel's CO channels as 2 * CO contiguous bytes, in
                 * 16-byte stores: one 2-byte store per channel (64 bytes
                 * apart across the warp) left the stem at 1.1 ms on an
                 * H200 (MambaVision-T, batch 256), bound by partial L2
                 * writes */
                unsigned pk[CO / 2];
#pragma unroll
                for (int o = 0; o < CO; o += 2) {
                    float a2[2];
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        a2[h] = act_apply(p.activation, smallk_dot<KP>(ws4 + (o + h) * (KP / 4), v, bs[o + h]));
                    pk[o / 2] = mvrt_h16x2<NHWC16>(a2[0], a2[1]);
                }
                uint4 *dst = (uint4 *)(void *)((unsigned short *)(void *)p.y + (img * nsp + sp) * p.out_channels + co0);
#pragma unroll
                for (int q = 0; q < CO / 8; q++) dst[q] = make_uint4(pk[4 * q], pk[4 * q + 1], pk[4 * q + 2], pk[4 * q + 3]);
                continue;
            }
#pragma unroll 4
            for (int o = 0; o < nco; o++) {
                float out = act_apply(p.activation, smallk_dot<KP>(ws4 + o * (KP / 4), v, bs[o]));
                if constexpr (NHWC16 != 0) {
                    const int64_t off = (img * nsp + sp) * p.out_channels + co0 + o;
                    if (p.residual) out += mvrt_h16_to_f32<NHWC16>(((const unsigned short *)(const void *)p.residual)[off]);
                    ((unsigned short *)(void *)p.y)[off] = mvrt_f32_to_h16<NHWC16>(out);
                } else {
                    const int64_t off = ybase + (int64_t)o * nsp + sp;
                    if (p.residual) out += p.residual[off];
                    p.y[off] = out;
                }
            }
        }
    }
}

template <int NHWC16>
static inline void launch_conv_smallk_form(const mvrt_conv2d_params_t &p, dim3 grid, mvrt_gpu_stream_t s)
{
    switch (p.in_channels) {
    case 1: conv_smallk_kernel<1, NHWC16><<<grid, 256, 0, s>>>(p); break;
    case 2: conv_smallk_kernel<2, NHWC16><<<grid, 256, 0, s>>>(p); break;
    case 3: conv_smallk_kernel<3, NHWC16><<<grid, 256, 0, s>>>(p); break;
    default: conv_smallk_kernel<4, NHWC16><<<grid, 256, 0, s>>>(p); break;
    }
}

static inline mvrt_gpu_error_t launch_conv_smallk(const mvrt_conv2d_params_t &p, mvrt_gpu_stream_t s)
{
    const int64_t nsp = p.out_h * p.out_w, bx = (nsp + 255) / 256;
    const dim3 grid((unsigned)(bx < 4096 ? bx : 4096), (unsigned)((p.out_channels + MVRT_CONV_SMALLK_CO - 1) / MVRT_CONV_SMALLK_CO),
                    (unsigned)(p.batch < 65535 ? p.batch : 65535));
    if (p.y_nhwc16 == MVRT_STORAGE16_F16) launch_conv_smallk_form<MVRT_STORAGE16_F16>(p, grid, s);
    else if (p.y_nhwc16) launch_conv_smallk_form<MVRT_STORAGE16_BF16>(p, grid, s);
    else launch_conv_smallk_form<0>(p, grid, s);
    return mvrt_gpu_get_last_error();
}

/* The 16-bit modes' stem on TF32 tensor cores (NVIDIA sm_80+): a 3x3,
 * stride-2 conv of 3 NCHW float input channels (an RGB image) into a
 * dense NHWC 16-bit map of 32 or 64 channels, with bias and ReLU or no
 * activation, no residual (conv_stem_tc_shape). A block stages the input
 * rows under STEM_TC_ROWS output rows x up to STEM_TC_COLS output columns
 * of one image in shared memory once (coalesced loads, all of a thread's
 * in flight together; each value rounded to TF32 there: 10 mantissa bits,
 * below the 16-bit output's own rounding), then each warp takes 16 output
 * positions at a time as the rows of m16n8k8 products: the patch's 27
 * taps (padded to 32 with zeros) read from shared memory against the
 * filters held in registers. The warp's 16 x Cout tile goes through
 * shared memory so that each position's channels leave as 16-byte stores.
 * Why: conv_smallk_kernel spends 27 FMAs and a shared filter load per
 * output value and re-gathers each patch once per 16 output channels;
 * MambaVision-B's stem (3 -> 64, 224 -> 112) took 0.425 ms per half batch
 * (128 images) on it, H200. The first form of this kernel took as long:
 * its per-element index divisions, runtime activation switch and software
 * rounding, not the loads or the products, set its time (a copy of it
 * without loads, products or stores still took 0.27 ms). This form: 0.165
 * ms per half batch (0.319 for 256 images against 0.840), same call. */
#define STEM_TC_ROWS 4
#define STEM_TC_COLS 128
#define STEM_TC_CIN 3
#define STEM_TC_IR ((STEM_TC_ROWS - 1) * 2 + 3) /* input rows staged (stride 2) */
#define STEM_TC_IW ((STEM_TC_COLS - 1) * 2 + 3) /* input columns staged at most */
#define STEM_TC_STAGE_WORDS 36 /* a position's 64 channels as 32 pairs + 4 (banks) */
static inline bool conv_stem_tc_shape(const mvrt_conv2d_params_t &p)
{
    return p.kernel == 3 && p.stride == 2 && p.pad >= 0 && p.pad <= 2 && p.in_channels == STEM_TC_CIN &&
           (p.out_channels == 32 || p.out_channels == 64) && !p.x_nhwc16 && p.y_nhwc16 && !p.residual &&
           (p.activation == MVRT_ACT_NONE || p.activation == MVRT_ACT_RELU) &&
           mvrt_conv2d_y_stored(&p) == p.out_channels && p.in_h <= INT32_MAX / 4 && p.in_w <= INT32_MAX / 4 &&
           p.out_h * p.out_w <= INT32_MAX / 2 && p.in_h * p.in_w <= INT32_MAX / 4 &&
           p.out_h <= 65535 * STEM_TC_ROWS && ((uintptr_t)p.y & 15u) == 0;
}

#if defined(MVRT_MMA_TF32_DEVICE)
#define MVRT_STEM_TC_DEVICE 1
/* two values rounded to the 16-bit type T16 in one word, lo first: the
 * pair conversion instruction (cvt.rn.bf16x2.f32 / f16x2), which this
 * sm_80+-only kernel can use; mvrt_h16x2 (gpu_vendor.h) rounds in
 * software because its callers also build for HIP and sm_75 */
template <int T16> static __device__ __forceinline__ unsigned stem_pack16(float lo, float hi)
{
    if constexpr (T16 == MVRT_STORAGE16_F16) {
        const __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<const unsigned *>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<const unsigned *>(&h);
    }
}
#endif

/* NT: output channels / 8 (4 or 8); RELU: ReLU, else no activation; T16
 * the map type */
template <int NT, bool RELU, int T16>
__global__ void __launch_bounds__(256, 2) conv_stem_tc_kernel(mvrt_conv2d_params_t p)
{
#if defined(MVRT_STEM_TC_DEVICE)
    constexpr int CIN = STEM_TC_CIN, IR = STEM_TC_IR, KD = CIN * 9, KS = (KD + 7) / 8;
    constexpr int RPT = (STEM_TC_IW + 255) / 256; /* columns per thread and row */
    __shared__ float xs[CIN * IR * STEM_TC_IW + 1]; /* + one zero for the padded taps */
    __shared__ __align__(16) unsigned stage[8][16][STEM_TC_STAGE_WORDS];
    __shared__ float bs[64];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const int pad = p.pad, in_h = (int)p.in_h, in_w = (int)p.in_w;
    const int out_h = (int)p.out_h, out_w = (int)p.out_w;
    const int ox0 = blockIdx.x * STEM_TC_COLS, oy0 = blockIdx.y * STEM_TC_ROWS;
    const int cw = out_w - ox0 < STEM_TC_COLS ? out_w - ox0 : STEM_TC_COLS;
    const int rows = out_h - oy0 < STEM_TC_ROWS ? out_h - oy0 : STEM_TC_ROWS;
    const int IW = (cw - 1) * 2 + 3, zero = CIN * IR * STEM_TC_IW;
    const int iy0 = oy0 * 2 - pad, ix0 = ox0 * 2 - pad;
    /* the shared-memory offset of each of the lane's taps (columns t and
     * t + 4 of each k-step) from a position's patch corner; the zero slot
     * (as a flag: -1) past K */
    int koff[KS][2];
#pragma unroll
    for (int ks = 0; ks < KS; ks++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int k = ks * 8 + t + 4 * h, c = k / 9, pi = (k % 9) / 3, qi = k % 3;
            koff[ks][h] = k < KD ? (c * IR + pi) * IW + qi : -1;
        }
    if (threadIdx.x < 64) bs[threadIdx.x] = p.bias && (int)threadIdx.x < NT * 8 ? p.bias[threadIdx.x] : 0.f;
    if (threadIdx.x == 0) xs[zero] = 0.f;
    const int npos = rows * cw, ntiles = (npos + 15) / 16;
    for (int64_t img = blockIdx.z; img < p.batch; img += gridDim.z) {
        const float *x = p.x + img * CIN * (int64_t)in_h * in_w;
        /* the CIN * IR rows, RPT columns per thread: every load of the
         * thread issued before the first shared store (rows past the
         * image, and past this block's last output row, read as zeros) */
        float v[CIN * IR][RPT];
#pragma unroll
        for (int cr = 0; cr < CIN * IR; cr++) {
            const int c = cr / IR, iy = iy0 + cr % IR;
            const bool yin = iy >= 0 && iy < in_h;
#pragma unroll
            for (int j = 0; j < RPT; j++) {
                const int q = threadIdx.x + 256 * j, ix = ix0 + q;
                v[cr][j] = yin && q < IW && ix >= 0 && ix < in_w ? x[((int64_t)c * in_h + iy) * in_w + ix] : 0.f;
            }
        }
#pragma unroll
        for (int cr = 0; cr < CIN * IR; cr++)
#pragma unroll
            for (int j = 0; j < RPT; j++) {
                const int q = threadIdx.x + 256 * j;
                if (q < IW) xs[cr * IW + q] = __uint_as_float(mma_round_tf32(v[cr][j]));
            }
        __syncthreads();
        /* the filters as B fragments (k = t, t + 4 of each k-step; n = g of
         * each n-tile), TF32-rounded, zeros past K: loaded after the
         * staging so that its registers are free again */
        uint32_t wb[KS][NT][2];
#pragma unroll
        for (int ks = 0; ks < KS; ks++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int k = ks * 8 + t + 4 * h;
                    wb[ks][nt][h] = k < KD ? mma_round_tf32(p.weight[(nt * 8 + g) * KD + k]) : 0u;
                }
        for (int mt = warp; mt < ntiles; mt += 8) {
            /* the patch corners of the lane's rows g and g + 8 (positions
             * past the tile read position 0's patch and are not stored) */
            int base[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int m = mt * 16 + g + 8 * h;
                if (m >= npos) m = 0;
                const int r = m / cw, c = m - r * cw;
                base[h] = 2 * (r * IW + c);
            }
            float acc[NT][4];
#pragma unroll
            for (int nt = 0; nt < NT; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                uint32_t a[4];
                a[0] = __float_as_uint(xs[koff[ks][0] >= 0 ? base[0] + koff[ks][0] : zero]);
                a[1] = __float_as_uint(xs[koff[ks][0] >= 0 ? base[1] + koff[ks][0] : zero]);
                a[2] = __float_as_uint(xs[koff[ks][1] >= 0 ? base[0] + koff[ks][1] : zero]);
                a[3] = __float_as_uint(xs[koff[ks][1] >= 0 ? base[1] + koff[ks][1] : zero]);
#pragma unroll
                for (int nt = 0; nt < NT; nt++) mma_tf32(acc[nt], a, wb[ks][nt][0], wb[ks][nt][1]);
            }
            /* C fragment: rows g, g + 8; channels nt * 8 + 2t, + 1 */
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const float b0 = bs[nt * 8 + 2 * t], b1 = bs[nt * 8 + 2 * t + 1];
                float o[4] = {acc[nt][0] + b0, acc[nt][1] + b1, acc[nt][2] + b0, acc[nt][3] + b1};
                if constexpr (RELU) {
#pragma unroll
                    for (int i = 0; i < 4; i++) o[i] = fmaxf(o[i], 0.f);
                }
                stage[warp][g][nt * 4 + t] = stem_pack16<T16>(o[0], o[1]);
                stage[warp][g + 8][nt * 4 + t] = stem_pack16<T16>(o[2], o[3]);
            }
            __syncwarp();
            /* 16 positions x NT 16-byte chunks */
#pragma unroll
            for (int i = 0; i < 16 * NT / 32; i++) {
                const int q = lane + 32 * i, row = q / NT, chunk = q % NT, m = mt * 16 + row;
                if (m < npos) {
                    const int r = m / cw, c = m - r * cw;
                    const int64_t pos = ((int64_t)img * out_h + oy0 + r) * out_w + ox0 + c;
                    const uint4 w4 = *reinterpret_cast<const uint4 *>(&stage[warp][row][chunk * 4]);
                    reinterpret_cast<uint4 *>((unsigned short *)(void *)p.y + pos * (NT * 8))[chunk] = w4;
                }
            }
            __syncwarp();
        }
        __syncthreads(); /* xs is restaged for the next image */
    }
#endif
}

template <int NT, int T16>
static inline void launch_conv_stem_tc_form(const mvrt_conv2d_params_t &p, dim3 grid, mvrt_gpu_stream_t s)
{
    if (p.activation == MVRT_ACT_RELU) conv_stem_tc_kernel<NT, true, T16><<<grid, 256, 0, s>>>(p);
    else conv_stem_tc_kernel<NT, false, T16><<<grid, 256, 0, s>>>(p);
}
/* The caller checked conv_stem_tc_shape and that the device runs sm_80+ code. */
static inline mvrt_gpu_error_t launch_conv_stem_tc(const mvrt_conv2d_params_t &p, mvrt_gpu_stream_t s)
{
    if (p.batch <= 0 || p.out_h <= 0 || p.out_w <= 0) return MVRT_GPU_SUCCESS;
    const dim3 grid((unsigned)((p.out_w + STEM_TC_COLS - 1) / STEM_TC_COLS),
                    (unsigned)((p.out_h + STEM_TC_ROWS - 1) / STEM_TC_ROWS), (unsigned)(p.batch < 65535 ? p.batch : 65535));
    const bool f16 = p.y_nhwc16 == MVRT_STORAGE16_F16;
    if (p.out_channels == 32) {
        if (f16) launch_conv_stem_tc_form<4, MVRT_STORAGE16_F16>(p, grid, s);
        else launch_conv_stem_tc_form<4, MVRT_STORAGE16_BF16>(p, grid, s);
    } else {
        if (f16) launch_conv_stem_tc_form<8, MVRT_STORAGE16_F16>(p, grid, s);
        else launch_conv_stem_tc_form<8, MVRT_STORAGE16_BF16>(p, grid, s);
    }
    return mvrt_gpu_get_last_error();
}

/* y[(b0 + img), co, sp] = act(T[co, img * nsp + sp] + bias[co]) + R[...]:
 * x over sp (coalesced on both sides), y over co, z over images. */
__global__ void __launch_bounds__(256) conv_gather_kernel(mvrt_conv2d_params_t p, int64_t b0, int64_t nb,
                                                          const float *T)
{
    const int64_t nsp = p.out_h * p.out_w, cout = p.out_channels;
    for (int64_t img = blockIdx.z; img < nb; img += gridDim.z)
        for (int64_t co = blockIdx.y; co < cout; co += gridDim.y) {
            const float *t = T + co * nb * nsp + img * nsp;
            const int64_t off = ((b0 + img) * cout + co) * nsp;
            float *y = p.y + off;
            const float *r = p.residual ? p.residual + off : nullptr;
            const float bias = p.bias ? p.bias[co] : 0.f;
            for (int64_t sp = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; sp < nsp;
                 sp += (int64_t)gridDim.x * blockDim.x) {
                float v = act_apply(p.activation, t[sp] + bias);
                if (r) v += r[sp];
                y[sp] = v;
            }
        }
}

/* conv_gather_kernel four positions at a time, for nsp % 4 == 0 and
 * 16-byte aligned T, y and residual. */
__global__ void __launch_bounds__(256) conv_gather_vec4_kernel(mvrt_conv2d_params_t p, int64_t b0, int64_t nb,
                                                               const float *T)
{
    const int64_t nsp = p.out_h * p.out_w, cout = p.out_channels, n4 = nsp / 4;
    for (int64_t img = blockIdx.z; img < nb; img += gridDim.z)
        for (int64_t co = blockIdx.y; co < cout; co += gridDim.y) {
            const float4 *t = (const float4 *)(T + co * nb * nsp + img * nsp);
            const int64_t off = ((b0 + img) * cout + co) * nsp;
            float4 *y = (float4 *)(p.y + off);
            const float4 *r = p.residual ? (const float4 *)(p.residual + off) : nullptr;
            const float bias = p.bias ? p.bias[co] : 0.f;
            for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
                float4 v = t[i];
                v.x = act_apply(p.activation, v.x + bias), v.y = act_apply(p.activation, v.y + bias);
                v.z = act_apply(p.activation, v.z + bias), v.w = act_apply(p.activation, v.w + bias);
                if (r) {
                    const float4 q = r[i];
                    v.x += q.x, v.y += q.y, v.z += q.z, v.w += q.w;
                }
                y[i] = v;
            }
        }
}

static inline mvrt_gpu_error_t launch_conv_gather(const mvrt_conv2d_params_t &p, const conv2d_plan &c, int64_t b0,
                                                  int64_t nb, const float *T, mvrt_gpu_stream_t s)
{
    if (c.nsp % 4 == 0 && ((uintptr_t)T & 15u) == 0 && ((uintptr_t)p.y & 15u) == 0 &&
        (!p.residual || ((uintptr_t)p.residual & 15u) == 0)) {
        const int64_t bx = (c.nsp / 4 + 255) / 256;
        dim3 grid((unsigned)(bx < 4096 ? bx : 4096), (unsigned)(p.out_channels < 65535 ? p.out_channels : 65535),
                  (unsigned)(nb < 65535 ? nb : 65535));
        conv_gather_vec4_kernel<<<grid, 256, 0, s>>>(p, b0, nb, T);
        return mvrt_gpu_get_last_error();
    }
    const int64_t bx = (c.nsp + 255) / 256;
    dim3 grid((unsigned)(bx < 4096 ? bx : 4096), (unsigned)(p.out_channels < 65535 ? p.out_channels : 65535),
              (unsigned)(nb < 65535 ? nb : 65535));
    conv_gather_kernel<<<grid, 256, 0, s>>>(p, b0, nb, T);
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
